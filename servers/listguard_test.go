package servers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/registry"
)

// endless is a reader of head, then filler bytes for ever (or n of them,
// then tail), counting what was read.
type endless struct {
	head, tail []byte
	filler     byte
	n          int64 // filler bytes; < 0: no end
	read       int64
}

func (e *endless) Read(p []byte) (int, error) {
	k := 0
	for k < len(p) {
		switch {
		case len(e.head) > 0:
			c := copy(p[k:], e.head)
			e.head, k = e.head[c:], k+c
		case e.n != 0:
			c := len(p) - k
			if e.n > 0 {
				c = int(min(int64(c), e.n))
				e.n -= int64(c)
			}
			for i := range c {
				p[k+i] = e.filler
			}
			k += c
		case len(e.tail) > 0:
			c := copy(p[k:], e.tail)
			e.tail, k = e.tail[c:], k+c
		default:
			e.read += int64(k)
			if k == 0 {
				return 0, io.EOF
			}
			return k, nil
		}
	}
	e.read += int64(k)
	return k, nil
}

// Issue 28, leftovers: a tools/list answer was read whole (up to 16 MiB a
// page) before its tools were checked. Its body is now held to the
// tools/list bounds while it is read: the read fails, and the body is
// read no further, at the first string over MaxToolsListString and at a
// page over MaxToolsListPage.
func TestListBodyStopsReading(t *testing.T) {
	const chunk = 32 << 10
	for _, tc := range []struct {
		name  string
		body  *endless
		limit int64
		want  string
		max   int64 // bytes read at most
	}{
		{"one string", &endless{head: []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","description":"`), filler: 'd', n: -1},
			MaxToolsListPage, "over the 1048576-byte limit of any string", MaxToolsListString + chunk},
		{"the page", &endless{head: []byte(`{"result":{"tools":[`), filler: ' ', n: -1},
			MaxToolsListPage, "a page over the 6291456-byte limit", MaxToolsListPage + chunk},
		{"the sync's budget", &endless{head: []byte(`{"result":{"tools":[`), filler: ' ', n: -1},
			1 << 20, "over 16777216 bytes together", 1<<20 + chunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &record{listLimit: tc.limit}
			b := &listBody{rc: io.NopCloser(tc.body), scan: newBodyScan(tc.limit), rec: rec}
			buf := make([]byte, chunk)
			var err error
			for err == nil {
				_, err = b.Read(buf)
			}
			if !errors.Is(err, ErrToolListTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want ErrToolListTooLarge naming %q", err, tc.want)
			}
			if rec.snapshot().listErr == nil {
				t.Error("the record does not carry the error")
			}
			if tc.body.read > tc.max {
				t.Errorf("read %d bytes; want at most %d", tc.body.read, tc.max)
			}
			if _, again := b.Read(buf); again == nil || tc.body.read > tc.max {
				t.Error("the body reads on after the bound")
			}
		})
	}
}

// Escaped quotes and backslashes are part of a string: a string of \"
// pairs is one long string.
func TestListScanEscapes(t *testing.T) {
	s := newBodyScan(MaxToolsListPage)
	if _, err := s.feed([]byte(`{"a":"`)); err != nil {
		t.Fatal(err)
	}
	pair := bytes.Repeat([]byte(`\"\\`), 1<<10)
	var err error
	for i := 0; i < 1<<10 && err == nil; i++ {
		_, err = s.feed(pair)
	}
	if !errors.Is(err, ErrToolListTooLarge) {
		t.Errorf("4 MiB of escapes in one string: err = %v; want ErrToolListTooLarge", err)
	}
	// Many short strings are not one long one.
	s = newBodyScan(MaxToolsListPage)
	short := bytes.Repeat([]byte(`"abc\"d",`), 1<<10)
	for range 256 {
		if _, err := s.feed(short); err != nil {
			t.Fatalf("short strings: %v", err)
		}
	}
}

// On a stream (stdio, an SSE vendor's event stream) only answers to a
// tools/list in flight are held to its bounds: one over a bound is read to
// its end but not kept, and an error answer for its id takes its place;
// other messages pass as they came.
func TestStreamGuardRefusesListAnswer(t *testing.T) {
	for _, prefix := range []string{"", "data: "} {
		lists := &listIDs{}
		lists.add(int64(7), MaxToolsListBytes)
		lists.add("list-a", MaxToolsListBytes)
		big := strings.Repeat("d", 8<<20)
		callAnswer := prefix + `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("t", 2<<20) + `"}]}}` + "\n"
		var in bytes.Buffer
		in.WriteString(prefix + `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","description":"` + big + `"}]}}` + "\n")
		in.WriteString(callAnswer)
		in.WriteString("\n")
		in.WriteString(prefix + `{"jsonrpc":"2.0", "id" : "list-a" ,"result":{"tools":[{"name":"a","description":"` + big + `"}]}}` + "\n")
		l := &lineLimiter{r: bufio.NewReaderSize(&in, 64<<10), max: 16 << 20, log: discardLogger(), scan: newStreamScan(lists), prefix: prefix}

		l.fill()
		if c := l.buf.Cap(); c > MaxToolsListString+256<<10 {
			t.Errorf("%q: the guard held %d bytes of the refused answer; want at most about %d", prefix, c, MaxToolsListString)
		}
		var msg mcp.JSONRPCError
		line := l.buf.String()
		if !strings.HasPrefix(line, prefix) || json.Unmarshal([]byte(strings.TrimPrefix(line, prefix)), &msg) != nil ||
			fmt.Sprint(msg.ID.Value()) != "7" || msg.Error.Code != listRefusedCode || !strings.Contains(msg.Error.Message, "over the 1048576-byte limit") {
			t.Fatalf("%q: in place of the answer: %.300s", prefix, line)
		}
		l.buf.Reset()
		l.fill()
		if l.buf.String() != callAnswer {
			t.Errorf("%q: a tool call's answer with a 2 MiB string did not pass as it came (%d bytes)", prefix, l.buf.Len())
		}
		l.buf.Reset()
		l.fill() // the blank line
		l.buf.Reset()
		l.fill()
		if line := l.buf.String(); !strings.Contains(line, `"id":"list-a"`) || !strings.Contains(line, "over the 1048576-byte limit") {
			t.Errorf("%q: a string id: %.300s", prefix, line)
		}

		// A result before its id, while a tools/list is in flight.
		first := strings.NewReader(prefix + `{"jsonrpc":"2.0","result":{"tools":[{"name":"a","description":"` + big + `"}]},"id":7}` + "\n")
		l = &lineLimiter{r: bufio.NewReaderSize(first, 64<<10), max: 16 << 20, log: discardLogger(), scan: newStreamScan(lists), prefix: prefix}
		l.fill()
		if c := l.buf.Cap(); c > MaxToolsListString+256<<10 {
			t.Errorf("%q: the guard held %d bytes of an answer whose result came before its id", prefix, c)
		}
		if line := l.buf.String(); !strings.Contains(line, `"id":7,`) || !strings.Contains(line, "over the 1048576-byte limit") {
			t.Errorf("%q: a result before its id: %.300s", prefix, line)
		}
	}
}

// A tool sync stops at the first tools/list answer over a bound, on every
// transport, with the bound in its error, at once (not at the request's
// deadline).
func TestToolsListBoundedOnEveryTransport(t *testing.T) {
	huge := func() *server.MCPServer {
		s := newMCPServer()
		s.AddTool(mcp.NewTool("huge", mcp.WithDescription(strings.Repeat("d", 8<<20))), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
		return s
	}
	for _, tr := range []string{registry.TransportStdio, registry.TransportHTTP, registry.TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, nil)
			spec := stdioVendor("hv", "-huge-desc", "8388608")
			if tr != registry.TransportStdio {
				hv := newHTTPVendor(t, tr, huge())
				spec = httpSpec("hv", tr, hv.url())
			}
			if err := h.m.Add(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			st := h.waitStatus("hv", "unavailable", func(s VendorStatus) bool { return s.State == StateUnavailable || s.State == StateReady })
			if st.State != StateUnavailable || !strings.Contains(st.LastError, "over the 1048576-byte limit") {
				t.Errorf("state %s, last error %q; want unavailable over the 1 MiB bound of a string", st.State, st.LastError)
			}
		})
	}
}
