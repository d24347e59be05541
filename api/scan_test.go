package api

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather__now","arguments":{"city":"x"}}}`,
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t","arguments":null,"_meta":{"progressToken":1},"task":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{},"error":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"a"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}",
	`{"jsonrpc":2,"id":1,"method":"tools/call"}`,
	` {"jsonrpc" : "2.0" , "id" : [1] , "method" : "tools/list" , "extra" : {"a":[]}} `,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call"}x`,
	`[{"jsonrpc":"2.0"}]`, `null`, `}{`,
}

// checkScanEnvelope: when scanEnvelope reads body, it reads what
// json.Unmarshal reads into a fastEnvelope.
func checkScanEnvelope(t *testing.T, body []byte) {
	t.Helper()
	got, ok := scanEnvelope(body)
	if !ok {
		return
	}
	var want fastEnvelope
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("%s: scanEnvelope read it, encoding/json fails: %v", body, err)
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(fastParams{})); d != "" {
		t.Fatalf("%s: (-encoding/json +scanEnvelope):\n%s", body, d)
	}
}

func TestScanEnvelopeMatchesEncodingJSON(t *testing.T) {
	read := 0
	for _, s := range envelopeSeeds {
		checkScanEnvelope(t, []byte(s))
		if _, ok := scanEnvelope([]byte(s)); ok {
			read++
		}
	}
	if read < 6 {
		t.Errorf("scanEnvelope read %d of the seeds; the usual requests must not be left to encoding/json", read)
	}
}

func FuzzScanEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkScanEnvelope)
}

func BenchmarkDecodeEnvelope(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"weather__current_weather","arguments":{"city":"Paris","units":"metric"},"_meta":{"progressToken":"p-42"}}}`)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var env fastEnvelope
			if err := json.Unmarshal(body, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonscan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := scanEnvelope(body); !ok {
				b.Fatal("declined")
			}
		}
	})
}
