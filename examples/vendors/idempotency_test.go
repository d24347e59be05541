package vendors_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/examples/vendors"
)

// TestIdempotencyKey checks that a vendor completes a keyed call once: a
// repeated key is answered with the remembered result and not counted
// again, a failed call is not remembered, and calls without a key are not
// counted in unique_completed.
func TestIdempotencyKey(t *testing.T) {
	v := newVendor(t, vendors.Doubao, nil)
	c := start(t, newStreamable(t, serve(t, vendors.HTTP, v)+"/mcp", nil))
	keyed := func(key, prompt string) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = "generate_image"
		req.Params.Arguments = map[string]any{"prompt": prompt, "size": "512x512"}
		if key != "" {
			req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{vendors.MetaIdempotencyKey: key}}
		}
		res, err := c.CallTool(t.Context(), req)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		return res
	}

	if err := v.SetKnobs(vendors.Knobs{Mode: vendors.ModeFail}); err != nil {
		t.Fatal(err)
	}
	if res := keyed("job-1", "a cat"); !res.IsError {
		t.Fatal("failing vendor answered without an error")
	}
	if err := v.SetKnobs(vendors.Knobs{}); err != nil {
		t.Fatal(err)
	}
	first := keyed("job-1", "a cat")
	again := keyed("job-1", "a different prompt: the key wins")
	keyed("job-2", "a dog")
	keyed("", "no key")
	if first.IsError || again.IsError {
		t.Fatal("healthy vendor answered with an error")
	}
	if diff := cmp.Diff(first.StructuredContent, again.StructuredContent); diff != "" {
		t.Errorf("repeated key answered differently (-first +again):\n%s", diff)
	}
	got := v.Counters()
	if got.CallsTotal != 5 || got.UniqueCompleted != 2 || got.Replayed != 1 {
		t.Errorf("counters %+v; want 5 calls, 2 unique completed, 1 replayed", got)
	}
	v.Reset()
	keyed("job-1", "a cat")
	if got := v.Counters(); got.UniqueCompleted != 1 || got.Replayed != 0 {
		t.Errorf("after reset %+v; want the key forgotten", got)
	}
}

// TestIdempotencyKeyInFlight checks that a key repeated while its first call
// still runs is counted as a repeat: a job run again elsewhere after its
// instance died reaches the vendor before the dead instance's call is done,
// and neither call can be answered from memory.
func TestIdempotencyKeyInFlight(t *testing.T) {
	// Both calls are held in the vendor's latency until both have arrived.
	entered, release, sleep := heldSleep(2)
	v := newVendor(t, vendors.Doubao, &vendors.Options{Sleep: sleep})
	c := start(t, newStreamable(t, serve(t, vendors.HTTP, v)+"/mcp", nil))
	if err := v.SetKnobs(vendors.Knobs{Latency: time.Second}); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "generate_image"
	req.Params.Arguments = map[string]any{"prompt": "a cat", "size": "512x512"}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{vendors.MetaIdempotencyKey: "job-1"}}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.CallTool(t.Context(), req)
			errs <- err
		}()
	}
	for range 2 {
		<-entered
	}
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("call: %v", err)
		}
	}
	got := v.Counters()
	if got.CallsTotal != 2 || got.UniqueCompleted != 1 || got.Repeated != 1 {
		t.Errorf("counters %+v; want 2 calls, 1 unique completed, 1 repeated", got)
	}
	// A key repeated after its call completed is a repeat too (answered
	// from memory: it does not reach the latency).
	if _, err := c.CallTool(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := v.Counters(); got.Repeated != 2 || got.Replayed != 1 {
		t.Errorf("counters %+v; want 2 repeated, 1 of them replayed", got)
	}
}
