package drill

import (
	"context"
	"sync"
	"time"
)

// Fault is how a vendor answers tools/call in a drill. Its values are the
// fault modes of the example vendors (examples/vendors), which the caller
// maps them to.
type Fault string

// The faults. The zero Fault ("") means [FaultOK].
const (
	FaultOK      Fault = "ok"      // answer normally
	FaultFail    Fault = "fail"    // answer with isError:true
	FaultSlow    Fault = "slow"    // answer normally, late
	FaultHang    Fault = "hang"    // never answer
	FaultGarbage Fault = "garbage" // answer with a result that violates the tool's output schema
	FaultHTTP500 Fault = "http500" // HTTP 500 before MCP handling
	FaultHTTP429 Fault = "http429" // HTTP 429 with Retry-After before MCP handling
)

// Knobs are how a drill vendor answers tools/call.
type Knobs struct {
	// Fault is the fault to inject; zero means FaultOK.
	Fault Fault
	// Latency is added before every tools/call; zero means none.
	Latency time.Duration
}

// VendorCounters are the counters of a drill vendor that the drills read.
type VendorCounters struct {
	// CallsTotal counts every tools/call received.
	CallsTotal int64
	// OK counts the calls answered without an error.
	OK int64
	// InFlight is the number of tool calls running now.
	InFlight int64
	// UniqueCompleted counts the distinct idempotency keys whose call
	// completed without an error.
	UniqueCompleted int64
}

// Vendor is one vendor a drill drives, served by a [VendorServer].
type Vendor interface {
	// Knobs returns the vendor's fault settings.
	Knobs() Knobs
	// SetKnobs replaces them for the calls from now on.
	SetKnobs(Knobs) error
	// Counters returns the vendor's counters.
	Counters() VendorCounters
}

// VendorOptions start a drill vendor. A nil *VendorOptions means a healthy
// vendor.
type VendorOptions struct {
	// Knobs are the starting fault settings.
	Knobs Knobs
	// Gate, if set, waits out the Latency instead of a timer: a call waits
	// while the gate is closed (see [Gate]).
	Gate *Gate
}

// ServedVendors are vendors served on one loopback port, each under
// /<name> (MCP over streamable HTTP at /<name>/mcp).
type ServedVendors struct {
	Vendors map[string]Vendor
	Addr    string // host:port
	// Close stops the vendors and their server.
	Close func()
}

// VendorServer serves the vendors a drill calls. toolhub ships none:
// `toolhub drill` and `toolhub bench` pass the example vendors
// (examples/drillvendors), and so do the tests.
type VendorServer interface {
	// Names lists the vendors it can serve.
	Names() []string
	// Serve starts the vendors named in opts on one loopback port.
	Serve(opts map[string]*VendorOptions) (*ServedVendors, error)
}

// Gate holds vendor calls while closed: pass it in [VendorOptions].Gate,
// or set an example vendor's Options.Sleep to [Gate.Sleep]. The zero Gate
// is open, and a call it holds finishes even if its caller died, the way a
// vendor does when the caller's process is killed.
type Gate struct {
	// Cancelable: a held call returns with its context's error when the
	// context ends; false waits for [Gate.Open] whatever the context.
	Cancelable bool

	mu sync.Mutex
	ch chan struct{} // nil: open
}

// Close makes the vendor calls from now on wait for [Gate.Open].
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
}

// Open lets every held call go on, and the later ones pass.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

// Sleep is a vendor's sleep: it waits while the gate is closed.
func (g *Gate) Sleep(ctx context.Context, _ time.Duration) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	if !g.Cancelable {
		<-ch
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
