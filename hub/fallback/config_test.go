package fallback_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/registry"
)

// TestConfigYAML: the documented toolhub.yaml sections parse into the
// typed configs.
func TestConfigYAML(t *testing.T) {
	const doc = `
cache:
  tools:
    weather.current: {ttl: 10m, stale_while_revalidate: 1m, keep_stale: 6h}
    calendar.next: {ttl: 1m, personal: true}
    image.generate: {no_cache: true}
fallback:
  degradation: {window: 2m, alert_error_rate: 0.3, recover_hold: 5m}
  capabilities:
    image.generate:
      policy: weighted
      weights: {sd/txt2img-v2: 5}
      queue: true
    payment.refund: {high_risk: true, core: true, policy: cheapest}
`
	var got struct {
		Cache    cache.Config    `yaml:"cache"`
		Fallback fallback.Config `yaml:"fallback"`
	}
	if err := yaml.Unmarshal([]byte(doc), &got); err != nil {
		t.Fatal(err)
	}
	d := func(x time.Duration) registry.Duration { return registry.Duration(x) }
	wantCache := cache.Config{Tools: map[string]cache.Policy{
		"weather.current": {TTL: d(10 * time.Minute), StaleWhileRevalidate: d(time.Minute), KeepStale: d(6 * time.Hour)},
		"calendar.next":   {TTL: d(time.Minute), Personal: true},
		"image.generate":  {NoCache: true},
	}}
	if diff := cmp.Diff(wantCache, got.Cache); diff != "" {
		t.Errorf("cache (-want +got):\n%s", diff)
	}
	wantFB := fallback.Config{
		Degradation: fallback.Thresholds{Window: d(2 * time.Minute), AlertErrorRate: 0.3, RecoverHold: d(5 * time.Minute)},
		Capabilities: map[string]fallback.CapabilityConfig{
			"image.generate": {Policy: fallback.Weighted, Weights: map[string]float64{"sd/txt2img-v2": 5}, Queue: true},
			"payment.refund": {Policy: fallback.Cheapest, HighRisk: true, Core: true},
		},
	}
	if diff := cmp.Diff(wantFB, got.Fallback); diff != "" {
		t.Errorf("fallback (-want +got):\n%s", diff)
	}
	m := fallback.NewModes(&fallback.ModesOptions{Config: got.Fallback})
	th := m.Thresholds("image.generate")
	if th.Window != d(2*time.Minute) || th.AlertErrorRate != 0.3 || th.DegradeErrorRate != fallback.DefaultThresholds.DegradeErrorRate || th.RecoverHold != d(5*time.Minute) {
		t.Errorf("effective thresholds %+v", th)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  fallback.CapabilityConfig
		want string
	}{
		{"ok", fallback.CapabilityConfig{Policy: fallback.Weighted, Weights: map[string]float64{"a/x": 5}}, ""},
		{"unknown policy", fallback.CapabilityConfig{Policy: "random"}, "unknown policy"},
		{"weights without weighted", fallback.CapabilityConfig{Weights: map[string]float64{"a/x": 5}}, "need policy: weighted"},
		{"over 100", fallback.CapabilityConfig{Policy: fallback.Weighted, Weights: map[string]float64{"a/x": 60, "b/y": 50}}, "over 100%"},
		{"bad step", fallback.CapabilityConfig{Policy: fallback.Weighted, Weights: map[string]float64{"ax": 5}}, `"vendor/tool"`},
		{"bad share", fallback.CapabilityConfig{Degradation: fallback.Thresholds{AlertShare: 2}}, "alert_share"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fallback.Config{Capabilities: map[string]fallback.CapabilityConfig{"c.x": tt.cfg}}.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if err := (cache.Config{Tools: map[string]cache.Policy{"x": {TTL: -1}}}).Validate(); err == nil {
		t.Fatal("negative ttl accepted")
	}
}
