package config

import (
	"strings"
	"testing"
	"time"
)

// TestQueuePolicy: a capability's queue is a bool or {deadline: …}.
func TestQueuePolicy(t *testing.T) {
	c, err := Parse([]byte(`
jobs: {deadline: 20m}
fallback:
  capabilities:
    image.generate: {queue: {deadline: 30m}, policy: ordered}
    weather.current: {queue: true}
    maps.route: {queue: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	caps := c.Fallback.Capabilities
	if !caps["image.generate"].Queue || caps["image.generate"].QueueDeadline.D() != 30*time.Minute || caps["image.generate"].Policy != "ordered" {
		t.Errorf("image.generate: %+v", caps["image.generate"])
	}
	if !caps["weather.current"].Queue || caps["weather.current"].QueueDeadline != 0 {
		t.Errorf("weather.current: %+v", caps["weather.current"])
	}
	if caps["maps.route"].Queue {
		t.Errorf("maps.route: %+v", caps["maps.route"])
	}
	if c.Jobs.Deadline.D() != 20*time.Minute {
		t.Errorf("jobs.deadline = %v", c.Jobs.Deadline.D())
	}
	for _, tt := range []struct{ yaml, want string }{
		{`fallback: {capabilities: {a.b: {queue: {deadline: soon}}}}`, `duration "soon"`},
		{`fallback: {capabilities: {a.b: {queue: {deadlin: 5m}}}}`, `unknown key "deadlin"`},
		{`fallback: {capabilities: {a.b: {queue: {deadline: 0s}}}}`, `want a positive duration`},
		{`fallback: {capabilities: {a.b: {queue: [1]}}}`, `want true, false or {deadline: 15m}`},
		{`jobs: {deadline: -1m}`, `must not be negative`},
	} {
		if _, err := Parse([]byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.yaml, err, tt.want)
		}
	}
}
