package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/registry"
)

// A relayed request (resources/read, prompts/get) runs through the call
// middlewares for its budget, but is never cached, even under a default
// policy: its params are not arguments, so every read would share a key.
func TestRelayedRequestsAreNotCached(t *testing.T) {
	f := newFixture(t, cache.Config{Default: cache.Policy{TTL: registry.Duration(time.Hour)}}, nil)
	for _, uri := range []string{"mem://a", "mem://b", "mem://a"} {
		r, err := f.gw.Relay(context.Background(), "weather-a", &hub.Call{Method: "resources/read", Params: uri})
		if err != nil {
			t.Fatal(err)
		}
		if r.Provenance.Cached {
			t.Fatalf("read of %s answered from the cache", uri)
		}
	}
	if got := f.calls.Load(); got != 3 {
		t.Errorf("%d reads reached the vendor, want 3", got)
	}
}
