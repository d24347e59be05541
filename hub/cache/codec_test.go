package cache_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/cache"
)

func TestCodecRoundTrip(t *testing.T) {
	size := int64(1234)
	link := mcp.NewResourceLink("file:///a.png", "a.png", "a picture", "image/png")
	link.Size = &size
	text := mcp.NewTextContent("hello")
	text.Annotations = &mcp.Annotations{Audience: []mcp.Role{mcp.RoleUser}, Priority: ptr(0.5)}
	in := &hub.Result{
		Content: []mcp.Content{
			text,
			mcp.NewImageContent("aGVsbG8=", "image/png"),
			mcp.NewAudioContent("aGVsbG8=", "audio/wav"),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "mem://t", MIMEType: "text/plain", Text: "doc"}),
			mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "mem://b", MIMEType: "application/octet-stream", Blob: "AAE="}),
			link,
			mcp.TextContent{Text: "no type set by the vendor"},
		},
		Structured: map[string]any{"temp_c": 21.5, "tags": []any{"a", "b"}, "n": nil},
		IsError:    true,
		Provenance: hub.Provenance{Vendor: "weather-a", Tool: "current"},
	}
	b, err := cache.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cache.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{"text", "image", "audio", "resource", "resource", "resource_link", "text"}
	for i, c := range out.Content {
		m := map[string]any{}
		raw, _ := json.Marshal(c)
		_ = json.Unmarshal(raw, &m)
		if m["type"] != wantTypes[i] {
			t.Errorf("content[%d] type = %v, want %s", i, m["type"], wantTypes[i])
		}
	}
	// Same JSON on the wire, same Go types.
	want, _ := json.Marshal(in.Content)
	want2, _ := json.Marshal(withTypes(in.Content))
	got, _ := json.Marshal(out.Content)
	if string(got) != string(want2) {
		t.Errorf("content JSON changed:\n got %s\nwant %s\n(raw %s)", got, want2, want)
	}
	for i := range in.Content[:6] {
		if diff := cmp.Diff(in.Content[i], out.Content[i]); diff != "" {
			t.Errorf("content[%d] (-in +out):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff(in.Structured, out.Structured); diff != "" {
		t.Errorf("structured (-in +out):\n%s", diff)
	}
	if !out.IsError || out.Provenance.Vendor != "weather-a" || out.Provenance.Tool != "current" {
		t.Errorf("isError/provenance lost: %+v", out)
	}
}

func withTypes(cs []mcp.Content) []mcp.Content {
	out := append([]mcp.Content(nil), cs...)
	if t, ok := out[len(out)-1].(mcp.TextContent); ok {
		t.Type = "text"
		out[len(out)-1] = t
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestKeyCanonical(t *testing.T) {
	base, _ := cache.Key("weather.current", "", map[string]any{"city": "Oslo", "days": 1.0, "units": "metric"})
	tests := []struct {
		name   string
		tool   string
		tenant string
		args   map[string]any
		same   bool
	}{
		{"same", "weather.current", "", map[string]any{"units": "metric", "city": "Oslo", "days": 1.0}, true},
		{"int", "weather.current", "", map[string]any{"units": "metric", "city": "Oslo", "days": 1}, true},
		{"json.Number", "weather.current", "", map[string]any{"units": "metric", "city": "Oslo", "days": json.Number("1.0")}, true},
		{"exponent", "weather.current", "", map[string]any{"units": "metric", "city": "Oslo", "days": json.Number("1e0")}, true},
		{"other value", "weather.current", "", map[string]any{"units": "metric", "city": "Bergen", "days": 1.0}, false},
		{"other tool", "weather-a/current", "", map[string]any{"units": "metric", "city": "Oslo", "days": 1.0}, false},
		{"tenant", "weather.current", "acme", map[string]any{"units": "metric", "city": "Oslo", "days": 1.0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := cache.Key(tt.tool, tt.tenant, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if (k == base) != tt.same {
				t.Errorf("key %q vs %q: same = %v, want %v", k, base, k == base, tt.same)
			}
		})
	}
	got, _ := cache.Canonical(map[string]any{"b": []any{1, 2.5, "x", true, nil}, "a": map[string]any{"z": 1, "y": math.Copysign(0, -1)}})
	if want := `{"a":{"y":0,"z":1},"b":[1,2.5,"x",true,null]}`; string(got) != want {
		t.Errorf("canonical = %s, want %s", got, want)
	}
}
