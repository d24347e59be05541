package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/mcpregistry"
)

// registryHub is a front door with the registry API over vendors a..e
// (one tool each) and "secret", which tenant acme may not see. The
// X-Test-Principal header says who calls: "acme", "vendor:<id>" or
// "operator".
type registryHub struct {
	ts    *httptest.Server
	mu    sync.Mutex
	specs map[string]registry.Vendor
	pub   []registry.Vendor // what Publish was given
}

func newRegistryHub(t *testing.T) *registryHub {
	t.Helper()
	cat := registry.NewCatalog()
	obj := json.RawMessage(`{"type":"object"}`)
	for _, v := range []string{"a-maps", "b-weather", "c-image", "d-news", "e-mail", "secret"} {
		cat.SetVendorTools(v, []registry.ToolDef{{Name: "do", Description: "does " + v, InputSchema: obj}})
	}
	h := &registryHub{specs: map[string]registry.Vendor{}}
	gw := hub.NewGateway(cat, upstreams{}, &hub.Options{Visible: func(tenant string, e registry.Entry) bool {
		return tenant != "acme" || !strings.HasPrefix(e.Name, "secret__")
	}})
	s := NewServer(gw, &Options{
		Authenticate: func(r *http.Request) (auth.Principal, error) {
			who := r.Header.Get("X-Test-Principal")
			switch {
			case who == "operator":
				return auth.Principal{Role: auth.RoleOperator, Tenant: DefaultTenant}, nil
			case strings.HasPrefix(who, "vendor:"):
				return auth.Principal{Role: auth.RoleVendor, Vendor: strings.TrimPrefix(who, "vendor:")}, nil
			}
			return auth.Principal{Role: auth.RoleTenant, Tenant: "acme"}, nil
		},
		Registry: &RegistryOptions{
			AuthHeader: true,
			Vendor: func(_ context.Context, id string) (RegistryVendor, bool) {
				h.mu.Lock()
				defer h.mu.Unlock()
				v, ok := h.specs[id]
				return RegistryVendor{Spec: v, Version: "2.0.0"}, ok
			},
			Publish: func(_ context.Context, spec registry.Vendor, create bool) (VendorChange, error) {
				h.mu.Lock()
				defer h.mu.Unlock()
				if _, ok := h.specs[spec.ID]; ok == create {
					return VendorChange{}, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("create=%v for %s", create, spec.ID)}
				}
				if spec.MCP.URL == "https://refused.example/mcp" {
					return VendorChange{}, &hub.Error{Code: hub.CodeForbidden, Message: "vendor url: host refused.example is not allowed"}
				}
				h.specs[spec.ID] = spec
				h.pub = append(h.pub, spec)
				cat.SetVendorTools(spec.ID, []registry.ToolDef{{Name: "do", InputSchema: obj}})
				return VendorChange{Vendor: spec.ID, Status: "live"}, nil
			},
		},
	})
	t.Cleanup(func() { s.Close() })
	h.ts = httptest.NewServer(s)
	t.Cleanup(h.ts.Close)
	return h
}

func (h *registryHub) do(t *testing.T, who, method, path, body string, into any) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, h.ts.URL+path, strings.NewReader(body))
	req.Header.Set("X-Test-Principal", who)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, string(b)
}

func names(l mcpregistry.ServerList) []string {
	var out []string
	for _, e := range l.Servers {
		out = append(out, e.Server.Name)
	}
	return out
}

func TestRegistryList(t *testing.T) {
	h := newRegistryHub(t)
	var all mcpregistry.ServerList
	if code, body := h.do(t, "acme", "GET", "/v0.1/servers", "", &all); code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	want := []string{"local.toolhub/a-maps", "local.toolhub/b-weather", "local.toolhub/c-image", "local.toolhub/d-news", "local.toolhub/e-mail"}
	if diff := cmp.Diff(want, names(all)); diff != "" {
		t.Fatalf("acme's servers (-want +got), without the hidden vendor:\n%s", diff)
	}
	if all.Metadata.Count != 5 || all.Metadata.NextCursor != "" {
		t.Errorf("metadata %+v", all.Metadata)
	}
	for _, e := range all.Servers {
		// Each entry is a valid server.json of the current schema.
		b, _ := json.Marshal(e.Server)
		if _, err := mcpregistry.Decode(b); err != nil {
			t.Errorf("%s: %v", e.Server.Name, err)
		}
		id := strings.TrimPrefix(e.Server.Name, "local.toolhub/")
		wantRemote := []mcpregistry.Transport{{Type: "streamable-http", URL: h.ts.URL + "/mcp/vendors/" + id,
			Headers: []mcpregistry.Input{{Name: "Authorization", Description: "Bearer followed by your toolhub API key", IsRequired: true, IsSecret: true}}}}
		if diff := cmp.Diff(wantRemote, e.Server.Remotes); diff != "" {
			t.Errorf("%s remotes (-want +got):\n%s", id, diff)
		}
		if o := e.Meta.Official; o == nil || !o.IsLatest || o.Status != "active" {
			t.Errorf("%s _meta %+v", id, o)
		}
	}
	var op mcpregistry.ServerList
	h.do(t, "operator", "GET", "/v0.1/servers", "", &op)
	if len(op.Servers) != 6 {
		t.Errorf("an unrestricted tenant sees %v", names(op))
	}

	// Pages of two follow the cursor to the end, in the same order.
	var paged []string
	cursor := ""
	for i := 0; i < 10; i++ {
		var page mcpregistry.ServerList
		h.do(t, "acme", "GET", "/v0.1/servers?limit=2&cursor="+url.QueryEscape(cursor), "", &page)
		if len(page.Servers) > 2 || page.Metadata.Count != len(page.Servers) {
			t.Fatalf("page %+v", page.Metadata)
		}
		paged = append(paged, names(page)...)
		if cursor = page.Metadata.NextCursor; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff(want, paged); diff != "" {
		t.Errorf("paged (-want +got):\n%s", diff)
	}

	var found mcpregistry.ServerList
	h.do(t, "acme", "GET", "/v0.1/servers?search=WEATH&version=latest", "", &found)
	if diff := cmp.Diff([]string{"local.toolhub/b-weather"}, names(found)); diff != "" {
		t.Errorf("search (-want +got):\n%s", diff)
	}
	h.do(t, "acme", "GET", "/v0.1/servers?search=secret", "", &found)
	if len(found.Servers) != 0 {
		t.Errorf("search finds a hidden vendor: %v", names(found))
	}
}

func TestRegistryListErrors(t *testing.T) {
	h := newRegistryHub(t)
	for _, tt := range []struct {
		query  string
		status int
		says   string
	}{
		{"limit=0", 422, "expected number >= 1 and <= 100"},
		{"limit=101", 422, "query.limit"},
		{"limit=ten", 422, "expected integer"},
		{"search=ab", 422, "at least 3 characters"},
		{"updated_since=yesterday", 400, "RFC3339"},
		{"include_deleted=maybe", 422, "expected boolean"},
	} {
		code, body := h.do(t, "acme", "GET", "/v0.1/servers?"+tt.query, "", nil)
		var p problem
		json.Unmarshal([]byte(body), &p)
		if code != tt.status || p.Status != tt.status || p.Title != http.StatusText(tt.status) || !strings.Contains(body, tt.says) {
			t.Errorf("%s: %d %s; want %d saying %q", tt.query, code, body, tt.status, tt.says)
		}
	}
}

func TestRegistryVersions(t *testing.T) {
	h := newRegistryHub(t)
	for _, name := range []string{"local.toolhub%2Fb-weather", "local.toolhub/b-weather"} {
		var l mcpregistry.ServerList
		if code, body := h.do(t, "acme", "GET", "/v0.1/servers/"+name+"/versions", "", &l); code != 200 || len(l.Servers) != 1 || l.Servers[0].Server.Version != "0.0.0" {
			t.Errorf("%s versions: %d %s", name, code, body)
		}
		for _, v := range []string{"latest", "0.0.0"} {
			var e mcpregistry.ServerResponse
			if code, body := h.do(t, "acme", "GET", "/v0.1/servers/"+name+"/versions/"+v, "", &e); code != 200 || e.Server.Name != "local.toolhub/b-weather" {
				t.Errorf("%s version %s: %d %s", name, v, code, body)
			}
		}
	}
	for _, path := range []string{
		"/v0.1/servers/local.toolhub%2Fsecret/versions", // hidden from acme
		"/v0.1/servers/local.toolhub%2Fsecret/versions/latest",
		"/v0.1/servers/local.toolhub%2Fb-weather/versions/9.9.9",
		"/v0.1/servers/local.toolhub%2Fnobody/versions",
	} {
		if code, body := h.do(t, "acme", "GET", path, "", nil); code != 404 || !strings.Contains(body, "Server not found") {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	if code, _ := h.do(t, "operator", "GET", "/v0.1/servers/local.toolhub%2Fsecret/versions", "", nil); code != 200 {
		t.Errorf("the operator's tenant does not find secret: %d", code)
	}
}

const publishDoc = `{"$schema":"https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
 "name":"io.github.acme/Weather_Pro","title":"Weather Pro","description":"Forecasts","version":"1.0.0",
 "remotes":[{"type":"streamable-http","url":"https://mcp.acme.example/mcp"}]}`

func TestRegistryPublish(t *testing.T) {
	h := newRegistryHub(t)
	var out struct {
		mcpregistry.ServerResponse
		Toolhub VendorChange `json:"toolhub"`
	}
	if code, body := h.do(t, "operator", "POST", "/v0.1/publish", publishDoc, &out); code != 200 {
		t.Fatalf("publish: %d %s", code, body)
	}
	if out.Toolhub.Vendor != "weather-pro" || out.Toolhub.Status != "live" || out.Server.Name != "io.github.acme/Weather_Pro" ||
		out.Server.Remotes[0].URL != h.ts.URL+"/mcp/vendors/weather-pro" || out.Server.Version != "1.0.0" || out.Server.Title != "Weather Pro" {
		t.Errorf("published %+v", out)
	}
	if got := h.pub[0].MCP; got.Transport != "http" || got.URL != "https://mcp.acme.example/mcp" {
		t.Errorf("registered %+v", got)
	}
	// The listing shows the vendor under its own name and version.
	var e mcpregistry.ServerResponse
	if code, body := h.do(t, "acme", "GET", "/v0.1/servers/io.github.acme%2FWeather_Pro/versions/latest", "", &e); code != 200 || e.Server.Version != "1.0.0" {
		t.Errorf("published entry: %d %s", code, body)
	}
	// A new version updates the vendor; the same version again is refused.
	if code, body := h.do(t, "operator", "POST", "/v0.1/publish", strings.Replace(publishDoc, `"1.0.0"`, `"1.1.0"`, 1), nil); code != 200 {
		t.Errorf("new version: %d %s", code, body)
	}
	tests := []struct {
		name, who, path, doc string
		status               int
		says                 string
	}{
		{"duplicate version", "operator", "/v0.1/publish", strings.Replace(publishDoc, `"1.0.0"`, `"1.1.0"`, 1), 400, "cannot publish duplicate version"},
		{"another server under the same id", "operator", "/v0.1/publish", strings.Replace(publishDoc, "io.github.acme/", "io.github.other/", 1), 409, `is server \"io.github.acme/Weather_Pro\", not \"io.github.other/Weather_Pro\"`},
		{"a vendor registered otherwise", "operator", "/v0.1/publish?vendor=a-maps", strings.Replace(publishDoc, "acme/", "x/", 1), 409, "PUT /v1/vendors/a-maps"},
		{"bad id", "operator", "/v0.1/publish?vendor=Bad_ID", publishDoc, 400, "give ?vendor=<id>"},
		{"a vendor key for another vendor", "vendor:vz", "/v0.1/publish?vendor=other", publishDoc, 400, "only its own vendor"},
		{"a tenant key", "acme", "/v0.1/publish", publishDoc, 403, "vendor or operator key"},
		{"bad schema", "operator", "/v0.1/publish", strings.Replace(publishDoc, `"name":"io.github.acme/Weather_Pro"`, `"name":"weather"`, 1), 400, `"location":"body.name"`},
		{"no $schema", "operator", "/v0.1/publish", strings.Replace(publishDoc, `"$schema"`, `"schema"`, 1), 400, `"location":"body.$schema"`},
		{"URL variables", "operator", "/v0.1/publish", strings.Replace(publishDoc, "mcp.acme", "{region}.acme", 1), 400, `"location":"body.remotes[0].url"`},
		{"packages only", "operator", "/v0.1/publish", strings.Replace(publishDoc, `"remotes":[{"type":"streamable-http","url":"https://mcp.acme.example/mcp"}]`,
			`"packages":[{"registryType":"npm","identifier":"w","version":"1.0.0","transport":{"type":"stdio"}}]`, 1), 400, "allow_stdio_vendors"},
		{"not JSON", "operator", "/v0.1/publish", `{"name":`, 400, "not valid JSON"},
		{"the registration refuses", "vendor:vz", "/v0.1/publish", strings.Replace(publishDoc, "mcp.acme.example", "refused.example", 1), 403, "host refused.example is not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := h.do(t, tt.who, "POST", tt.path, tt.doc, nil)
			if code != tt.status || !strings.Contains(body, tt.says) {
				t.Errorf("%d %s; want %d saying %q", code, body, tt.status, tt.says)
			}
		})
	}
	if len(h.pub) != 2 {
		t.Errorf("%d registrations, want 2", len(h.pub))
	}
}
