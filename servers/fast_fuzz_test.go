package servers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/hub/vendorconn"
)

// FuzzFastResponse fuzzes the fast path's response reader: a vendor's
// answer to a tools/call, as a JSON body or as an event stream, read by
// fastPath.read and decoded by decodeResult. Nothing may panic or hang; a
// result it takes decodes as mcp-go's ParseCallToolResult decodes it
// (same error, or the same Content, Structured and IsError), and Raw never
// keeps a _meta key that is toolhub's own.
func FuzzFastResponse(f *testing.F) {
	for _, s := range append(append([]string{}, decodeSeeds...), scanSeeds...) {
		f.Add(false, []byte(`{"jsonrpc":"2.0","id":1,"result":`+s+`}`))
		f.Add(true, []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":"+s+"}\n\n"))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad","data":[1]}}`,
		`{"jsonrpc":"2.0","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}{"trailing":1}`,
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"toolhub-1\",\"progress\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\n" +
			"data: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\r\n\r\n",
		"id: 7\nretry: 5\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"ping\"}\n\n: c\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}",
		"data: " + strings.Repeat("x", 70000) + "\n\n",
	} {
		f.Add(strings.HasPrefix(s, "data") || strings.HasPrefix(s, "id"), []byte(s))
	}
	f.Fuzz(func(t *testing.T, sse bool, body []byte) {
		checkScanMessage(t, body)
		fp := fuzzFastPath()
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		resp.Header.Set("Content-Type", "application/json")
		if sse {
			resp.Header.Set("Content-Type", "text/event-stream")
		}
		raw, err := fp.read(context.Background(), resp, 1)
		if err != nil {
			return
		}
		checkDecode(t, raw)
		checkScanResult(t, raw)
	})
}

// fuzzFastPath is a fast path on no connection: notifications are
// dropped, the vendor's requests answered into the void.
func fuzzFastPath() *fastPath {
	v := &vendor{id: "fz", log: discardLogger(), red: &vendorconn.Redactor{}}
	c := &conn{v: v, ctx: context.Background()}
	fp := &fastPath{c: c, tap: &httpTap{}, header: http.Header{},
		client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusAccepted, Body: io.NopCloser(bytes.NewReader(nil)), Header: http.Header{}}, nil
		})}}
	fp.url, _ = url.Parse("http://vendor.invalid/mcp")
	return fp
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
