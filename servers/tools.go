package servers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/registry"
)

// MaxTools bounds the tools one vendor may list; a longer list fails the
// sync (the catalog keeps the tools it had).
const MaxTools = registry.MaxVendorTools

// listTools lists all of the vendor's tools, following nextCursor. It stops
// with ErrToolListLoop at a repeated cursor, past MaxTools or after
// MaxTools pages, with ErrToolListTooLarge at an answer over the bounds of
// listguard.go (enforced while the answer is read: a string over
// MaxToolsListString, a page over MaxToolsListPage, the sync's pages over
// MaxToolsListBytes), and with registry.ErrCatalogTooLarge once the tools
// taken are over registry.MaxVendorCatalogBytes; a tool over a size bound
// (registry.CheckToolDef) is dropped as soon as its page is read, so what
// a vendor sends is never held beyond one page. Schemas are
// taken from the raw JSON of each page, not from mcp-go's decoded mcp.Tool:
// the decoded InputSchema keeps only type, properties, required,
// additionalProperties and $defs at the top level, so keywords such as
// oneOf, $ref, enum or $schema would be lost. The client's own decoding
// still runs, and a tool the client drops (a bad x-mcp-header annotation
// over HTTP) is dropped here too. A page the client cannot decode at all is
// decoded here, so one odd tool does not hide the others; rejected
// definitions come back as *registry.ToolError.
func (c *conn) listTools(ctx context.Context) ([]registry.ToolDef, []error, error) {
	var (
		defs   []registry.ToolDef
		bad    []error
		cursor mcp.Cursor
		seen   = map[mcp.Cursor]bool{"": true}
		size   int                       // bytes of defs
		budget int64 = MaxToolsListBytes // bytes of answers the sync may still read
	)
	for page := 1; ; page++ {
		if page > MaxTools {
			return nil, nil, fmt.Errorf("%w: over %d pages", ErrToolListLoop, MaxTools)
		}
		rec := &record{wantRaw: true, maxBytes: c.v.m.opts.MaxResponseBytes, listLimit: budget}
		req := mcp.ListToolsRequest{}
		req.Params.Cursor = cursor
		res, err := c.client.ListToolsByPage(withRecord(ctx, rec), req)
		snap := rec.snapshot()
		var keep map[string]bool
		switch {
		case snap.listErr != nil:
			return nil, nil, fmt.Errorf("vendor %q: tools/list page %d: %w", c.v.id, page, snap.listErr)
		case snap.rpcErr != nil && snap.rpcErr.Code == listRefusedCode:
			msg := strings.TrimPrefix(snap.rpcErr.Message, ErrToolListTooLarge.Error()+": ")
			return nil, nil, fmt.Errorf("vendor %q: tools/list page %d: %w: %s", c.v.id, page, ErrToolListTooLarge, msg)
		case err == nil:
			keep = make(map[string]bool, len(res.Tools))
			for _, t := range res.Tools {
				keep[t.Name] = true
			}
			if snap.raw == nil { // not seen on the wire: use what the client decoded
				snap.raw, _ = json.Marshal(res)
			}
		case snap.raw != nil && snap.rpcErr == nil && ctx.Err() == nil:
			c.v.log.Warn("mcp-go could not decode a tools/list page; decoding it as raw JSON",
				"page", page, "error", c.v.red.Redact(err.Error()))
		default:
			return nil, nil, wrapMsg(fmt.Sprintf("tools/list page %d", page), classify(ctx, c.v.id, err, rec, c.v.red))
		}
		budget -= int64(len(snap.raw))
		pageDefs, pageBad, next, err := parseToolsPage(c.v.id, snap.raw, keep)
		if err != nil {
			return nil, nil, fmt.Errorf("tools/list page %d: %w", page, err)
		}
		for _, d := range pageDefs {
			size += registry.DefBytes(d)
		}
		defs = append(defs, pageDefs...)
		bad = append(bad, pageBad...)
		if len(defs)+len(bad) > MaxTools {
			return nil, nil, fmt.Errorf("%w: over %d tools", ErrToolListLoop, MaxTools)
		}
		if size > registry.MaxVendorCatalogBytes {
			return nil, nil, fmt.Errorf("%w: vendor %q's tool definitions are over %d bytes (page %d)", registry.ErrCatalogTooLarge, c.v.id, registry.MaxVendorCatalogBytes, page)
		}
		if next == "" {
			return defs, bad, nil
		}
		if budget <= 0 {
			return nil, nil, fmt.Errorf("vendor %q: tools/list page %d: %w: the tool sync's answers are over %d bytes together", c.v.id, page, ErrToolListTooLarge, MaxToolsListBytes)
		}
		if seen[next] {
			return nil, nil, fmt.Errorf("%w: page %d repeats cursor %q", ErrToolListLoop, page, truncate(string(next), 64))
		}
		seen[next] = true
		cursor = next
	}
}

// rawTool is a tool definition as it came over the wire.
type rawTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

// parseToolsPage decodes one tools/list result. keep, when not nil, is the
// set of tool names to take.
func parseToolsPage(vendor string, raw json.RawMessage, keep map[string]bool) ([]registry.ToolDef, []error, mcp.Cursor, error) {
	var page struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor mcp.Cursor        `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, nil, "", fmt.Errorf("result is not a tools/list result: %v", err)
	}
	var (
		defs []registry.ToolDef
		bad  []error
	)
	for i, rt := range page.Tools {
		var t rawTool
		if err := json.Unmarshal(rt, &t); err != nil {
			bad = append(bad, &registry.ToolError{Vendor: vendor, Tool: fmt.Sprintf("#%d", i), Part: "definition", Err: err})
			continue
		}
		def := registry.ToolDef{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations}
		if err := registry.CheckToolDef(vendor, def); err != nil {
			bad = append(bad, err) // dropped here: its oversized text is not kept
			continue
		}
		if keep != nil && !keep[t.Name] {
			bad = append(bad, &registry.ToolError{Vendor: vendor, Tool: t.Name, Part: "definition",
				Err: fmt.Errorf("dropped by the MCP client (invalid x-mcp-header annotations)")})
			continue
		}
		defs = append(defs, registry.ToolDef{
			Name:         t.Name,
			Title:        t.Title,
			Description:  t.Description,
			InputSchema:  present(t.InputSchema),
			OutputSchema: present(t.OutputSchema),
			Annotations:  present(t.Annotations),
		})
	}
	return defs, bad, page.NextCursor, nil
}

// present returns raw, or nil when it is absent or null.
func present(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return append(json.RawMessage(nil), raw...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
