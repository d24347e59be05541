package cache

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
)

// stored is the JSON form of a cached result.
type stored struct {
	Content    []json.RawMessage `json:"content"`
	Structured json.RawMessage   `json:"structured,omitempty"`
	IsError    bool              `json:"isError,omitempty"`
	Vendor     string            `json:"vendor,omitempty"`
	Tool       string            `json:"tool,omitempty"`
}

// Encode returns the stored form of a result: its content blocks,
// structured content and isError flag as JSON (plus the vendor and tool
// that answered, for provenance).
func Encode(r *hub.Result) ([]byte, error) {
	s := stored{Content: make([]json.RawMessage, 0, len(r.Content)), IsError: r.IsError, Vendor: r.Provenance.Vendor, Tool: r.Provenance.Tool}
	for i, c := range r.Content {
		b, err := json.Marshal(typed(c))
		if err != nil {
			return nil, fmt.Errorf("cache: encode content[%d]: %w", i, err)
		}
		s.Content = append(s.Content, b)
	}
	if r.Structured != nil {
		b, err := json.Marshal(r.Structured)
		if err != nil {
			return nil, fmt.Errorf("cache: encode structured content: %w", err)
		}
		s.Structured = b
	}
	return json.Marshal(s)
}

// typed fills in the "type" of a content block a vendor built without one.
func typed(c mcp.Content) mcp.Content {
	switch x := c.(type) {
	case mcp.TextContent:
		x.Type = mcp.ContentTypeText
		return x
	case mcp.ImageContent:
		x.Type = mcp.ContentTypeImage
		return x
	case mcp.AudioContent:
		x.Type = mcp.ContentTypeAudio
		return x
	case mcp.EmbeddedResource:
		x.Type = mcp.ContentTypeResource
		return x
	case mcp.ResourceLink:
		x.Type = mcp.ContentTypeLink
		return x
	}
	return c
}

// Decode reads a result written by [Encode]; content blocks are rebuilt
// with mcp.ParseContent, so text, image, audio, embedded resources and
// resource links come back as the same mcp types.
func Decode(b []byte) (*hub.Result, error) {
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("cache: decode: %w", err)
	}
	r := &hub.Result{IsError: s.IsError, Content: make([]mcp.Content, 0, len(s.Content))}
	r.Provenance.Vendor, r.Provenance.Tool = s.Vendor, s.Tool
	for i, raw := range s.Content {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("cache: decode content[%d]: %w", i, err)
		}
		c, err := mcp.ParseContent(m)
		if err != nil {
			return nil, fmt.Errorf("cache: decode content[%d]: %w", i, err)
		}
		r.Content = append(r.Content, c)
	}
	if len(s.Structured) > 0 && !bytes.Equal(s.Structured, []byte("null")) {
		if err := json.Unmarshal(s.Structured, &r.Structured); err != nil {
			return nil, fmt.Errorf("cache: decode structured content: %w", err)
		}
	}
	return r, nil
}
