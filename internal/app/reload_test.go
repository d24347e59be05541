package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/internal/config"
)

func TestCheckReload(t *testing.T) {
	const base = "auth: {enabled: true}\ntenants: [{id: acme}]\n"
	tests := []struct {
		name, yaml string
		restart    []string // keys named as needing a restart
		refused    string   // "" when the reload is taken
	}{
		{"nothing changed", base, nil, ""},
		{"reloadable keys", base + "outbound: {deny: [10.0.0.0/8]}\nbilling: {budgets: [{tenant: acme, period: day, limit: \"1\"}]}\ngovernance: {timeouts: {simple: 2s}}\ncache: {tools: {a.b: {ttl: 1m}}}\nprivacy: {rules: {x: \"y\"}}\n", nil, ""},
		{"auth", "tenants: [{id: acme}]\n", []string{"auth"}, "auth changed"},
		{"nested keys", base + "billing: {currency: EUR}\ngovernance: {retry: {max: 1}}\n", []string{"governance.retry", "billing.currency"}, "governance.retry, billing.currency changed"},
		{"restart-only keys", base + "addr: 127.0.0.1:9999\ndata: /elsewhere\nmax_body_bytes: 2048\njobs: {workers: 9}\n", []string{"addr", "data", "max_body_bytes", "jobs.workers"}, "restart"},
		{"reloadable job and deadline keys", base + "jobs: {deadline: 30m, webhooks: [{tenant: acme, url: \"https://h.example/x\", secret: s}]}\ngovernance: {deadlines: {simple: 3s}}\n", nil, ""},
		{"every tenant dropped", "auth: {enabled: true}\n", nil, "declares no tenants"},
	}
	old := parse(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parse(t, tt.yaml)
			if diff := cmp.Diff(tt.restart, restartKeys(old, c)); diff != "" {
				t.Errorf("restart keys (-want +got):\n%s", diff)
			}
			err := checkReload(old, c)
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.refused != "" && (!errors.Is(err, ErrReloadRefused) || !strings.Contains(err.Error(), tt.refused)):
				t.Errorf("err = %v, want %q", err, tt.refused)
			}
		})
	}
	if err := checkReload(nil, &config.Config{}); err != nil {
		t.Errorf("the first config: %v", err)
	}
}
