package servers

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/hub"
)

// scanSeeds are results and messages where the scanning readers must
// either decline or read what encoding/json reads: keys in other cases,
// escaped keys and strings, repeated keys, null and mistyped values.
var scanSeeds = []string{
	`{"content":[{"type":"text","text":"caf\u00e9 \"q\""}]}`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff utf8\"}]}",
	`{"content":[{"type":"text","text":null}]}`,
	`{"content":[{"type":"text","\u0074ext":"escaped key"}]}`,
	`{"content":[{"type":"text","TEXT":"folded key"}]}`,
	`{"content":[{"type":"text","text":"a","text":"b"}]}`,
	`{"content":[{"type":"text","text":"a","other":{"x":[1]}}],"extra":true}`,
	`{"content":[5]}`,
	`{"content":[{"type":"text","text":"x"}],"isError":null}`,
	`{"content":[{"type":"text","text":"x"}],"isError":"yes"}`,
	`{"content":[{"type":"text","text":"x"}],"isError":true,"isError":false}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":1e400}}`,
	`{"content":[{"type":"text","text":"x"}],"resultType":""}`,
	`{"content":[{"type":"text","text":"x"}],"_meta":null}`,
	`{"content":[{"type":"video","text":"x"}]}`,
	` {"content" : [ ] , "structuredContent" : [1, {"a":"b"}] } `,
}

var messageSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":"s-1","result":null}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad","data":[1]}}`,
	`{"jsonrpc":"2.0","id":1,"error":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":5}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
	`{"jsonrpc":"2.0","method":"a\u002fb"}`,
	`{"jsonrpc":"2.0","method":7}`,
	`{"jsonrpc":"2.0","ID":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}{"trailing":1}`,
	`null`,
	`[]`,
}

// checkScanResult: when scanResult reads raw, it reads what the typed
// pass does.
func checkScanResult(t *testing.T, raw []byte) {
	t.Helper()
	got, ok := scanResult(raw)
	if !ok {
		return
	}
	want, err := decodeResultTyped(raw)
	if err != nil {
		t.Fatalf("%s: scanResult read it, the typed pass fails: %v", raw, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s: (-typed +scanResult):\n%s", raw, d)
	}
}

// checkScanMessage: when scanMessage reads data, it reads what
// decodeMessage does.
func checkScanMessage(t *testing.T, data []byte) {
	t.Helper()
	got, ok := scanMessage(data)
	if !ok {
		return
	}
	want, err := decodeMessage(data)
	if err != nil {
		t.Fatalf("%s: scanMessage read it, decodeMessage fails: %v", data, err)
	}
	if !bytes.Equal(got.id, want.id) || (got.id == nil) != (want.id == nil) || got.method != want.method ||
		!bytes.Equal(got.result, want.result) || (got.result == nil) != (want.result == nil) || !cmp.Equal(got.err, want.err) {
		t.Fatalf("%s: scanMessage %+v, decodeMessage %+v", data, got, want)
	}
}

func TestScanReadsWhatEncodingJSONReads(t *testing.T) {
	for _, s := range append(append([]string{}, decodeSeeds...), scanSeeds...) {
		checkScanResult(t, []byte(s))
		checkDecode(t, []byte(s))
		checkScanMessage(t, []byte(`{"jsonrpc":"2.0","id":1,"result":`+s+`}`))
	}
	for _, s := range messageSeeds {
		checkScanMessage(t, []byte(s))
	}
}

// The usual result and response are read by the scanners, not left to
// encoding/json: the fast path's one pass.
func TestScanReadsTheUsualShape(t *testing.T) {
	raw := []byte(`{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"structuredContent":{"a":1},"isError":false}`)
	r, ok := scanResult(raw)
	if !ok {
		t.Fatal("scanResult declined the usual result")
	}
	if len(r.Content) != 2 || r.IsError || r.Structured == nil || !bytes.Equal(r.Raw, raw) {
		t.Fatalf("scanResult: %+v", r)
	}
	m, ok := scanMessage([]byte(`{"jsonrpc":"2.0","id":12,"result":` + string(raw) + `}`))
	if !ok || string(m.id) != "12" || !bytes.Equal(m.result, raw) || m.err != nil {
		t.Fatalf("scanMessage: %+v, %v", m, ok)
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"The weather in Paris is 18 degrees and sunny, with a light breeze from the west."}],"isError":false}}`)
	decode := func(b *testing.B, msg func([]byte) (wireMessage, error), res func([]byte) (*hub.Result, error)) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := msg(body)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := res(bytes.Clone(m.result)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("encoding-json", func(b *testing.B) { decode(b, decodeMessage, decodeResultTyped) })
	b.Run("jsonscan", func(b *testing.B) { decode(b, parseMessage, decodeResult) })
}
