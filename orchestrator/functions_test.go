package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

func names(fs []registry.FunctionTool) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Function.Name)
	}
	return out
}

func TestFunctions(t *testing.T) {
	tools := map[string]tool{
		"wx/current|Current weather and temperature for a city": echo,
		"maps/route|A route between two places":                 echo,
		"places/search|Restaurants near a place":                echo,
		"secret/admin|Restaurants admin":                        echo,
	}
	h := newTestHub(t, tools, &hub.Options{Visible: func(tenant string, e registry.Entry) bool {
		return tenant == "root" || e.Tool == nil || e.Tool.Vendor != "secret"
	}})
	tests := []struct {
		name, tenant, goal string
		n                  int
		want               []string
	}{
		{"all in catalog order", "t", "", 0, []string{"maps__route", "places__search", "wx__current"}},
		{"visibility", "root", "", 0, []string{"maps__route", "places__search", "secret__admin", "wx__current"}},
		{"most relevant", "t", "find a restaurant near the Louvre", 1, []string{"places__search"}},
		{"ranked then ties in catalog order", "t", "temperature in Paris", 2, []string{"wx__current", "maps__route"}},
		{"several words", "t", "weather and route between Paris and Lyon", 3, []string{"maps__route", "wx__current", "places__search"}},
		{"n over size", "t", "weather", 10, []string{"wx__current", "maps__route", "places__search"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(Functions(h.Catalog(), h.Gateway, tt.tenant, tt.goal, tt.n))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
