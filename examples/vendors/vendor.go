package vendors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ErrUnknownVendor is returned by [New] for a name not in [Names].
var ErrUnknownVendor = errors.New("vendors: unknown vendor")

// errClosed ends a hanging call when its vendor is closed.
var errClosed = errors.New("vendors: vendor closed")

// recentCalls is how many calls a vendor remembers for [Vendor.Calls].
const recentCalls = 100

// MetaIdempotencyKey is the _meta key under which toolhub's job workers send
// a job's idempotency key (hub/jobs.MetaIdempotencyKey).
const MetaIdempotencyKey = "toolhub/idempotency_key"

// RememberedKeys is how many idempotency keys a vendor remembers, with their
// results; the oldest is forgotten first.
const RememberedKeys = 4096

// Options configure a [Vendor]. A nil *Options means all defaults.
type Options struct {
	// Knobs are the starting fault settings; the zero value is healthy.
	Knobs Knobs
	// Now stamps observed_at in weather results; nil means time.Now.
	Now func() time.Time
	// Sleep waits out Latency and ModeSlow. It returns early with ctx.Err()
	// when ctx ends. Nil means a real timer; tests inject one to avoid waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnCall, if set, is called synchronously for every tools/call the vendor
	// receives, after it is counted and recorded. Tests use it to learn that
	// a call arrived without polling.
	OnCall func(Call)
}

// Counters count the tools/call requests a vendor received.
type Counters struct {
	// CallsTotal counts every tools/call received, at the HTTP or MCP layer,
	// including ones for unknown tools or with invalid arguments.
	CallsTotal int64 `json:"calls_total"`
	// CallsByTool splits CallsTotal by requested tool name.
	CallsByTool map[string]int64 `json:"calls_by_tool"`
	// OK counts calls answered without an error (garbage answers count here:
	// the vendor believes they are fine).
	OK int64 `json:"ok"`
	// Failed counts calls answered with isError, a JSON-RPC error or an HTTP error.
	Failed int64 `json:"failed"`
	// Rejected counts the Failed calls answered at the HTTP layer (http500, http429).
	Rejected int64 `json:"rejected"`
	// InFlight is the number of tool handlers running now; MaxInFlight is its
	// high-water mark since the last reset.
	InFlight    int64 `json:"in_flight"`
	MaxInFlight int64 `json:"max_in_flight"`
	// UniqueCompleted counts the distinct idempotency keys
	// (_meta["toolhub/idempotency_key"]) whose call completed without an
	// error: a repeated key is answered from the remembered result and not
	// counted again. Calls without a key are not counted here.
	UniqueCompleted int64 `json:"unique_completed"`
	// Replayed counts calls answered from a remembered idempotency key.
	Replayed int64 `json:"replayed"`
	// Repeated counts calls whose idempotency key the vendor had received
	// before (among the last RememberedKeys keys), whether that call completed,
	// failed or still runs: a job run again elsewhere while its dead
	// instance's call is still running here is repeated but not replayed.
	Repeated int64 `json:"repeated"`
}

// Call is what a vendor remembers of one tools/call: never argument values,
// only their top-level keys, plus the _meta the caller sent.
type Call struct {
	// Seq numbers calls from 1 since the last reset.
	Seq     int64          `json:"seq"`
	Tool    string         `json:"tool"`
	ArgKeys []string       `json:"arg_keys"`
	Meta    map[string]any `json:"meta,omitempty"`
}

var _ io.Closer = (*Vendor)(nil)

// Vendor is one example vendor: an MCP server with fault knobs and counters.
// It is safe for concurrent use.
type Vendor struct {
	name  string
	tools []toolSpec
	srv   *server.MCPServer
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	onCall func(Call)
	closed chan struct{}
	close  sync.Once
	setMu  sync.Mutex // serializes SetKnobs, so the MCP tool list follows the last one

	mu       sync.Mutex
	knobs    Knobs
	faultSeq int64 // calls that went through a fault decision since the last Mode/FailRate change
	counters Counters
	calls    []Call
	done     recent[*mcp.CallToolResult] // completed idempotency keys and their results
	seen     recent[struct{}]            // idempotency keys received
}

// recent holds the last RememberedKeys keys put, with their values.
type recent[V any] struct {
	m     map[string]V
	order []string // oldest first
}

func (r *recent[V]) get(key string) (V, bool) {
	v, ok := r.m[key]
	return v, ok
}

// put adds key (not held yet), forgetting the oldest key when full.
func (r *recent[V]) put(key string, v V) {
	if r.m == nil {
		r.m = map[string]V{}
	}
	if len(r.order) >= RememberedKeys {
		delete(r.m, r.order[0])
		r.order = slices.Delete(r.order, 0, 1)
	}
	r.m[key] = v
	r.order = append(r.order, key)
}

// New returns the example vendor called name (see [Names]).
func New(name string, opts *Options) (*Vendor, error) {
	tools, ok := catalog[name]
	if !ok {
		return nil, fmt.Errorf("%w %q: want one of %v", ErrUnknownVendor, name, Names())
	}
	if opts == nil {
		opts = &Options{}
	}
	v := &Vendor{
		name:   name,
		tools:  tools,
		now:    opts.Now,
		sleep:  opts.Sleep,
		onCall: opts.OnCall,
		closed: make(chan struct{}),
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.sleep == nil {
		v.sleep = sleep
	}
	if err := opts.Knobs.validate(v.ToolNames()); err != nil {
		return nil, fmt.Errorf("vendor %q: %w", name, err)
	}
	v.knobs = opts.Knobs
	v.knobs.Tools = slices.Clone(opts.Knobs.Tools)
	v.counters.CallsByTool = map[string]int64{}

	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest) {
		v.received(req.Params.Name, argKeys(req.Params.Arguments), metaMap(req.Params.Meta))
	})
	hooks.AddAfterCallTool(func(_ context.Context, _ any, _ *mcp.CallToolRequest, result any) {
		res, ok := result.(*mcp.CallToolResult)
		v.finished(ok && !res.IsError, false)
	})
	hooks.AddOnError(func(_ context.Context, _ any, method mcp.MCPMethod, _ any, err error) {
		var unparsable *server.UnparsableMessageError
		if method == mcp.MethodToolsCall && !errors.As(err, &unparsable) {
			v.finished(false, false)
		}
	})
	v.srv = server.NewMCPServer(name, "1.0.0",
		server.WithToolCapabilities(true),
		server.WithInputSchemaValidation(),
		server.WithHooks(hooks),
		server.WithToolHandlerMiddleware(v.faults),
		server.WithRecovery(),
	)
	v.srv.SetTools(v.visible(v.knobs.Tools)...)
	return v, nil
}

// Name returns the vendor's name, such as "weather-a".
func (v *Vendor) Name() string { return v.name }

// MCPServer returns the vendor's MCP server, to serve over stdio or in process.
func (v *Vendor) MCPServer() *server.MCPServer { return v.srv }

// ToolNames returns the names of all the vendor's tools, visible or not.
func (v *Vendor) ToolNames() []string {
	names := make([]string, len(v.tools))
	for i, t := range v.tools {
		names[i] = t.name
	}
	return names
}

// Knobs returns the current fault settings.
func (v *Vendor) Knobs() Knobs {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := v.knobs
	k.Tools = slices.Clone(k.Tools)
	return k
}

// SetKnobs replaces the fault settings. A change of Tools updates the MCP
// server's tool list, which notifies connected clients.
func (v *Vendor) SetKnobs(k Knobs) error {
	if err := k.validate(v.ToolNames()); err != nil {
		return fmt.Errorf("vendor %q: %w", v.name, err)
	}
	k.Tools = slices.Clone(k.Tools)
	v.setMu.Lock()
	defer v.setMu.Unlock()
	v.mu.Lock()
	old := v.knobs
	v.knobs = k
	if old.Mode != k.Mode || old.FailRate != k.FailRate {
		v.faultSeq = 0
	}
	v.mu.Unlock()
	if !slices.Equal(old.Tools, k.Tools) || (old.Tools == nil) != (k.Tools == nil) {
		v.srv.SetTools(v.visible(k.Tools)...)
	}
	return nil
}

// Counters returns a snapshot of the counters.
func (v *Vendor) Counters() Counters {
	v.mu.Lock()
	defer v.mu.Unlock()
	c := v.counters
	c.CallsByTool = maps.Clone(c.CallsByTool)
	return c
}

// Calls returns the last 100 calls received, oldest first.
func (v *Vendor) Calls() []Call {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.calls)
}

// Reset zeroes the counters (except InFlight) and forgets the recorded calls.
func (v *Vendor) Reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.counters = Counters{
		CallsByTool: map[string]int64{},
		InFlight:    v.counters.InFlight,
		MaxInFlight: v.counters.InFlight,
	}
	v.calls = nil
	v.done, v.seen = recent[*mcp.CallToolResult]{}, recent[struct{}]{}
}

// idempotencyKey returns the call's _meta["toolhub/idempotency_key"], or "".
func idempotencyKey(req mcp.CallToolRequest) string {
	if req.Params.Meta == nil {
		return ""
	}
	k, _ := req.Params.Meta.AdditionalFields[MetaIdempotencyKey].(string)
	return k
}

// remembered returns the result of a completed call with key, and counts
// the call as repeated when key was received before.
func (v *Vendor) remembered(key string) (*mcp.CallToolResult, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.seen.get(key); ok {
		v.counters.Repeated++
	} else {
		v.seen.put(key, struct{}{})
	}
	res, ok := v.done.get(key)
	if ok {
		v.counters.Replayed++
	}
	return res, ok
}

// remember records that the call with key completed with res, counting the
// key once.
func (v *Vendor) remember(key string, res *mcp.CallToolResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.done.get(key); ok {
		return // a concurrent call with the same key completed first
	}
	v.done.put(key, res)
	v.counters.UniqueCompleted++
}

// Close releases calls hanging in ModeHang; later hanging calls return at once.
// It does not close HTTP listeners or sessions, which belong to the caller.
func (v *Vendor) Close() error {
	v.close.Do(func() { close(v.closed) })
	return nil
}

// visible returns the server tools named in names, or all when names is nil.
func (v *Vendor) visible(names []string) []server.ServerTool {
	var out []server.ServerTool
	for _, t := range v.tools {
		if names == nil || slices.Contains(names, t.name) {
			out = append(out, t.serverTool(v))
		}
	}
	return out
}

// received counts and records one tools/call.
func (v *Vendor) received(tool string, keys []string, meta map[string]any) {
	v.mu.Lock()
	v.counters.CallsTotal++
	v.counters.CallsByTool[tool]++
	c := Call{Seq: v.counters.CallsTotal, Tool: tool, ArgKeys: keys, Meta: meta}
	if len(v.calls) == recentCalls {
		v.calls = slices.Delete(v.calls, 0, 1)
	}
	v.calls = append(v.calls, c)
	v.mu.Unlock()
	if v.onCall != nil {
		v.onCall(c)
	}
}

// finished counts the outcome of one tools/call.
func (v *Vendor) finished(ok, rejected bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ok {
		v.counters.OK++
		return
	}
	v.counters.Failed++
	if rejected {
		v.counters.Rejected++
	}
}

// decide returns the mode for the next call and the latency to add before it.
func (v *Vendor) decide() (Mode, time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := v.knobs
	n := v.faultSeq
	v.faultSeq++
	mode := k.Mode
	switch {
	case mode == "" || mode == ModeOK:
		mode = ModeOK
		if k.FailRate > 0 && hits(n, k.FailRate) {
			mode = ModeFail
		}
	case !hits(n, k.FailRate):
		mode = ModeOK
	}
	lat := k.Latency
	if mode == ModeSlow && lat == 0 {
		lat = DefaultSlowLatency
	}
	return mode, lat
}

func (v *Vendor) retryAfter() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.knobs.RetryAfter > 0 {
		return v.knobs.RetryAfter
	}
	return DefaultRetryAfter
}

func (v *Vendor) enter() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.counters.InFlight++
	v.counters.MaxInFlight = max(v.counters.MaxInFlight, v.counters.InFlight)
}

func (v *Vendor) leave() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.counters.InFlight--
}

// decidedKey marks a context whose call the HTTP layer already let through,
// so the MCP layer does not roll the dice a second time.
type decidedKey struct{}

type decision struct {
	mode    Mode
	latency time.Duration
}

// faults is the tool handler middleware that injects the MCP-level faults.
func (v *Vendor) faults(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		v.enter()
		defer v.leave()
		key := idempotencyKey(req)
		if key != "" {
			if res, ok := v.remembered(key); ok {
				return res, nil
			}
		}
		d, ok := ctx.Value(decidedKey{}).(decision)
		if !ok {
			d.mode, d.latency = v.decide()
		}
		if d.latency > 0 {
			if err := v.sleep(ctx, d.latency); err != nil {
				return nil, err
			}
		}
		switch d.mode {
		case ModeFail:
			return mcp.NewToolResultErrorf("%s: %s is failing (injected fault, mode %q)", v.name, req.Params.Name, d.mode), nil
		case ModeHang:
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-v.closed:
				return nil, errClosed
			}
		case ModeHTTP500, ModeHTTP429:
			// Only reached off HTTP (stdio, in process): the nearest thing is a JSON-RPC error.
			return nil, fmt.Errorf("%s: injected fault %q has no HTTP layer on this transport", v.name, d.mode)
		}
		res, err := next(ctx, req)
		if d.mode == ModeGarbage && err == nil && res != nil {
			v.spec(req.Params.Name).lie(res)
		}
		if key != "" && err == nil && res != nil && !res.IsError {
			v.remember(key, res)
		}
		return res, err
	}
}

func (v *Vendor) spec(tool string) toolSpec {
	for _, t := range v.tools {
		if t.name == tool {
			return t
		}
	}
	return toolSpec{}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// argKeys returns the sorted top-level keys of tool arguments.
func argKeys(args any) []string {
	switch a := args.(type) {
	case map[string]any:
		return slices.Sorted(maps.Keys(a))
	case map[string]json.RawMessage:
		return slices.Sorted(maps.Keys(a))
	}
	return []string{}
}

// metaMap returns _meta as plain JSON values, or nil when absent.
func metaMap(m *mcp.Meta) map[string]any {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil || len(out) == 0 {
		return nil
	}
	return out
}
