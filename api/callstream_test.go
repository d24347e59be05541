package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// sseMessages returns the JSON messages of an answer (see answer): the
// data of each event of an event stream, or the body of a JSON answer.
func sseMessages(t testing.TB, hdr http.Header, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range answer(hdr, http.StatusOK, body).Messages {
		o, ok := m.(map[string]any)
		if !ok {
			t.Fatalf("message %.200v is not a JSON object", m)
		}
		out = append(out, o)
	}
	return out
}

// TestProgressBeforeResult: every progress notification a vendor sends
// during a call reaches the client on the call's answer, before its
// result. On mcp-go's queue one went missing now and then (a request's
// forwarder that had ended took it off the session's channel and dropped
// it, or the last one raced the result).
func TestProgressBeforeResult(t *testing.T) {
	cat := registry.NewCatalog()
	cat.SetVendorTools("talk", []registry.ToolDef{{Name: "say", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	ups := upstreams{"talk": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		p := hub.PeerFrom(ctx)
		for i := 1; i <= 3; i++ {
			if err := p.Notify(string(mcp.MethodNotificationProgress), map[string]any{"progressToken": c.Meta["progressToken"], "progress": i, "total": 3}); err != nil {
				return nil, err
			}
		}
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("said")}}, nil
	}}
	s := NewServer(hub.NewGateway(cat, ups, nil), nil)
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s)
	defer ts.Close()
	sid := mcpSession(t, ts.URL+"/mcp", "{}")

	const workers, calls = 4, 75
	var wg sync.WaitGroup
	errs := make(chan string, workers*calls)
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				token := fmt.Sprintf("p%d-%d", w, i)
				hdr, status, body := post2(t, ts.URL+"/mcp", sid, nil,
					`{"jsonrpc":"2.0","id":"`+token+`","method":"tools/call","params":{"name":"talk__say","arguments":{},"_meta":{"progressToken":"`+token+`"}}}`)
				msgs := sseMessages(t, hdr, body)
				var got []string
				for _, m := range msgs {
					switch {
					case m["method"] == "notifications/progress":
						p, _ := m["params"].(map[string]any)
						got = append(got, fmt.Sprintf("progress %v %v", p["progressToken"], p["progress"]))
					case m["id"] != nil:
						got = append(got, fmt.Sprintf("result %v", m["id"]))
					default:
						got = append(got, fmt.Sprintf("other %v", m))
					}
				}
				want := []string{"progress " + token + " 1", "progress " + token + " 2", "progress " + token + " 3", "result " + token}
				if status != 200 || strings.Join(got, "; ") != strings.Join(want, "; ") {
					errs <- fmt.Sprintf("call %s: status %d, got %q, want %q", token, status, got, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		if n++; n <= 5 {
			t.Error(e)
		}
	}
	if n > 0 {
		t.Errorf("%d of %d calls did not get their progress before their result", n, workers*calls)
	}
	if f := s.mcp.fastServed.Load(); f != 0 {
		t.Errorf("%d calls answered on the fast path; a progress token leaves them to mcp-go", f)
	}
}

// TestSlowClientDoesNotStallVendor: a client that does not read its
// answer does not hold up the vendor sending notifications for the call
// (the vendor connection's reader serves every call of the vendor): what
// the client's stream cannot take is dropped, what it gets is in order
// and ends with the result. On the fast path the notifications used to be
// written on the vendor's reader, which waited for the client.
func TestSlowClientDoesNotStallVendor(t *testing.T) {
	for _, path := range []struct {
		name, meta string
		fast       int64 // calls the fast path answers
	}{
		{"fast", ``, 1},
		{"mcp-go", `,"_meta":{"progressToken":"slow"}`, 0}, // a progress token leaves the call to mcp-go
	} {
		t.Run(path.name, func(t *testing.T) {
			// 12.8 MB of notifications: more than the sockets hold while the
			// client does not read (a receive buffer grows only as its
			// reader reads; Linux's tcp_wmem caps the sender's at 4 MiB) and
			// the call's queue: the stream fills, and what it cannot take is
			// dropped.
			const notes = 400
			pad := strings.Repeat("x", 32<<10)
			vendorDone := make(chan struct{})
			cat := registry.NewCatalog()
			cat.SetVendorTools("loud", []registry.ToolDef{{Name: "shout", InputSchema: json.RawMessage(`{"type":"object"}`)}})
			ups := upstreams{"loud": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
				p := hub.PeerFrom(ctx)
				for i := range notes {
					_ = p.Notify(string(mcp.MethodNotificationMessage), map[string]any{"level": "error", "data": map[string]any{"i": i, "pad": pad}})
				}
				close(vendorDone)
				return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("done")}}, nil
			}}
			s := NewServer(hub.NewGateway(cat, ups, nil), &Options{MaxBodyBytes: 1 << 20})
			t.Cleanup(func() { s.Close() })
			ts := httptest.NewServer(s)
			defer ts.Close()
			sid := mcpSession(t, ts.URL+"/mcp", "{}")

			req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"loud__shout","arguments":{}`+path.meta+`}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(server.HeaderKeySessionID, sid)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			// The client reads nothing until the vendor is done.
			select {
			case <-vendorDone:
			case <-time.After(time.Minute):
				t.Fatal("the vendor is still sending after a minute: a client that does not read holds it up")
			}
			var body bytes.Buffer
			if _, err := bufio.NewReader(resp.Body).WriteTo(&body); err != nil {
				t.Fatal(err)
			}
			msgs := sseMessages(t, resp.Header, body.Bytes())
			if len(msgs) < 2 {
				t.Fatalf("got %d messages, want notifications and the result", len(msgs))
			}
			last := -1
			for _, m := range msgs[:len(msgs)-1] {
				p, _ := m["params"].(map[string]any)
				d, _ := p["data"].(map[string]any)
				i, ok := d["i"].(float64)
				if m["method"] != "notifications/message" || !ok || int(i) <= last {
					t.Fatalf("after note %d got %.200v", last, m)
				}
				last = int(i)
			}
			if res := msgs[len(msgs)-1]; res["id"] != float64(7) || res["result"] == nil {
				t.Errorf("last message %.300v, want the result of call 7", res)
			}
			if f := s.mcp.fastServed.Load(); f != path.fast {
				t.Errorf("%d calls answered on the fast path, want %d", f, path.fast)
			}
			t.Logf("%d of %d notifications reached the client", len(msgs)-1, notes)
			if len(msgs)-1 >= notes {
				t.Errorf("all %d notifications reached the client: the stream never filled, so this run did not test a client that does not read", notes)
			}
		})
	}
}
