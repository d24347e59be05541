package mcpregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhub/toolhub/registry"
)

// MaxServerJSONBytes bounds one server.json.
const MaxServerJSONBytes = 64 << 10

// maxDepth bounds the nesting of a server.json (the schema's deepest
// path, packages → arguments → variables, is well under it).
const maxDepth = 16

// ServerJSON is a server.json: an MCP server's entry in a registry, with
// the fields of the published schema ([SchemaURL]).
type ServerJSON struct {
	Schema      string                     `json:"$schema"`
	Name        string                     `json:"name"`
	Description string                     `json:"description"`
	Title       string                     `json:"title,omitempty"`
	Repository  *Repository                `json:"repository,omitempty"`
	Version     string                     `json:"version"`
	WebsiteURL  string                     `json:"websiteUrl,omitempty"`
	Icons       []Icon                     `json:"icons,omitempty"`
	Packages    []Package                  `json:"packages,omitempty"`
	Remotes     []Transport                `json:"remotes,omitempty"`
	Meta        map[string]json.RawMessage `json:"_meta,omitempty"`
}

// Repository is where a server's source code is.
type Repository struct {
	URL       string `json:"url"`
	Source    string `json:"source"`
	ID        string `json:"id,omitempty"`
	Subfolder string `json:"subfolder,omitempty"`
}

// Icon is an icon a client may show.
type Icon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// Transport is how to reach a server: a remote (streamable-http, sse) or
// a package's transport (also stdio).
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []Input          `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value a client supplies: a header, an environment variable
// or a command-line argument (Type "positional" or "named").
type Input struct {
	Type        string           `json:"type,omitempty"`
	Name        string           `json:"name,omitempty"`
	Description string           `json:"description,omitempty"`
	IsRequired  bool             `json:"isRequired,omitempty"`
	Format      string           `json:"format,omitempty"`
	Value       string           `json:"value,omitempty"`
	IsSecret    bool             `json:"isSecret,omitempty"`
	Default     string           `json:"default,omitempty"`
	Placeholder string           `json:"placeholder,omitempty"`
	Choices     []string         `json:"choices,omitempty"`
	ValueHint   string           `json:"valueHint,omitempty"`
	IsRepeated  bool             `json:"isRepeated,omitempty"`
	Variables   map[string]Input `json:"variables,omitempty"`
}

// Package is a server distributed as a package that runs on the client's
// host.
type Package struct {
	RegistryType         string    `json:"registryType"`
	RegistryBaseURL      string    `json:"registryBaseUrl,omitempty"`
	Identifier           string    `json:"identifier"`
	Version              string    `json:"version,omitempty"`
	FileSha256           string    `json:"fileSha256,omitempty"`
	RuntimeHint          string    `json:"runtimeHint,omitempty"`
	Transport            Transport `json:"transport"`
	RuntimeArguments     []Input   `json:"runtimeArguments,omitempty"`
	PackageArguments     []Input   `json:"packageArguments,omitempty"`
	EnvironmentVariables []Input   `json:"environmentVariables,omitempty"`
}

// Remote transport types.
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
	TransportStdio          = "stdio"
)

// versionRangeRE matches what the registry refuses as a version: a range
// or "latest" rather than one specific version.
var versionRangeRE = regexp.MustCompile(`[\^~<>=*\s|]|(^|\.)[xX](\.|$)|^latest$`)

// Decode reads and checks a server.json: at most [MaxServerJSONBytes],
// one JSON object, $schema naming [SchemaURL], valid against that schema,
// and one specific version (no range). Every failure is a
// *ValidationError whose issues point into the document.
func Decode(b []byte) (*ServerJSON, error) {
	if len(b) > MaxServerJSONBytes {
		return nil, invalid("", "is %d bytes, over the %d-byte limit", len(b), MaxServerJSONBytes)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, invalid("", "is empty: send a server.json object")
	}
	if d := registry.JSONDepth(b); d > maxDepth {
		return nil, invalid("", "nests %d levels deep, over the limit of %d", d, maxDepth)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, invalid("", "is not valid JSON: %v", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, invalid("", "must be a JSON object")
	}
	switch s, _ := obj["$schema"].(string); {
	case s == "":
		return nil, invalid("/$schema", "is required: set it to %s", SchemaURL)
	case s != SchemaURL:
		return nil, invalid("/$schema", "%q is not the schema this hub validates against; use %s", s, SchemaURL)
	}
	if err := validateSchema(doc); err != nil {
		return nil, err
	}
	var sj ServerJSON
	if err := json.Unmarshal(b, &sj); err != nil {
		// The schema passed, so the shape is right; say what did not fit.
		return nil, invalid("", "%v", err)
	}
	if err := sj.check(); err != nil {
		return nil, err
	}
	return &sj, nil
}

// check adds what the registry checks beyond the schema.
func (s *ServerJSON) check() error {
	e := &ValidationError{}
	add := func(p, format string, args ...any) {
		e.Issues = append(e.Issues, Issue{Pointer: p, Message: fmt.Sprintf(format, args...)})
	}
	if s.Version == "" {
		add("/version", "is empty: give one specific version, like 1.0.2")
	} else if versionRangeRE.MatchString(s.Version) {
		add("/version", "%q is a range or a tag, not one specific version (like 1.0.2)", s.Version)
	}
	for i, r := range s.Remotes {
		if r.Type == TransportStdio {
			add(fmt.Sprintf("/remotes/%d/type", i), "a remote is streamable-http or sse, not stdio")
		}
	}
	for i, p := range s.Packages {
		if p.Version == "latest" || p.Version != "" && versionRangeRE.MatchString(p.Version) {
			add(fmt.Sprintf("/packages/%d/version", i), "%q is a range or a tag, not one specific version", p.Version)
		}
	}
	if len(e.Issues) > 0 {
		return e
	}
	return nil
}

// Listing is the document without its remotes and packages (how the
// server is reached through toolhub is toolhub's business; the vendor's
// own headers may carry secrets), as stored with the vendor's spec
// ([registry.Vendor.Listing]).
func (s *ServerJSON) Listing() json.RawMessage {
	c := *s
	c.Remotes, c.Packages = nil, nil
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	return b
}

// ParseListing reads a stored listing back.
func ParseListing(raw json.RawMessage) (*ServerJSON, error) {
	var s ServerJSON
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("mcpregistry: stored listing: %w", err)
	}
	return &s, nil
}

// VendorOptions say what a server.json may turn into. A nil *VendorOptions
// means the zero value.
type VendorOptions struct {
	// AllowStdio lets a server.json without remotes become a stdio vendor
	// from its first package (npm, pypi or oci with stdio transport);
	// false refuses packages.
	AllowStdio bool
}

// Vendor turns the document into the spec of vendor id: the first
// streamable-http remote, else the first sse one; without remotes, the
// first stdio package when opts allow stdio. toolhub connects with fixed
// values, so a URL with {variables} or a required header without a value
// is refused. The spec keeps the document's [ServerJSON.Listing].
func (s *ServerJSON) Vendor(id string, opts *VendorOptions) (registry.Vendor, error) {
	var o VendorOptions
	if opts != nil {
		o = *opts
	}
	v := registry.Vendor{ID: id, Name: s.Title, Listing: s.Listing()}
	if v.Name == "" {
		v.Name = s.Name[strings.IndexByte(s.Name, '/')+1:]
	}
	if i := pickRemote(s.Remotes); i >= 0 {
		spec, err := remoteSpec(s.Remotes[i], fmt.Sprintf("/remotes/%d", i))
		if err != nil {
			return v, err
		}
		v.MCP = spec
		return v, nil
	}
	if len(s.Packages) == 0 {
		return v, invalid("/remotes", "is empty: toolhub connects to a server's remote; give one of type streamable-http (or sse)")
	}
	if !o.AllowStdio {
		return v, invalid("/packages", "packages run on this host as local processes (stdio), which this hub does not take from the API "+
			"(admin.allow_stdio_vendors); publish a remote of type streamable-http or sse instead")
	}
	for i, p := range s.Packages {
		if p.Transport.Type != TransportStdio {
			continue
		}
		spec, err := packageSpec(p, fmt.Sprintf("/packages/%d", i))
		if err != nil {
			return v, err
		}
		v.MCP = spec
		return v, nil
	}
	return v, invalid("/packages", "no package has transport stdio, and there is no remote: give a remote of type streamable-http or sse")
}

// variableRE finds a registry {variable}: a brace not opening one of
// toolhub's own ${VAR} references.
var variableRE = regexp.MustCompile(`(^|[^$])\{`)

func hasVariables(s string) bool { return variableRE.MatchString(s) }

func pickRemote(rs []Transport) int {
	for _, want := range []string{TransportStreamableHTTP, TransportSSE} {
		for i, r := range rs {
			if r.Type == want {
				return i
			}
		}
	}
	return -1
}

func remoteSpec(r Transport, at string) (*registry.MCPSpec, error) {
	if hasVariables(r.URL) {
		return nil, invalid(at+"/url", "%q has {variables}: toolhub connects with one fixed URL, so publish it without variables", r.URL)
	}
	u, err := url.Parse(r.URL)
	if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return nil, invalid(at+"/url", "%q is not an http(s) URL with a host", r.URL)
	}
	spec := &registry.MCPSpec{Transport: registry.TransportHTTP, URL: r.URL}
	if r.Type == TransportSSE {
		spec.Transport = registry.TransportSSE
	}
	hs, err := values(r.Headers, at+"/headers", "header")
	if err != nil {
		return nil, err
	}
	if len(hs) > 0 {
		spec.Headers = hs
	}
	return spec, nil
}

// values maps inputs with fixed values to name → value; an input with
// {variables}, or a required one without a value, is refused.
func values(in []Input, at, what string) (map[string]string, error) {
	out := map[string]string{}
	for i, h := range in {
		p := fmt.Sprintf("%s/%d", at, i)
		v := h.Value
		if v == "" {
			v = h.Default
		}
		switch {
		case hasVariables(v):
			return nil, invalid(p+"/value", "%s %q has {variables}, which toolhub cannot fill in: give the value (a secret as ${VENDOR_…}, which an operator sets)", what, h.Name)
		case v == "" && h.IsRequired:
			return nil, invalid(p, "%s %q is required but has no value, and toolhub cannot ask for one: give its value (a secret as ${VENDOR_…}, which an operator sets)", what, h.Name)
		case v == "":
			continue
		}
		out[h.Name] = v
	}
	return out, nil
}

func packageSpec(p Package, at string) (*registry.MCPSpec, error) {
	if p.Version == "" && p.RegistryType != "oci" {
		return nil, invalid(at+"/version", "is empty: toolhub runs one specific version of a package")
	}
	if len(p.RuntimeArguments) > 0 {
		return nil, invalid(at+"/runtimeArguments", "are not supported: toolhub runs a package with its registry's default runtime")
	}
	spec := &registry.MCPSpec{Transport: registry.TransportStdio}
	switch p.RegistryType {
	case "npm":
		spec.Command, spec.Args = "npx", []string{"-y", p.Identifier + "@" + p.Version}
	case "pypi":
		spec.Command, spec.Args = "uvx", []string{p.Identifier + "==" + p.Version}
	case "oci":
		spec.Command, spec.Args = "docker", []string{"run", "-i", "--rm", p.Identifier}
	default:
		return nil, invalid(at+"/registryType", "%q packages are not run by toolhub (npm, pypi and oci are)", p.RegistryType)
	}
	env, err := values(p.EnvironmentVariables, at+"/environmentVariables", "environment variable")
	if err != nil {
		return nil, err
	}
	if len(env) > 0 {
		spec.Env = env
	}
	for i, a := range p.PackageArguments {
		ap := fmt.Sprintf("%s/packageArguments/%d", at, i)
		v := a.Value
		if v == "" {
			v = a.Default
		}
		if hasVariables(v) {
			return nil, invalid(ap+"/value", "has {variables}, which toolhub cannot fill in: give the value")
		}
		switch a.Type {
		case "named":
			spec.Args = append(spec.Args, a.Name)
			if v != "" {
				spec.Args = append(spec.Args, v)
			}
		default: // positional
			if v == "" {
				if a.IsRequired {
					return nil, invalid(ap, "positional argument %q has no value, and toolhub cannot ask for one: give its value", a.ValueHint)
				}
				continue
			}
			spec.Args = append(spec.Args, v)
		}
	}
	return spec, nil
}

// Official is the registry-managed metadata of a server entry.
type Official struct {
	Status          string    `json:"status"` // active, deprecated, deleted
	StatusChangedAt time.Time `json:"statusChangedAt"`
	PublishedAt     time.Time `json:"publishedAt"`
	UpdatedAt       time.Time `json:"updatedAt,omitzero"`
	IsLatest        bool      `json:"isLatest"`
}

// OfficialMetaKey is the _meta key of [Official].
const OfficialMetaKey = "io.modelcontextprotocol.registry/official"

// ResponseMeta is a server entry's registry-managed _meta.
type ResponseMeta struct {
	Official *Official `json:"io.modelcontextprotocol.registry/official,omitempty"`
}

// ServerResponse is one server entry of the read API.
type ServerResponse struct {
	Server ServerJSON   `json:"server"`
	Meta   ResponseMeta `json:"_meta"`
}

// ServerList is a page of server entries.
type ServerList struct {
	Servers  []ServerResponse `json:"servers"`
	Metadata Metadata         `json:"metadata"`
}

// Metadata is a page's pagination metadata.
type Metadata struct {
	NextCursor string `json:"nextCursor,omitempty"`
	Count      int    `json:"count"`
}
