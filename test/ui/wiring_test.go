package ui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// TestAppMountsDashboard checks the dashboard as internal/app mounts it
// with authentication on: the page and its files are public, the
// decision log needs an operator key, and the data APIs keep their keys.
func TestAppMountsDashboard(t *testing.T) {
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: `
auth: {enabled: true}
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    probe: {disabled: true}
tenants:
  - {id: acme}
`})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keys := map[string]string{}
	for name, k := range map[string]auth.Key{
		"operator": {Role: auth.RoleOperator},
		"finance":  {Role: auth.RoleFinance},
		"acme":     {Role: auth.RoleTenant, Tenant: "acme"},
	} {
		tok, _, err := auth.Issue(t.Context(), l.App.Keys, k, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = tok
	}
	do := func(method, path, key, body string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, l.HubURL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+keys[key])
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}

	for _, p := range []string{"/ui/", "/ui/app.js", "/ui/app.css"} {
		if code, body, _ := do("GET", p, "", ""); code != http.StatusOK {
			t.Errorf("GET %s without a key: %d %s, want 200 (the page must load before it can ask for a key)", p, code, body)
		}
	}
	if code, _, h := do("GET", "/ui", "", ""); code/100 != 3 || h.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d to %q, want a redirect to /ui/", code, h.Get("Location"))
	}
	for _, tt := range []struct {
		method, path, key string
		want              int
	}{
		{"GET", "/ui/api/decisions", "", http.StatusUnauthorized},
		{"GET", "/ui/api/decisions", "finance", http.StatusForbidden},
		{"GET", "/ui/api/decisions", "acme", http.StatusForbidden},
		{"POST", "/ui/", "", http.StatusUnauthorized}, // only GET and HEAD are public
		{"GET", "/ui/../v1/vendors", "", http.StatusUnauthorized},
		{"GET", "/ui//api/decisions", "", http.StatusUnauthorized},
		{"GET", "/v1/vendors", "", http.StatusUnauthorized},
		{"GET", "/v1/vendors", "finance", http.StatusForbidden},
		{"GET", "/v1/vendors", "operator", http.StatusOK},
		{"GET", "/v1/reports/usage?format=json", "finance", http.StatusOK},
	} {
		if code, body, _ := do(tt.method, tt.path, tt.key, ""); code != tt.want {
			t.Errorf("%s %s with key %q: %d %s, want %d", tt.method, tt.path, tt.key, code, body, tt.want)
		}
	}

	if code, body, _ := do("POST", "/v1/tools/weather-a__current_weather/call", "acme", `{"arguments":{"city":"Oslo"}}`); code != http.StatusOK {
		t.Fatalf("call: %d %s", code, body)
	}
	code, body, _ := do("GET", "/ui/api/decisions", "operator", "")
	if code != http.StatusOK {
		t.Fatalf("decisions with an operator key: %d %s", code, body)
	}
	var d struct {
		Decisions []struct {
			Msg, Tenant, Tool, Vendor, Outcome string
		} `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Decisions) != 1 || d.Decisions[0].Tenant != "acme" || d.Decisions[0].Tool != "weather-a__current_weather" || d.Decisions[0].Outcome != "ok" {
		t.Errorf("decisions after one call: %+v", d.Decisions)
	}
}
