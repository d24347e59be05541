package app

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry/poison"
)

// maxResultFindings bounds the findings one result is marked with.
const maxResultFindings = poison.MaxFindings

// resultScan marks the results of vendors with result_scan on: their text
// content and structuredContent strings are scanned with the rules of registry/poison and what is found
// goes into Result.Findings, which the front doors render next to the
// provenance and the decision log records. The result is never changed.
// It runs first among the Call middlewares, so a cached, stale or
// fallback answer is scanned as the vendor that gave it asks.
func (a *App) resultScan() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			r, err := next.Invoke(ctx, c)
			if err != nil || r == nil {
				return r, err
			}
			if v, ok := a.spec(r.Provenance.Vendor); !ok || !v.ResultScan {
				return r, nil
			}
			fs := scanResult(r)
			if len(fs) == 0 {
				return r, nil
			}
			c.Trace.Decide("result_scan " + r.Provenance.Vendor + ": " + strconv.Itoa(len(fs)) + " findings")
			// A copy: a cache or a shared flight may hold r.
			marked := *r
			marked.Findings = fs
			return &marked, nil
		})
	}
}

// Bounds of the walk of a result's structuredContent.
const (
	maxStructuredDepth   = 64
	maxStructuredStrings = 10000
)

// scanResult scans the text of r's content items, text resources
// included, and every string of its structuredContent (object keys and
// values, at most maxStructuredStrings of them, maxStructuredDepth deep),
// named by JSON pointer ("structuredContent/forecast/0/note"): a client
// that reads the structured result hands those strings to the model too.
func scanResult(r *hub.Result) []hub.Finding {
	var out []hub.Finding
	add := func(field, text string) {
		for _, f := range poison.ScanText(field, text) {
			if len(out) == maxResultFindings {
				return
			}
			out = append(out, hub.Finding{Field: f.Field, Rule: f.Rule, Span: f.Span})
		}
	}
	for i, ct := range r.Content {
		field := "content/" + strconv.Itoa(i)
		switch ct := ct.(type) {
		case mcp.TextContent:
			add(field+"/text", ct.Text)
		case *mcp.TextContent:
			add(field+"/text", ct.Text)
		case mcp.EmbeddedResource:
			if t, ok := ct.Resource.(mcp.TextResourceContents); ok {
				add(field+"/resource/text", t.Text)
			}
		}
	}
	strs := 0
	var walk func(field string, v any, depth int)
	walk = func(field string, v any, depth int) {
		if depth > maxStructuredDepth || strs >= maxStructuredStrings || len(out) == maxResultFindings {
			return
		}
		switch v := v.(type) {
		case string:
			strs++
			add(field, v)
		case []any:
			for i, e := range v {
				walk(field+"/"+strconv.Itoa(i), e, depth+1)
			}
		case map[string]any:
			keys := slices.Sorted(maps.Keys(v))
			for _, k := range keys {
				f := field + "/" + pointerToken.Replace(k)
				strs++
				add(f+" (key)", k)
				walk(f, v[k], depth+1)
			}
		}
	}
	walk("structuredContent", r.Structured, 0)
	return out
}

// pointerToken escapes a JSON pointer reference token (RFC 6901).
var pointerToken = strings.NewReplacer("~", "~0", "/", "~1")
