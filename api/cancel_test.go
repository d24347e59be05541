package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// Issue 28, leftovers: on protocol 2026-07-28 (no session) a
// notifications/cancelled found a call by its request id alone within the
// tenant: two clients of one tenant using the same id (both start at 1)
// could cancel each other's calls; on the fast path such a call could not
// be cancelled at all. A call in flight is now known by its caller's
// credential and request id: bob's cancel of request 7 ends bob's call 7,
// never alice's, on the fast path and through mcp-go.
func TestSessionlessCancelScopedToCaller(t *testing.T) {
	for _, off := range []bool{false, true} {
		name := "fast path"
		if off {
			name = "mcp-go"
		}
		t.Run(name, func(t *testing.T) {
			cat := registry.NewCatalog()
			cat.SetVendorTools("slow", []registry.ToolDef{{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}})
			var (
				mu      sync.Mutex
				ctxs    = map[string]context.Context{}
				started = make(chan string, 2)
				release = make(chan struct{})
			)
			ups := upstreams{"slow": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
				who, _ := c.Arguments["who"].(string)
				mu.Lock()
				ctxs[who] = ctx
				mu.Unlock()
				started <- who
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-release:
					return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("done " + who)}}, nil
				}
			}}
			s := NewServer(hub.NewGateway(cat, ups, nil), &Options{
				DisableFastPath: off,
				Authenticate: func(r *http.Request) (auth.Principal, error) {
					if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
						return auth.Principal{KeyID: key, Role: auth.RoleTenant, Tenant: "acme"}, nil
					}
					return auth.Principal{}, errors.New("no key")
				},
			})
			t.Cleanup(func() { s.Close() })
			ts := httptest.NewServer(s)
			t.Cleanup(ts.Close)

			hdr := func(key string, h map[string]string) map[string]string {
				h["Authorization"] = "Bearer " + key
				return h
			}
			call := func(key, who string) <-chan []byte {
				done := make(chan []byte, 1)
				go func() {
					_, _, b := post2(t, ts.URL+"/mcp", "", hdr(key, modernHdr("slow__wait")), modern("7", "slow__wait", `{"who":"`+who+`"}`, `{}`))
					done <- b
				}()
				return done
			}
			wait := func(want string) {
				select {
				case got := <-started:
					if got != want {
						t.Fatalf("started %q; want %q", got, want)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("%s's call did not start", want)
				}
			}
			// Bob's call starts first, alice's second: a lookup by request
			// id alone finds alice's (the later one) under bob's cancel.
			bob := call("bob-key", "bob")
			wait("bob")
			alice := call("alice-key", "alice")
			wait("alice")

			cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"_meta":{"` +
				mcp.MetaKeyProtocolVersion + `":"2026-07-28","` + mcp.MetaKeyClientCapabilities + `":{}}}}`
			_, st, b := post2(t, ts.URL+"/mcp", "", hdr("bob-key", map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728, mcp.HeaderMethod: "notifications/cancelled"}), cancel)
			if st != http.StatusAccepted {
				t.Errorf("notifications/cancelled: %d %s; want 202", st, b)
			}
			mu.Lock()
			aliceErr, bobErr := ctxs["alice"].Err(), ctxs["bob"].Err()
			mu.Unlock()
			if aliceErr != nil {
				t.Errorf("bob's cancel of request 7 ended alice's call 7: %v", aliceErr)
			}
			if bobErr == nil {
				t.Error("bob's cancel of request 7 did not end bob's call 7")
			}
			close(release)
			for who, ch := range map[string]<-chan []byte{"alice": alice, "bob": bob} {
				select {
				case b := <-ch:
					if who == "alice" && !strings.Contains(string(b), "done alice") {
						t.Errorf("alice's call answered %s; want its result", b)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("%s's call did not answer", who)
				}
			}
			if got := s.mcp.fastServed.Load(); off && got != 0 || !off && got != 2 {
				t.Errorf("fast calls: %d", got)
			}
		})
	}
}
