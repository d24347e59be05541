package orchestrator

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDefaultRules(t *testing.T) {
	r, err := compileRules(DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	integ := func(ids ...string) Step { return Step{ID: IntegrateTool, Tool: IntegrateTool, DependsOn: ids} }
	tests := []struct {
		goal string
		want []Step
	}{
		{"What's the weather in Paris?", []Step{{ID: "weather", Tool: "weather.current", Arguments: map[string]any{"city": "Paris"}, Retries: 1}}},
		{"temperature in New York tomorrow", []Step{{ID: "weather", Tool: "weather.current", Arguments: map[string]any{"city": "New York"}, Retries: 1}}},
		{"directions from Louvre to Orsay", []Step{{ID: "route", Tool: "maps.route", Arguments: map[string]any{"from": "Louvre", "to": "Orsay"}, Retries: 1}}},
		{"restaurants near Shibuya", []Step{{ID: "restaurants", Tool: "places.restaurants", Arguments: map[string]any{"near": "Shibuya"}, Retries: 1}}},
		{"draw a cat on a skateboard", []Step{{ID: "image", Tool: "image.generate", Arguments: map[string]any{"prompt": "a cat on a skateboard"}}}},
		{"plan a trip from Paris to Lyon: weather, route and restaurants", []Step{
			{ID: "weather", Tool: "weather.current", Arguments: map[string]any{"city": "Lyon"}, Retries: 1},
			{ID: "route", Tool: "maps.route", Arguments: map[string]any{"from": "Paris", "to": "Lyon"}, Retries: 1},
			{ID: "restaurants", Tool: "places.restaurants", Arguments: map[string]any{"near": "Lyon"}, Retries: 1},
			integ("weather", "route", "restaurants"),
		}},
		{"weekend trip to Rome: weather and food", []Step{
			{ID: "weather", Tool: "weather.current", Arguments: map[string]any{"city": "Rome"}, Retries: 1},
			{ID: "restaurants", Tool: "places.restaurants", Arguments: map[string]any{"near": "Rome"}, Retries: 1},
			integ("weather", "restaurants"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.goal, func(t *testing.T) {
			p, err := r.plan(tt.goal)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, p.Steps, cmpopts.IgnoreFields(Step{}, "OnFailure")); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	for _, goal := range []string{"tell me a joke", "what's the weather like?"} {
		if _, err := r.plan(goal); !errors.Is(err, ErrNoIntent) || !strings.Contains(err.Error(), "known intents: weather, route, restaurants, image") {
			t.Errorf("%q: %v, want no intent", goal, err)
		}
	}
}

func TestRulesConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		r    Rules
		want string
	}{
		{Rules{Intents: []Intent{{Name: "a", Tool: "t", Pattern: "("}}}, "intent a: error parsing regexp"},
		{Rules{Intents: []Intent{{Name: "a", Tool: "t"}, {Name: "a", Tool: "t"}}}, `intent name "a" must be unique`},
		{Rules{Intents: []Intent{{Name: "a"}}}, `intent "a": tool is required`},
		{Rules{Context: []string{"(?P<x"}}, "context[0]"},
	} {
		if _, err := compileRules(tt.r); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.r, err, tt.want)
		}
	}
}
