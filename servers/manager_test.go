package servers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// slowCall starts a slow call and waits until the vendor counts it in flight.
func slowCall(t *testing.T, h *harness, vendor string, ms int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		r, err := h.call(context.Background(), vendor, "slow", map[string]any{"ms": ms})
		if err == nil && text(r) != "done" {
			err = errors.New("slow answered " + text(r))
		}
		done <- err
	}()
	h.waitStatus(vendor, "a call in flight", func(s VendorStatus) bool { return s.InFlight == 1 })
	return done
}

func TestSync(t *testing.T) {
	h := newHarness(t, nil)
	a, b := stdioVendor("a"), stdioVendor("b")
	ctx := ctxTimeout(t, 20*time.Second)
	if err := h.m.Sync(ctx, []registry.Vendor{a, b, {ID: "agent", A2A: &registry.A2ASpec{Card: "http://127.0.0.1:1/card"}}}); err != nil {
		t.Fatal(err)
	}
	stA, stB := h.waitReady("a"), h.waitReady("b")
	if st := h.m.Status("agent"); st.State != "" {
		t.Errorf("A2A vendor is managed: %+v", st)
	}

	// Calls in flight on both while the set changes: a is unchanged, b's
	// connection changes (its env), c is new.
	callA, callB := slowCall(t, h, "a", 500), slowCall(t, h, "b", 500)
	b2 := stdioVendor("b")
	b2.MCP.Env = map[string]string{"TESTVENDOR_MARK": "2"}
	c := stdioVendor("c")
	if err := h.m.Sync(ctx, []registry.Vendor{a, b2, c}); err != nil {
		t.Fatal(err)
	}
	if err := <-callA; err != nil {
		t.Errorf("call on the unchanged vendor: %v", err)
	}
	if err := <-callB; err != nil {
		t.Errorf("call in flight on the replaced connection: %v", err)
	}
	if st := h.m.Status("a"); st.PID != stA.PID || st.ConnectedSince != stA.ConnectedSince || st.State != StateReady {
		t.Errorf("unchanged vendor a was touched: %+v", st)
	}
	st := h.waitReady("b")
	if st.PID == stB.PID {
		t.Errorf("b kept its process after its env changed")
	}
	if r, err := h.call(ctx, "b", "env", map[string]any{"name": "TESTVENDOR_MARK"}); err != nil || text(r) != "2" {
		t.Errorf("b's new env: %v, %v", r, err)
	}
	h.waitReady("c")

	// A change that is not about the connection keeps it.
	a2 := a
	a2.Timeout = registry.Duration(3 * time.Second)
	a2.Name = "Vendor A"
	if err := h.m.Sync(ctx, []registry.Vendor{a2, b2, c}); err != nil {
		t.Fatal(err)
	}
	if st := h.m.Status("a"); st.PID != stA.PID {
		t.Errorf("a timeout change reconnected it")
	}

	// Vendors gone from the set are removed, with their tools.
	pidC := h.m.Status("c").PID
	if err := h.m.Sync(ctx, []registry.Vendor{a2}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b", "c"} {
		if st := h.m.Status(id); st.State != "" {
			t.Errorf("%s still managed: %+v", id, st)
		}
		if n := len(h.cat.VendorTools(id)); n != 0 {
			t.Errorf("%s still has %d tools", id, n)
		}
		if _, ok := h.m.Upstream(id); ok {
			t.Errorf("%s still has an upstream", id)
		}
	}
	if err := syscall.Kill(pidC, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("c's process %d is still there (kill 0: %v)", pidC, err)
	}
	if got := h.cat.Vendors(); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("catalog vendors = %v", got)
	}
}

func TestAddUpdateRemoveErrors(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	if err := h.m.Add(ctx, stdioVendor("a")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"duplicate", h.m.Add(ctx, stdioVendor("a")), ErrDuplicateVendor},
		{"a2a", h.m.Add(ctx, registry.Vendor{ID: "x", A2A: &registry.A2ASpec{Card: "http://h/c"}}), ErrNotMCP},
		{"update unknown", h.m.Update(ctx, stdioVendor("nope")), ErrUnknownVendor},
		{"remove unknown", h.m.Remove(ctx, "nope"), ErrUnknownVendor},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, c.err, c.want)
		}
	}
	bad := registry.Vendor{ID: "Bad_ID", MCP: &registry.MCPSpec{Transport: "stdio", Command: "x"}}
	if err := h.m.Add(ctx, bad); err == nil || !strings.Contains(err.Error(), "vendor id") {
		t.Errorf("invalid spec: %v", err)
	}
	h.waitReady("a")
	pid := h.m.Status("a").PID
	if err := h.m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Add(ctx, stdioVendor("b")); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d survived Close (kill 0: %v)", pid, err)
	}
}

func TestDisabledVendor(t *testing.T) {
	h := newHarness(t, nil)
	ctx := ctxTimeout(t, 10*time.Second)
	spec := stdioVendor("a")
	if err := h.m.Add(ctx, spec); err != nil {
		t.Fatal(err)
	}
	h.waitReady("a")
	spec.Disabled = true
	if err := h.m.Update(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if st := h.m.Status("a"); st.State != StateDisabled || st.PID != 0 {
		t.Errorf("status = %+v", st)
	}
	// Its tools stay listed; calls fail fast.
	_, err := h.call(ctx, "a", "echo", map[string]any{"text": "x"})
	if c := hub.CodeOf(err); c != hub.CodeUnavailable || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("call to a disabled vendor: %v", err)
	}
	spec.Disabled = false
	if err := h.m.Update(ctx, spec); err != nil {
		t.Fatal(err)
	}
	h.waitReady("a")
	if _, err := h.call(ctx, "a", "echo", map[string]any{"text": "x"}); err != nil {
		t.Errorf("after re-enabling: %v", err)
	}
}

func TestMetaPassedWithoutTenant(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.Add(context.Background(), stdioVendor("a")); err != nil {
		t.Fatal(err)
	}
	h.waitReady("a")
	tool, _ := h.cat.VendorTool("a", "meta")
	inv, _ := h.m.Upstream("a")
	r, err := inv.Invoke(ctxTimeout(t, 10*time.Second), &hub.Call{
		Tool:   tool,
		Tenant: "acme",
		Meta: map[string]any{
			"progressToken":                      "p-1",
			"traceparent":                        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
			"tenant":                             "acme",
			"userId":                             "u-7",
			"x-session-id":                       "s-1",
			"io.modelcontextprotocol/clientInfo": map[string]any{"name": "acme-orchestrator"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(text(r)), &got); err != nil {
		t.Fatalf("meta %q: %v", text(r), err)
	}
	if got["progressToken"] != "p-1" || got["traceparent"] == nil {
		t.Errorf("vendor meta %v lacks the progress token or trace context", got)
	}
	for _, k := range []string{"tenant", "userId", "x-session-id"} {
		if _, ok := got[k]; ok {
			t.Errorf("vendor saw %q", k)
		}
	}
	if strings.Contains(text(r), "acme") {
		t.Errorf("vendor meta names the tenant: %s", text(r))
	}
}

func TestMaxResponseBytes(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		h := newHarness(t, &Options{MaxResponseBytes: 8 << 10})
		hv := newHTTPVendor(t, registry.TransportHTTP, newMCPServer())
		if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, hv.url())); err != nil {
			t.Fatal(err)
		}
		h.waitReady("hv")
		_, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": strings.Repeat("x", 64<<10)})
		if c := hub.CodeOf(err); c != hub.CodeUpstream || !errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("code %q (%v); want upstream_error, ErrResponseTooLarge", c, err)
		}
		if _, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "small"}); err != nil {
			t.Errorf("small answer: %v", err)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		h := newHarness(t, &Options{MaxResponseBytes: 8 << 10})
		if err := h.m.Add(context.Background(), stdioVendor("a")); err != nil {
			t.Fatal(err)
		}
		h.waitReady("a")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := h.call(ctx, "a", "big", map[string]any{"n": 64 << 10})
		if c := hub.CodeOf(err); c != hub.CodeTimeout {
			t.Errorf("code %q (%v); want timeout", c, err)
		}
		if !strings.Contains(h.logs.String(), "dropped an oversized message") {
			t.Errorf("the drop was not logged")
		}
		if r, err := h.call(ctxTimeout(t, 10*time.Second), "a", "big", map[string]any{"n": 100}); err != nil || len(text(r)) != 100 {
			t.Errorf("small answer after a dropped one: %v, %v", r, err)
		}
	})
}

func TestInvokeWithoutTool(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.Add(context.Background(), stdioVendor("a")); err != nil {
		t.Fatal(err)
	}
	inv, _ := h.m.Upstream("a")
	other, _ := registry.NewTool("b", registry.ToolDef{Name: "echo"})
	for _, c := range []*hub.Call{{}, {Tool: other}} {
		if _, err := inv.Invoke(context.Background(), c); hub.CodeOf(err) != hub.CodeInternal {
			t.Errorf("Invoke(%+v) = %v; want internal", c, err)
		}
	}
}

func TestVendorMeta(t *testing.T) {
	if vendorMeta(nil) != nil || vendorMeta(map[string]any{"tenant": "x"}) != nil {
		t.Errorf("want nil meta")
	}
	m := vendorMeta(map[string]any{"progressToken": 7, "traceparent": "t", "TenantID": "x", "auth": "y", "io.modelcontextprotocol/clientInfo": 1})
	if m.ProgressToken != 7 || !cmp.Equal(m.AdditionalFields, map[string]any{"traceparent": "t"}) {
		t.Errorf("meta = %+v", m)
	}
}

func TestLineLimiter(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 100) + "\nafter\n" + strings.Repeat("y", 30)
	var out strings.Builder
	var mu sync.Mutex
	l := &lineLimiter{r: newBufReader(in, 16), max: 20, log: discardLogger()}
	buf := make([]byte, 7)
	for {
		n, err := l.Read(buf)
		mu.Lock()
		out.Write(buf[:n])
		mu.Unlock()
		if err != nil {
			break
		}
	}
	if got, want := out.String(), "short\nafter\n"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
}
