package vendors_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhub/toolhub/examples/vendors"
)

// fixedNow keeps observed_at stable.
var fixedNow = func() time.Time { return time.Date(2026, 5, 1, 12, 30, 45, 0, time.UTC) }

// newVendor returns a vendor with a fixed clock, closed at the end of the test.
func newVendor(t *testing.T, name string, opts *vendors.Options) *vendors.Vendor {
	t.Helper()
	if opts == nil {
		opts = &vendors.Options{}
	}
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	v, err := vendors.New(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// serve serves vs over tr on an httptest server and returns its URL.
func serve(t *testing.T, tr vendors.Transport, vs ...*vendors.Vendor) string {
	t.Helper()
	h, err := vendors.Handler(tr, vs...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		for _, v := range vs {
			v.Close() // release hanging calls
		}
		srv.CloseClientConnections() // SSE and listen streams do not end on their own
		srv.Close()
	})
	return srv.URL
}

// A dialect is one way a client reaches a vendor.
type dialect struct {
	name string
	tr   vendors.Transport
	dial func(t *testing.T, base string, httpClient *http.Client) *client.Client
}

var dialects = []dialect{
	{"http", vendors.HTTP, func(t *testing.T, base string, hc *http.Client) *client.Client {
		return start(t, newStreamable(t, base+"/mcp", hc))
	}},
	{"http-legacy", vendors.HTTP, func(t *testing.T, base string, hc *http.Client) *client.Client {
		return start(t, newStreamable(t, base+"/mcp", hc), client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}},
	{"sse", vendors.SSE, func(t *testing.T, base string, hc *http.Client) *client.Client {
		var opts []transport.ClientOption
		if hc != nil {
			opts = append(opts, transport.WithHTTPClient(hc))
		}
		tr, err := transport.NewSSE(base+"/sse", opts...)
		if err != nil {
			t.Fatal(err)
		}
		return start(t, tr)
	}},
}

func newStreamable(t *testing.T, url string, hc *http.Client) transport.Interface {
	t.Helper()
	var opts []transport.StreamableHTTPCOption
	if hc != nil {
		opts = append(opts, transport.WithHTTPBasicClient(hc))
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// start starts and initializes a client on tr, closed at the end of the test.
func start(t *testing.T, tr transport.Interface, opts ...client.ClientOption) *client.Client {
	t.Helper()
	c := client.NewClient(tr, opts...)
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "vendors-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// stdioClient serves v over stdio through in-memory pipes.
func stdioClient(t *testing.T, v *vendors.Vendor) *client.Client {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		server.NewStdioServer(v.MCPServer()).Listen(ctx, serverIn, serverOut)
	}()
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		serverOut.Close()
		<-done
	})
	return start(t, transport.NewIO(clientIn, clientOut, nil))
}

func call(t *testing.T, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := callErr(t.Context(), c, tool, args)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

func callErr(ctx context.Context, c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	return c.CallTool(ctx, req)
}

// compile compiles a JSON Schema given as any JSON-marshalable value.
func compile(t *testing.T, schema any) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatalf("compile %s: %v", raw, err)
	}
	return s
}

// structured returns res's structuredContent decoded for jsonschema.
func structured(t *testing.T, res *mcp.CallToolResult) any {
	t.Helper()
	raw := []byte(res.RawStructuredContent)
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(res.StructuredContent); err != nil {
			t.Fatal(err)
		}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// outputSchema returns the output schema tools/list announced for tool.
func outputSchema(t *testing.T, c *client.Client, tool string) *jsonschema.Schema {
	t.Helper()
	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if tl.Name == tool {
			return compile(t, tl.OutputSchema)
		}
	}
	t.Fatalf("tool %q not listed", tool)
	return nil
}

// sampleCalls has one valid call per vendor.
var sampleCalls = []struct {
	vendor, tool string
	args         map[string]any
	image        bool
}{
	{vendors.WeatherA, "current_weather", map[string]any{"city": "Paris", "units": "imperial"}, false},
	{vendors.WeatherB, "current_weather", map[string]any{"location": "Paris"}, false},
	{vendors.Maps, "route", map[string]any{"from": "Louvre", "to": "Orsay", "mode": "walking"}, false},
	{vendors.Places, "search_restaurants", map[string]any{"near": "Shibuya", "cuisine": "Japanese", "limit": 3}, false},
	{vendors.Doubao, "generate_image", map[string]any{"prompt": "a red fox", "size": "512x512"}, true},
	{vendors.SD, "txt2img", map[string]any{"text": "a red fox", "width": 256, "height": 128}, true},
}

// TestCatalog serves all six vendors on one listener, per dialect, and checks
// that each lists its tool with compilable schemas and answers a call with
// structured output valid against its own output schema.
func TestCatalog(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			var vs []*vendors.Vendor
			for _, name := range vendors.Names() {
				vs = append(vs, newVendor(t, name, nil))
			}
			base := serve(t, d.tr, vs...)
			for _, sc := range sampleCalls {
				t.Run(sc.vendor, func(t *testing.T) {
					c := d.dial(t, base+"/"+sc.vendor, nil)
					list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
					if err != nil {
						t.Fatal(err)
					}
					if len(list.Tools) != 1 || list.Tools[0].Name != sc.tool {
						t.Fatalf("tools/list = %v, want just %q", list.Tools, sc.tool)
					}
					in := compile(t, list.Tools[0].InputSchema)
					if err := in.Validate(roundTrip(t, sc.args)); err != nil {
						t.Errorf("sample args do not fit the input schema: %v", err)
					}
					out := compile(t, list.Tools[0].OutputSchema)

					res := call(t, c, sc.tool, sc.args)
					if res.IsError {
						t.Fatalf("isError: %v", res.Content)
					}
					if err := out.Validate(structured(t, res)); err != nil {
						t.Errorf("structuredContent violates the output schema: %v", err)
					}
					if sc.image {
						checkImage(t, res)
					}
				})
			}
		})
	}
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkImage checks the result carries a PNG of the reported size and one image.
func checkImage(t *testing.T, res *mcp.CallToolResult) {
	t.Helper()
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := mcp.AsImageContent(c); ok {
			img = ic
		}
	}
	if img == nil || img.MIMEType != "image/png" {
		t.Fatalf("no image/png content in %v", res.Content)
	}
	raw, err := base64.StdEncoding.DecodeString(img.Data)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	var got struct{ Width, Height, Images int }
	if err := json.Unmarshal(res.RawStructuredContent, &got); err != nil {
		t.Fatal(err)
	}
	if cfg.Width != got.Width || cfg.Height != got.Height || got.Images != 1 {
		t.Errorf("PNG is %dx%d; structured says %dx%d, images %d", cfg.Width, cfg.Height, got.Width, got.Height, got.Images)
	}
}

// TestStdio serves a vendor over the stdio transport.
func TestStdio(t *testing.T) {
	c := stdioClient(t, newVendor(t, vendors.Maps, nil))
	res := call(t, c, "route", map[string]any{"from": "A", "to": "B"})
	if res.IsError {
		t.Fatalf("isError: %v", res.Content)
	}
	if err := outputSchema(t, c, "route").Validate(structured(t, res)); err != nil {
		t.Error(err)
	}
}

// TestDeterministic checks that answers depend only on the input, and that
// weather-a and weather-b agree once their names are mapped.
func TestDeterministic(t *testing.T) {
	a := stdioClient(t, newVendor(t, vendors.WeatherA, nil))
	b := stdioClient(t, newVendor(t, vendors.WeatherB, nil))

	first := call(t, a, "current_weather", map[string]any{"city": "Lisbon"}).StructuredContent
	again := call(t, a, "current_weather", map[string]any{"city": " lisbon "}).StructuredContent.(map[string]any)
	again["city"] = "Lisbon" // echoed as given
	if diff := cmp.Diff(first, any(again)); diff != "" {
		t.Errorf("same city, different weather (-first +again):\n%s", diff)
	}

	fromB := call(t, b, "current_weather", map[string]any{"location": "Lisbon"}).StructuredContent.(map[string]any)
	mapped := map[string]any{
		"city":        fromB["location"],
		"temp_c":      fromB["temperature"],
		"condition":   fromB["condition"],
		"humidity":    fromB["humidity"],
		"observed_at": fromB["observed_at"],
	}
	if diff := cmp.Diff(first, any(mapped)); diff != "" {
		t.Errorf("weather-a and mapped weather-b disagree (-a +b):\n%s", diff)
	}
	if got := first.(map[string]any)["observed_at"]; got != "2026-05-01T12:30:00Z" {
		t.Errorf("observed_at = %v, want the injected clock truncated to the minute", got)
	}
}

// TestInvalidArguments checks a vendor rejects arguments its input schema
// forbids, such as weather-a's name for weather-b's argument.
func TestInvalidArguments(t *testing.T) {
	v := newVendor(t, vendors.WeatherB, nil)
	c := stdioClient(t, v)
	res := call(t, c, "current_weather", map[string]any{"city": "Paris"})
	if !res.IsError {
		t.Fatalf("want isError for an unknown argument, got %v", res.StructuredContent)
	}
	got := v.Counters()
	if got.CallsTotal != 1 || got.Failed != 1 {
		t.Errorf("counters = %+v, want 1 call, 1 failed", got)
	}
}

func TestNew(t *testing.T) {
	if _, err := vendors.New("weather-c", nil); err == nil || !strings.Contains(err.Error(), "weather-a") {
		t.Errorf("New(unknown) = %v, want an error listing the known vendors", err)
	}
	_, err := vendors.New(vendors.Maps, &vendors.Options{Knobs: vendors.Knobs{Tools: []string{"teleport"}}})
	if err == nil || !strings.Contains(err.Error(), `"teleport"`) {
		t.Errorf("New with unknown tool = %v, want an error naming it", err)
	}
	if got, want := vendors.Names(), []string{"doubao", "maps", "places", "sd", "weather-a", "weather-b"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

// heldSleep is a vendor's Sleep that holds each call until release is
// closed, sending on entered as each call comes in (entered holds buffer
// sends without a reader).
func heldSleep(buffer int) (entered chan struct{}, release chan struct{}, sleep func(context.Context, time.Duration) error) {
	entered, release = make(chan struct{}, buffer), make(chan struct{})
	return entered, release, func(ctx context.Context, _ time.Duration) error {
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
