package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub/httperr"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/mcpregistry"
)

// RegistryOptions configure the MCP Registry API: toolhub's catalog served
// as a sub-registry (the registry's v0.1 read API) and vendor registration
// by publishing a server.json.
//
//	GET  /v0.1/servers                                   ?search= &cursor= &limit= &version= &updated_since=
//	GET  /v0.1/servers/{serverName}/versions
//	GET  /v0.1/servers/{serverName}/versions/{version}   (or latest)
//	POST /v0.1/publish                                   a server.json (vendor or operator key)
//
// A tenant key sees the vendors it may call one tool of; each is a server
// entry whose only remote is its /mcp/vendors/{id} endpoint on toolhub.
type RegistryOptions struct {
	// Namespace names the entries of vendors registered otherwise than by
	// a server.json: "<Namespace>/<vendor id>". "" means "local.toolhub".
	Namespace string
	// URL is toolhub's public base URL, put in the entries' remotes; ""
	// means the request's scheme and Host.
	URL string
	// AuthHeader says the remotes need an Authorization header (a bearer
	// toolhub key): true when authentication is on.
	AuthHeader bool
	// Vendor returns what the registry shows of a vendor besides its
	// tools; nil, or false, means its id alone.
	Vendor func(ctx context.Context, id string) (RegistryVendor, bool)
	// Publish registers or updates a vendor as [Admin.RegisterVendor]
	// does, with every check of a registration; nil answers publishing
	// with 404.
	Publish func(ctx context.Context, spec registry.Vendor, create bool) (VendorChange, error)
	// AllowStdio reports whether a server.json with packages only may
	// become a stdio vendor (the registration refuses it otherwise too);
	// nil means no.
	AllowStdio func() bool
}

// RegistryVendor is what the registry API shows of a vendor.
type RegistryVendor struct {
	Spec registry.Vendor
	// Version is the entry's version when the spec has no listing (for
	// example the version the vendor's MCP server reports); "" means
	// "0.0.0".
	Version string
	// PublishedAt is when the vendor first went live, UpdatedAt when it
	// last changed.
	PublishedAt, UpdatedAt time.Time
}

// Registry API bounds, as the official registry's.
const (
	registryDefaultLimit = 30
	registryMaxLimit     = 100
	registryMinSearch    = 3
)

func (s *Server) registryRoutes() {
	o := s.opts.Registry
	if o == nil {
		return
	}
	s.mux.Handle("GET /v0.1/servers", callers(http.HandlerFunc(s.registryList)))
	s.mux.Handle("GET /v0.1/servers/{rest...}", callers(http.HandlerFunc(s.registryServer)))
	if o.Publish != nil {
		s.mux.Handle("POST /v0.1/publish", Require(http.HandlerFunc(s.registryPublish), auth.RoleVendor, auth.RoleOperator))
	}
}

// problem answers in the registry's error format (RFC 9457 problem
// details, as the official registry gives them).
type problem struct {
	Title  string         `json:"title"`
	Status int            `json:"status"`
	Detail string         `json:"detail,omitempty"`
	Errors []problemIssue `json:"errors,omitempty"`
}

type problemIssue struct {
	Message  string `json:"message"`
	Location string `json:"location,omitempty"`
	Value    any    `json:"value,omitempty"`
}

func writeProblem(w http.ResponseWriter, status int, detail string, issues ...problemIssue) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(problem{Title: http.StatusText(status), Status: status, Detail: detail, Errors: issues})
}

// registryEntries returns the entries tenant may see, by name.
func (s *Server) registryEntries(r *http.Request) []mcpregistry.ServerResponse {
	tenant := TenantFrom(r.Context())
	var out []mcpregistry.ServerResponse
	for _, id := range s.cat.Vendors() {
		if !s.vendorVisible(tenant, id) {
			continue
		}
		out = append(out, s.registryEntry(r, id))
	}
	slices.SortFunc(out, func(a, b mcpregistry.ServerResponse) int {
		return cmp.Or(strings.Compare(a.Server.Name, b.Server.Name), strings.Compare(a.Server.Version, b.Server.Version))
	})
	return out
}

// registryEntry is vendor id as a server entry.
func (s *Server) registryEntry(r *http.Request, id string) mcpregistry.ServerResponse {
	o := s.opts.Registry
	rv := RegistryVendor{Spec: registry.Vendor{ID: id}}
	if o.Vendor != nil {
		if v, ok := o.Vendor(r.Context(), id); ok {
			rv = v
		}
	}
	var sj mcpregistry.ServerJSON
	if len(rv.Spec.Listing) > 0 {
		if l, err := mcpregistry.ParseListing(rv.Spec.Listing); err == nil {
			sj = *l
		}
	}
	if sj.Name == "" {
		sj = mcpregistry.ServerJSON{
			Name:        cmp.Or(o.Namespace, "local.toolhub") + "/" + id,
			Title:       clipRunes(rv.Spec.DisplayName(), 100),
			Description: clipRunes(fmt.Sprintf("%s through toolhub: %d tools", rv.Spec.DisplayName(), len(s.cat.VendorTools(id))), 100),
			Version:     cmp.Or(rv.Version, "0.0.0"),
		}
	}
	sj.Schema = mcpregistry.SchemaURL
	sj.Packages = nil
	remote := mcpregistry.Transport{Type: mcpregistry.TransportStreamableHTTP, URL: s.registryBase(r) + "/mcp/vendors/" + id}
	if o.AuthHeader {
		remote.Headers = []mcpregistry.Input{{Name: "Authorization", Description: "Bearer followed by your toolhub API key",
			IsRequired: true, IsSecret: true}}
	}
	sj.Remotes = []mcpregistry.Transport{remote}
	published := rv.PublishedAt
	if published.IsZero() {
		published = rv.UpdatedAt
	}
	return mcpregistry.ServerResponse{Server: sj, Meta: mcpregistry.ResponseMeta{Official: &mcpregistry.Official{
		Status: "active", StatusChangedAt: published.UTC(), PublishedAt: published.UTC(), UpdatedAt: rv.UpdatedAt.UTC(), IsLatest: true}}}
}

func (s *Server) registryBase(r *http.Request) string {
	if u := strings.TrimSuffix(s.opts.Registry.URL, "/"); u != "" {
		return u
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func (s *Server) registryList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := registryDefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			writeProblem(w, http.StatusUnprocessableEntity, "validation failed", problemIssue{Message: "expected integer", Location: "query.limit", Value: v})
			return
		case n < 1 || n > registryMaxLimit:
			msg := fmt.Sprintf("expected number >= 1 and <= %d", registryMaxLimit)
			writeProblem(w, http.StatusUnprocessableEntity, "validation failed", problemIssue{Message: msg, Location: "query.limit", Value: n})
			return
		}
		limit = n
	}
	search := q.Get("search")
	if search != "" && utf8.RuneCountInString(strings.TrimSpace(search)) < registryMinSearch {
		writeProblem(w, http.StatusUnprocessableEntity, fmt.Sprintf("search must contain at least %d characters after trimming surrounding whitespace", registryMinSearch))
		return
	}
	var since time.Time
	if v := q.Get("updated_since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, "Invalid updated_since format: expected RFC3339 timestamp (e.g., 2025-08-07T13:15:04.280Z)")
			return
		}
		since = t
	}
	if v := q.Get("include_deleted"); v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			writeProblem(w, http.StatusUnprocessableEntity, "validation failed", problemIssue{Message: "expected boolean", Location: "query.include_deleted", Value: v})
			return
		}
	}
	version, cursor := q.Get("version"), q.Get("cursor")
	needle := strings.ToLower(search)
	page := make([]mcpregistry.ServerResponse, 0, min(limit, 16))
	next := ""
	for _, e := range s.registryEntries(r) {
		switch {
		case needle != "" && !strings.Contains(strings.ToLower(e.Server.Name), needle),
			version != "" && version != "latest" && e.Server.Version != version,
			!since.IsZero() && e.Meta.Official.UpdatedAt.Before(since),
			cursor != "" && !afterCursor(e, cursor):
			continue
		}
		if len(page) == limit {
			next = registryCursor(page[len(page)-1])
			break
		}
		page = append(page, e)
	}
	writeJSON(w, http.StatusOK, mcpregistry.ServerList{Servers: page, Metadata: mcpregistry.Metadata{NextCursor: next, Count: len(page)}})
}

// registryCursor is the entry's place in the list, as the registry's
// cursors are: "name:version" (names hold no ":").
func registryCursor(e mcpregistry.ServerResponse) string {
	return e.Server.Name + ":" + e.Server.Version
}

// afterCursor reports whether e comes after the cursor in the list's order
// (by name, then version).
func afterCursor(e mcpregistry.ServerResponse, cursor string) bool {
	name, version, _ := strings.Cut(cursor, ":")
	return cmp.Or(strings.Compare(e.Server.Name, name), strings.Compare(e.Server.Version, version)) > 0
}

// registryServer serves /v0.1/servers/{serverName}/versions[/{version}];
// the name may come URL-encoded (io.github.a%2Fweather, as the registry
// documents) or with its slash as it is.
func (s *Server) registryServer(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/v0.1/servers/")
	var rawName, rawVersion string
	switch {
	case strings.HasSuffix(rest, "/versions"):
		rawName = strings.TrimSuffix(rest, "/versions")
	case strings.LastIndex(rest, "/versions/") > 0:
		i := strings.LastIndex(rest, "/versions/")
		rawName, rawVersion = rest[:i], rest[i+len("/versions/"):]
		if rawVersion == "" || strings.Contains(rawVersion, "/") {
			writeProblem(w, http.StatusNotFound, "no route GET "+r.URL.Path+"; see /v0.1/servers/{serverName}/versions/{version}")
			return
		}
	default:
		writeProblem(w, http.StatusNotFound, "no route GET "+r.URL.Path+"; see /v0.1/servers/{serverName}/versions")
		return
	}
	name, err1 := url.PathUnescape(rawName)
	version, err2 := url.PathUnescape(rawVersion)
	if err := errors.Join(err1, err2); err != nil {
		writeProblem(w, http.StatusBadRequest, "Invalid server name or version encoding")
		return
	}
	var found []mcpregistry.ServerResponse
	for _, e := range s.registryEntries(r) {
		if e.Server.Name == name && (rawVersion == "" || version == "latest" && e.Meta.Official.IsLatest || e.Server.Version == version) {
			found = append(found, e)
		}
	}
	switch {
	case len(found) == 0:
		writeProblem(w, http.StatusNotFound, "Server not found")
	case rawVersion == "":
		writeJSON(w, http.StatusOK, mcpregistry.ServerList{Servers: found, Metadata: mcpregistry.Metadata{Count: len(found)}})
	default:
		writeJSON(w, http.StatusOK, found[0])
	}
}

var notVendorID = regexp.MustCompile(`[^a-z0-9-]+`)

// registryVendorID is the vendor a published server.json is: a vendor
// key's own; else ?vendor=; else the server name's last part, lowercased
// with other characters as "-".
func registryVendorID(r *http.Request, name string) (string, error) {
	p := PrincipalFrom(r.Context())
	id := r.URL.Query().Get("vendor")
	if p.Role == auth.RoleVendor {
		if id != "" && id != p.Vendor {
			return "", fmt.Errorf("a vendor key publishes only its own vendor (%q), not %q", p.Vendor, id)
		}
		return p.Vendor, nil
	}
	if id == "" {
		id = strings.Trim(notVendorID.ReplaceAllString(strings.ToLower(name[strings.IndexByte(name, '/')+1:]), "-"), "-")
	}
	if err := registry.ValidateVendorID(id); err != nil {
		return "", fmt.Errorf("vendor id %q from server name %q: %v; give ?vendor=<id>", id, name, err)
	}
	return id, nil
}

func (s *Server) registryPublish(w http.ResponseWriter, r *http.Request) {
	o := s.opts.Registry
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	doc, err := mcpregistry.Decode(body)
	if err != nil {
		writeDocError(w, err)
		return
	}
	id, err := registryVendorID(r, doc.Name)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	// A vendor in force, or one with tools in the catalog, is updated
	// only by a newer version of the same server.
	var cur RegistryVendor
	exists := len(s.cat.VendorTools(id)) > 0
	if o.Vendor != nil {
		if v, ok := o.Vendor(r.Context(), id); ok {
			cur, exists = v, true
		}
	}
	create := !exists
	if exists {
		old, _ := mcpregistry.ParseListing(cur.Spec.Listing)
		switch {
		case old == nil || len(cur.Spec.Listing) == 0:
			writeProblem(w, http.StatusConflict, fmt.Sprintf("vendor %q was registered otherwise than by a server.json; update it with PUT /v1/vendors/%s, or publish under another id (?vendor=)", id, id))
			return
		case old.Name != doc.Name:
			writeProblem(w, http.StatusConflict, fmt.Sprintf("vendor %q is server %q, not %q; publish under another id (?vendor=)", id, old.Name, doc.Name))
			return
		case old.Version == doc.Version:
			writeProblem(w, http.StatusBadRequest, fmt.Sprintf("cannot publish duplicate version: %s %s is published; give the new version a new version string", doc.Name, doc.Version))
			return
		}
	}
	spec, err := doc.Vendor(id, &mcpregistry.VendorOptions{AllowStdio: o.AllowStdio != nil && o.AllowStdio()})
	if err != nil {
		writeDocError(w, err)
		return
	}
	change, err := o.Publish(r.Context(), spec, create)
	if err != nil {
		b := httperr.BodyOf(httperr.WithLogger(r.Context(), s.log), err, "")
		writeProblem(w, httperr.Status(b.Code), b.Message)
		return
	}
	status := http.StatusOK
	if change.Status == "pending_approval" {
		status = http.StatusAccepted
	}
	writeJSON(w, status, registryPublished{ServerResponse: s.registryEntry(r, id), Change: change})
}

// registryPublished answers a publish: the entry as toolhub lists it, and
// what became of the registration (live or waiting for an operator).
type registryPublished struct {
	mcpregistry.ServerResponse
	Change VendorChange `json:"toolhub"`
}

// writeDocError answers a bad server.json: 400 with one error per issue,
// located as the registry locates them (body.remotes[0].url).
func writeDocError(w http.ResponseWriter, err error) {
	var ve *mcpregistry.ValidationError
	if !errors.As(err, &ve) {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	issues := make([]problemIssue, len(ve.Issues))
	for i, is := range ve.Issues {
		issues[i] = problemIssue{Message: is.Message, Location: bodyLocation(is.Pointer)}
	}
	writeProblem(w, http.StatusBadRequest, ve.Error(), issues...)
}

// bodyLocation turns a JSON pointer into the registry's location form.
func bodyLocation(ptr string) string {
	var b strings.Builder
	b.WriteString("body")
	if ptr == "" {
		return b.String()
	}
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
		} else {
			b.WriteString("." + seg)
		}
	}
	return b.String()
}
