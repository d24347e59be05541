package hub

import "context"

// Invoker runs a call and returns its result.
type Invoker interface {
	Invoke(ctx context.Context, c *Call) (*Result, error)
}

// InvokerFunc adapts a function to an Invoker.
type InvokerFunc func(ctx context.Context, c *Call) (*Result, error)

// Invoke calls f.
func (f InvokerFunc) Invoke(ctx context.Context, c *Call) (*Result, error) { return f(ctx, c) }

// Middleware wraps an Invoker. Rate limits, breakers, retries, metering and
// fallback are each one Middleware.
type Middleware func(Invoker) Invoker

// Chain applies middlewares around inner, the first outermost (like
// net/http handler stacks): Chain(h, a, b) runs a, then b, then h.
func Chain(inner Invoker, mws ...Middleware) Invoker {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			inner = mws[i](inner)
		}
	}
	return inner
}

// Upstreams finds the invoker that talks to a vendor. The servers package
// (MCP) and the a2a package implement it.
type Upstreams interface {
	Upstream(vendor string) (Invoker, bool)
}

// UpstreamsFunc adapts a function to Upstreams.
type UpstreamsFunc func(vendor string) (Invoker, bool)

// Upstream calls f.
func (f UpstreamsFunc) Upstream(vendor string) (Invoker, bool) { return f(vendor) }
