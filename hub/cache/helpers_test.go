package cache_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/x/redistest"
	"github.com/toolhub/toolhub/registry"

	"github.com/toolhub/toolhub/internal/x/clocktest"
)

// clock is a settable clock (internal/x/clocktest).
type clock = clocktest.Clock

func newClock() *clock { return clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// upstreams is an in-process hub.Upstreams.
type upstreams map[string]hub.InvokerFunc

func (u upstreams) Upstream(id string) (hub.Invoker, bool) {
	f, ok := u[id]
	return f, ok
}

const weatherIn = `{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"units":{"enum":["metric","imperial"]},"days":{"type":"number"}},"additionalProperties":false}`
const weatherOut = `{"type":"object","required":["temp_c"],"properties":{"temp_c":{"type":"number"}}}`

func catalog(t testing.TB) *registry.Catalog {
	cat := registry.NewCatalog()
	for _, v := range []string{"weather-a", "weather-b"} {
		if errs := cat.SetVendorTools(v, []registry.ToolDef{{Name: "current", InputSchema: json.RawMessage(weatherIn), OutputSchema: json.RawMessage(weatherOut)}}); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	errs := cat.SetCapabilities([]registry.Capability{{
		Name: "weather.current", InputSchema: json.RawMessage(weatherIn), OutputSchema: json.RawMessage(`{"type":"object","required":["temp"]}`),
		Chain: []registry.ChainStep{
			{Tool: "weather-a/current", Result: []registry.Mapping{{From: "/temp_c", To: "/temp"}}},
			{Tool: "weather-b/current", Result: []registry.Mapping{{From: "/temp_c", To: "/temp"}}},
		},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return cat
}

func answer(temp float64) *hub.Result {
	return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("sunny")}, Structured: map[string]any{"temp_c": temp}}
}

// redisClient connects to the test Redis (it fails the test when Redis is down).
func redisClient(t testing.TB) *redis.Client { return redistest.Client(t) }

// uniquePrefix is a Redis key prefix no other test uses.
func uniquePrefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return "toolhub-test:cache:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}
