package servers

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub/tracing"
)

// identifyingMeta are substrings of _meta keys that may identify who is
// calling; such keys are not passed to vendors.
var identifyingMeta = []string{
	"tenant", "user", "account", "session", "principal", "auth", "email",
	"clientinfo", "client_info", "clientid", "client_id", "caller", "toolhub",
}

// vendorMeta returns the part of a caller's _meta that may go to a vendor:
// the progress token and neutral keys (trace context, …). It drops the
// MCP-reserved protocol keys ("io.modelcontextprotocol/…", which carry the
// caller's own client identity and which the manager's client sets for
// itself) and every key that looks like it names a tenant, user or session.
// Only top-level keys are inspected.
func vendorMeta(m map[string]any) *mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	return keptMeta(m["progressToken"], m, func(k string) bool { return k == "progressToken" || identifying(k) })
}

// keptMeta returns a _meta of token and the fields drop does not refuse,
// or nil when that leaves nothing.
func keptMeta(token mcp.ProgressToken, fields map[string]any, drop func(key string) bool) *mcp.Meta {
	out := &mcp.Meta{ProgressToken: token}
	for k, v := range fields {
		if drop(k) {
			continue
		}
		if out.AdditionalFields == nil {
			out.AdditionalFields = map[string]any{}
		}
		out.AdditionalFields[k] = v
	}
	if out.ProgressToken == nil && out.AdditionalFields == nil {
		return nil
	}
	return out
}

func identifying(key string) bool {
	k := strings.ToLower(key)
	if k == "toolhub/idempotency_key" {
		return false // jobs pass their id so vendors can deduplicate re-runs
	}
	if strings.HasPrefix(k, "io.modelcontextprotocol/") || strings.HasPrefix(k, "modelcontextprotocol.io/") {
		return true
	}
	for _, s := range identifyingMeta {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// traceMeta puts the trace context of ctx (toolhub's attempt span) into a
// vendor's _meta as traceparent and tracestate, replacing the caller's: the
// MCP way to carry it, which works on stdio too. m is returned as is when
// tracing is off.
func traceMeta(ctx context.Context, m *mcp.Meta) *mcp.Meta {
	fields := map[string]any{}
	tracing.InjectMeta(ctx, fields)
	if len(fields) == 0 {
		return m
	}
	if m == nil {
		m = &mcp.Meta{}
	}
	if m.AdditionalFields == nil {
		m.AdditionalFields = map[string]any{}
	}
	for k, v := range fields {
		m.AdditionalFields[k] = v
	}
	return m
}
