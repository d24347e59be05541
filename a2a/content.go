package a2a

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
)

// resultFromParts maps A2A parts to an MCP result: text → TextContent;
// data → structuredContent plus a JSON text rendering; raw bytes → image or
// audio content for image/* and audio/* media types, else an embedded blob
// resource; a URL → a resource link. With several data parts the
// structured content is {"data": [each value]}; one data part that is not
// an object is {"data": value} (MCP wants an object).
func resultFromParts(parts []*sdk.Part) *hub.Result {
	r := &hub.Result{}
	var data []any
	for i, p := range parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case sdk.Text:
			r.Content = append(r.Content, mcp.NewTextContent(string(c)))
		case sdk.Data:
			data = append(data, c.Value)
			b, err := json.Marshal(c.Value)
			if err != nil {
				b = []byte(fmt.Sprint(c.Value))
			}
			r.Content = append(r.Content, mcp.NewTextContent(string(b)))
		case sdk.Raw:
			mt := p.MediaType
			enc := base64.StdEncoding.EncodeToString(c)
			switch {
			case strings.HasPrefix(mt, "image/"):
				r.Content = append(r.Content, mcp.NewImageContent(enc, mt))
			case strings.HasPrefix(mt, "audio/"):
				r.Content = append(r.Content, mcp.NewAudioContent(enc, mt))
			default:
				if mt == "" {
					mt = "application/octet-stream"
				}
				r.Content = append(r.Content, mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: partURI(p, i), MIMEType: mt, Blob: enc}))
			}
		case sdk.URL:
			name := p.Filename
			if name == "" {
				name = string(c)
			}
			r.Content = append(r.Content, mcp.NewResourceLink(string(c), name, "", p.MediaType))
		}
	}
	switch len(data) {
	case 0:
	case 1:
		if m, ok := data[0].(map[string]any); ok {
			r.Structured = m
		} else {
			r.Structured = map[string]any{"data": data[0]}
		}
	default:
		r.Structured = map[string]any{"data": data}
	}
	return r
}

func partURI(p *sdk.Part, i int) string {
	if p.Filename != "" {
		return "a2a:file/" + p.Filename
	}
	return fmt.Sprintf("a2a:part/%d", i)
}

// partsFromResult maps an MCP result to A2A parts: structured content
// becomes one data part (its JSON rendering in the text blocks is then left
// out); text, images, audio and resources map back the other way.
func partsFromResult(r *hub.Result) []*sdk.Part {
	var parts []*sdk.Part
	var rendered string
	if r.Structured != nil {
		parts = append(parts, &sdk.Part{Content: sdk.Data{Value: r.Structured}, MediaType: "application/json"})
		if b, err := json.Marshal(r.Structured); err == nil {
			rendered = string(b)
		}
	}
	for _, c := range r.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			if rendered != "" && jsonEqual(c.Text, rendered) {
				continue
			}
			parts = append(parts, &sdk.Part{Content: sdk.Text(c.Text), MediaType: "text/plain"})
		case mcp.ImageContent:
			if b, err := base64.StdEncoding.DecodeString(c.Data); err == nil {
				parts = append(parts, &sdk.Part{Content: sdk.Raw(b), MediaType: c.MIMEType})
			}
		case mcp.AudioContent:
			if b, err := base64.StdEncoding.DecodeString(c.Data); err == nil {
				parts = append(parts, &sdk.Part{Content: sdk.Raw(b), MediaType: c.MIMEType})
			}
		case mcp.ResourceLink:
			parts = append(parts, &sdk.Part{Content: sdk.URL(c.URI), MediaType: c.MIMEType, Filename: c.Name})
		case mcp.EmbeddedResource:
			switch rc := c.Resource.(type) {
			case mcp.TextResourceContents:
				parts = append(parts, &sdk.Part{Content: sdk.Text(rc.Text), MediaType: rc.MIMEType, Metadata: map[string]any{"uri": rc.URI}})
			case mcp.BlobResourceContents:
				if b, err := base64.StdEncoding.DecodeString(rc.Blob); err == nil {
					parts = append(parts, &sdk.Part{Content: sdk.Raw(b), MediaType: rc.MIMEType, Metadata: map[string]any{"uri": rc.URI}})
				}
			}
		}
	}
	if len(parts) == 0 {
		parts = append(parts, &sdk.Part{Content: sdk.Text(""), MediaType: "text/plain"})
	}
	return parts
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// textOf joins the text parts of a message.
func textOf(m *sdk.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.Content.(sdk.Text); ok {
			if b.Len() > 0 {
				b.WriteString(" ")
			}
			b.WriteString(string(t))
		}
	}
	return b.String()
}
