package security

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// hugeListVendor is an MCP server (mcp-go over streamable HTTP) whose
// tools/list answers are pages of one tool each with a description of
// descBytes bytes, pages of them, written as they are sent (never held
// whole) and counted: sent is every byte of tools/list answers the
// vendor's socket took. Its socket's send buffer is small, so what it took
// is what the hub read, give or take the hub's own receive buffer.
type hugeListVendor struct {
	ts    *httptest.Server
	sent  atomic.Int64
	pages atomic.Int64
}

func newHugeListVendor(t *testing.T, pages, descBytes int) *hugeListVendor {
	v := &hugeListVendor{}
	inner := newTestVendor(t, echoServer())
	v.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			_ = json.Unmarshal(b, &msg)
		}
		if msg.Method != "tools/list" {
			inner.ts.Config.Handler.ServeHTTP(w, r)
			return
		}
		page, _ := strconv.Atoi(strings.TrimPrefix(msg.Params.Cursor, "p"))
		v.pages.Add(1)
		next := ""
		if page+1 < pages {
			next = fmt.Sprintf(`,"nextCursor":"p%d"`, page+1)
		}
		w.Header().Set("Content-Type", "application/json")
		write := func(s []byte) bool {
			n, err := w.Write(s)
			v.sent.Add(int64(n))
			return err == nil
		}
		if !write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"big%d","inputSchema":{"type":"object"},"description":"`, msg.ID, page)) {
			return
		}
		chunk := bytes.Repeat([]byte("d"), 64<<10)
		for left := descBytes; left > 0; left -= len(chunk) {
			if !write(chunk[:min(len(chunk), left)]) {
				return
			}
		}
		write(fmt.Appendf(nil, `"}]%s}}`, next))
	}))
	v.ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && s == http.StateNew {
			_ = tc.SetWriteBuffer(16 << 10)
		}
	}
	v.ts.Start()
	t.Cleanup(func() { v.ts.CloseClientConnections(); v.ts.Close() })
	return v
}

// hwm is a process's peak resident memory (VmHWM) in MB.
func hwm(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Logf("VmHWM: %v", err)
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb >> 10
		}
	}
	return 0
}

// Issue 28, leftovers: a vendor whose tools/list pages carry 16 × 8 MiB
// descriptions drove the hub's peak RSS past 300 MB: each page (under the
// 16 MiB bound of one answer) was read whole and decoded, and only then
// were its tools checked against the bounds. The bounds of a tools/list
// page are now enforced while it is read: the hub stops reading at the
// first string longer than any tool field may be (1 MiB), so the vendor's
// socket takes little more than that of the first page, the registration
// fails naming the bound, and the hub keeps serving. The hub's VmHWM is
// logged (docs/security.md has the figures), not asserted.
func TestToolsListBoundedWhileReading(t *testing.T) {
	const pages, desc = 16, 8 << 20
	huge := newHugeListVendor(t, pages, desc)
	good := newTestVendor(t, echoServer())
	keys := map[string][]string{"operator": {"--role", "operator"}, "acme": {"--role", "tenant", "--tenant", "acme"}}
	h := startHub(t, vendorHubConfig(huge.ts.Listener.Addr().String(), good.addr()), nil, keys)
	before := hwm(t, h.p.Pid())

	st, m := h.register("operator", "huge", mcpSpec(huge.ts.URL+"/mcp"))
	t.Logf("toolhub serve VmHWM: %d MB before, %d MB after registering a vendor of %d pages × %d MiB descriptions; the vendor sent %d bytes in %d pages",
		before, hwm(t, h.p.Pid()), pages, desc>>20, huge.sent.Load(), huge.pages.Load())
	if st != 503 || !strings.Contains(fmt.Sprint(m), "over the 1048576-byte limit") {
		t.Errorf("registering the vendor: %d %.600v; want 503 naming the 1 MiB limit of a string in a tools/list page", st, m)
	}
	// The hub read at most the 1 MiB bound and the envelope of page 1; the
	// rest is its receive buffer (the kernel's autotuning keeps at most a
	// few MiB of a fast reader's data) and the vendor's small send buffer.
	const slack = 8 << 20
	if got := huge.sent.Load(); got > 1<<20+slack {
		t.Errorf("the vendor's socket took %d bytes of tools/list answers; want at most %d (the 1 MiB bound and slack)", got, 1<<20+slack)
	}
	if got := huge.pages.Load(); got != 1 {
		t.Errorf("the hub asked for %d tools/list pages; want 1 (it stops at the first page over a bound)", got)
	}

	// The hub keeps serving: another vendor registers and is listed.
	if st, m := h.register("operator", "good", mcpSpec(good.ts.URL+"/mcp")); st != 200 {
		t.Fatalf("registering a well-behaved vendor after: %d %v", st, m)
	}
	h.waitReady("operator", "good")
	if !h.listsTool("acme", "good__echo") {
		t.Error("the well-behaved vendor's tool is not listed")
	}
}
