package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/examples/vendors"
)

func TestKnobs(t *testing.T) {
	t.Setenv("TOOLHUB_EXAMPLE_WEATHER_A_MODE", "slow")
	t.Setenv("TOOLHUB_EXAMPLE_WEATHER_A_LATENCY", "1s")
	t.Setenv("TOOLHUB_EXAMPLE_WEATHER_A_TOOLS", "")
	t.Setenv("TOOLHUB_EXAMPLE_MAPS_MODE", "hang")

	got, err := knobs("weather-a", map[string]string{"latency": "200ms", "fail-rate": "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	want := vendors.Knobs{Mode: vendors.ModeSlow, Latency: 200 * time.Millisecond, FailRate: 0.5, Tools: []string{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env then flags (-want +got):\n%s", diff)
	}

	if _, err := knobs("weather-a", map[string]string{"retry-after": "later"}); err == nil {
		t.Error("a bad duration was accepted")
	}
}
