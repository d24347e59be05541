package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/registry"
)

// OrderedRoute runs a capability's chain in order: the first vendor tool
// that answers wins. Each step's arguments and result are mapped between
// the canonical and the vendor's shapes. The hub/fallback package builds
// richer routes (cache, queue, degradation) on the same contract.
func OrderedRoute(vendor Invoker) Invoker {
	return InvokerFunc(func(ctx context.Context, c *Call) (*Result, error) {
		var errs []error
		for i := range c.Capability.Chain {
			r, err := RunStep(ctx, vendor, c, i)
			if err == nil {
				return r, nil
			}
			if ctx.Err() != nil {
				return nil, err
			}
			errs = append(errs, err)
		}
		return nil, &Error{Code: CodeUnavailable, Message: fmt.Sprintf("capability %q: every vendor failed: %v", c.Capability.Name, errors.Join(errs...)), Err: errors.Join(errs...)}
	})
}

// RunStep calls step i of c's capability chain through vendor: it finds the
// vendor tool, maps the arguments, invokes, maps and checks the result.
func RunStep(ctx context.Context, vendor Invoker, c *Call, i int) (*Result, error) {
	cp := c.Capability
	step := cp.Chain[i]
	v, name := step.VendorTool()
	t, ok := c.toolLookup(v, name)
	if !ok {
		return nil, &Error{Code: CodeUnavailable, Vendor: v, Message: fmt.Sprintf("capability %q: vendor tool %s is not in the catalog (vendor down or tool gone)", cp.Name, step.Tool)}
	}
	args, err := registry.ApplyMappings(c.Arguments, step.Args)
	if err != nil {
		return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("capability %q: chain[%d] argument mapping: %v", cp.Name, i, err)}
	}
	if err := t.ValidateInput(args); err != nil {
		return nil, &Error{Code: CodeInternal, Vendor: v, Message: fmt.Sprintf("capability %q: mapped arguments do not fit %s: %v (fix the chain's argument mapping)", cp.Name, step.Tool, err)}
	}
	if c.Input != nil {
		return nil, &Error{Code: CodeInvalidArguments, Message: fmt.Sprintf("capability %q: a capability takes no inputResponses (no vendor of its chain asked this caller for input: call the vendor tool that did)", cp.Name)}
	}
	sc := *c
	sc.Tool, sc.Arguments, sc.Attempt = t, args, 0
	r, err := vendor.Invoke(ctx, &sc)
	if err != nil {
		return nil, err
	}
	if r.Input != nil {
		// The vendor's answer to the input would have to reach this step
		// again; a capability's chain starts over on every call.
		return nil, &Error{Code: CodeUpstream, Vendor: v, Message: fmt.Sprintf("%s asked for input (multi round trip), which toolhub relays for vendor tools, not inside capability %q", step.Tool, cp.Name)}
	}
	if r.IsError && r.Final {
		// The vendor's definitive answer: the capability's too.
		r.Provenance.Capability = cp.Name
		r.Provenance.Fallback = i > 0
		return r, nil
	}
	if r.IsError {
		return nil, &Error{Code: CodeUpstream, Vendor: v, Message: fmt.Sprintf("%s reported a tool error: %s", step.Tool, TextOf(r))}
	}
	if m, ok := r.Structured.(map[string]any); ok && len(step.Result) > 0 {
		if r.Structured, err = registry.ApplyMappings(m, step.Result); err != nil {
			return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("capability %q: chain[%d] result mapping: %v", cp.Name, i, err)}
		}
	}
	if err := cp.ValidateOutput(r.Structured); err != nil {
		return nil, &Error{Code: CodeInvalidOutput, Vendor: v, Message: fmt.Sprintf("capability %q: %s's mapped result does not match the canonical output schema: %v", cp.Name, step.Tool, err), Err: err}
	}
	r.Provenance.Capability = cp.Name
	r.Provenance.Fallback = i > 0
	return r, nil
}

// TextOf joins the text blocks of a result (for error messages).
func TextOf(r *Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteString(" ")
			}
			b.WriteString(t.Text)
		}
	}
	s := b.String()
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}
