package servers

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

func TestStdioServesTools(t *testing.T) {
	h := newHarness(t, &Options{LookupEnv: func(k string) (string, bool) {
		switch k {
		case "PATH":
			return os.LookupEnv(k)
		case "VENDOR_SECRET":
			return "sekrit-value-1234", true
		case "NOT_PASSED":
			return "toolhub-only", true
		}
		return "", false
	}})
	dir := t.TempDir()
	spec := stdioVendor("tv")
	spec.MCP.Env = map[string]string{"TESTVENDOR_KEY": "k=${VENDOR_SECRET}"}
	spec.MCP.Dir = dir
	start := time.Now()
	if err := h.m.Add(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Add took %v; it must not wait for the connection", d)
	}
	st := h.waitReady("tv")
	if st.Transport != "stdio" || st.PID == 0 || st.Tools != 11 || st.LastToolSync.IsZero() || st.ConnectedSince.IsZero() {
		t.Errorf("status = %+v; want stdio, a pid, 11 tools, sync and connect times", st)
	}
	if st.Protocol == "" || !strings.HasPrefix(st.Server, "testvendor") {
		t.Errorf("protocol %q, server %q", st.Protocol, st.Server)
	}

	// The raw schema keeps keywords mcp-go's decoded mcp.Tool drops.
	echo, ok := h.cat.VendorTool("tv", "echo")
	if !ok {
		t.Fatal("echo not in the catalog")
	}
	if !strings.Contains(string(echo.Def.InputSchema), `"anyOf"`) {
		t.Errorf("echo input schema lost anyOf: %s", echo.Def.InputSchema)
	}
	if echo.Catalog != "tv__echo" {
		t.Errorf("catalog name %q", echo.Catalog)
	}
	if add, _ := h.cat.VendorTool("tv", "add"); add == nil || add.OutputSchema() == nil {
		t.Errorf("add has no output schema")
	}

	ctx := ctxTimeout(t, 10*time.Second)
	r, err := h.call(ctx, "tv", "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if text(r) != "hi" || r.IsError {
		t.Errorf("echo = %q (isError %v)", text(r), r.IsError)
	}
	if m, _ := r.Structured.(map[string]any); m["text"] != "hi" {
		t.Errorf("structured = %#v", r.Structured)
	}
	r, err = h.call(ctx, "tv", "add", map[string]any{"a": 2, "b": 3.5})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := r.Structured.(map[string]any); m["sum"] != 5.5 {
		t.Errorf("add structured = %#v", r.Structured)
	}
	if r, err = h.call(ctx, "tv", "fail", nil); err != nil || !r.IsError {
		t.Errorf("fail = %v, %v; want an isError result", r, err)
	}

	// Environment: ${VAR} expanded, only InheritEnv inherited; working dir.
	for _, c := range []struct {
		name, want string
		isErr      bool
	}{
		{"TESTVENDOR_KEY", "k=sekrit-value-1234", false},
		{"NOT_PASSED", "unset", true},
	} {
		r, err := h.call(ctx, "tv", "env", map[string]any{"name": c.name})
		if err != nil || text(r) != c.want || r.IsError != c.isErr {
			t.Errorf("env %s = %v, %v; want %q", c.name, r, err, c.want)
		}
	}
	if r, err := h.call(ctx, "tv", "cwd", nil); err != nil || text(r) != dir {
		t.Errorf("cwd = %v, %v; want %q", r, err, dir)
	}
	if strings.Contains(h.logs.String(), "sekrit-value-1234") {
		t.Errorf("the secret is in the log")
	}
}

func TestStdioKilledIsRestarted(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.Add(context.Background(), stdioVendor("tv")); err != nil {
		t.Fatal(err)
	}
	st := h.waitReady("tv")
	ctx := ctxTimeout(t, 10*time.Second)
	r, err := h.call(ctx, "tv", "pid", nil)
	if err != nil || text(r) != strconv.Itoa(st.PID) {
		t.Fatalf("pid = %v, %v; status says %d", r, err, st.PID)
	}

	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st2 := h.waitStatus("tv", "restarted and ready", func(s VendorStatus) bool {
		return s.State == StateReady && s.Restarts == 1 && s.PID != st.PID
	})
	if got := h.states("tv"); !slices.Equal(got, []State{StateConnecting, StateReady, StateUnavailable, StateConnecting, StateReady}) {
		t.Errorf("states = %v", got)
	}
	if !strings.Contains(st2.LastError, "signal: killed") {
		t.Errorf("last error = %q; want the exit status", st2.LastError)
	}
	r, err = h.call(ctx, "tv", "pid", nil)
	if err != nil || text(r) != strconv.Itoa(st2.PID) {
		t.Fatalf("after restart: pid = %v, %v; status says %d", r, err, st2.PID)
	}
}

func TestStdioExitAfterCallsIsRestarted(t *testing.T) {
	h := newHarness(t, nil)
	spec := stdioVendor("tv")
	spec.MCP.Env = map[string]string{"TESTVENDOR_EXIT_AFTER": "2"}
	if err := h.m.Add(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	st := h.waitReady("tv")
	ctx := ctxTimeout(t, 10*time.Second)
	for i := range 2 {
		if _, err := h.call(ctx, "tv", "echo", map[string]any{"text": "x"}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	h.waitStatus("tv", "restarted", func(s VendorStatus) bool {
		return s.State == StateReady && s.Restarts >= 1 && s.PID != st.PID
	})
	if _, err := h.call(ctx, "tv", "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if !strings.Contains(h.logs.String(), "exiting after 2 calls") {
		t.Errorf("vendor stderr not logged")
	}
}

func TestStdioCrashMidCall(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.Add(context.Background(), stdioVendor("tv")); err != nil {
		t.Fatal(err)
	}
	h.waitReady("tv")
	_, err := h.call(ctxTimeout(t, 10*time.Second), "tv", "crash", nil)
	if c := hub.CodeOf(err); c != hub.CodeUnavailable {
		t.Errorf("crash: code %q (%v); want unavailable", c, err)
	}
	h.waitStatus("tv", "restarted", func(s VendorStatus) bool { return s.State == StateReady && s.Restarts >= 1 })
}

func TestStdioBadSchemaToolIsLeftOut(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.Add(context.Background(), stdioVendor("tv", "-bad-schema")); err != nil {
		t.Fatal(err)
	}
	st := h.waitReady("tv")
	if st.Tools != 11 || len(st.Rejected) != 1 || st.Rejected[0].Tool != "broken" || st.Rejected[0].Part != "input schema" {
		t.Fatalf("status = %+v; want 11 tools and broken rejected", st)
	}
	if _, ok := h.cat.VendorTool("tv", "broken"); ok {
		t.Errorf("broken is in the catalog")
	}
	if _, err := h.call(ctxTimeout(t, 10*time.Second), "tv", "echo", map[string]any{"text": "x"}); err != nil {
		t.Errorf("echo: %v", err)
	}
	if n := strings.Count(h.logs.String(), `"msg":"vendor tool rejected"`); n != 1 {
		t.Errorf("rejection logged %d times; want once", n)
	}
	if !strings.Contains(h.logs.String(), `"tool":"broken"`) {
		t.Errorf("log does not name the tool")
	}
}

func TestStdioToolListChanged(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.Add(context.Background(), stdioVendor("tv")); err != nil {
		t.Fatal(err)
	}
	h.waitReady("tv")
	if _, err := h.call(ctxTimeout(t, 10*time.Second), "tv", "add_tool", map[string]any{"name": "late"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new tool in the catalog", func() bool {
		_, ok := h.cat.VendorTool("tv", "late")
		return ok
	})
	// The status counts the tools just after the catalog has them.
	waitFor(t, "the status to count 12 tools", func() bool { return h.m.Status("tv").Tools == 12 })
}

func TestStdioPaging(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.Add(context.Background(), stdioVendor("tv", "-page", "2")); err != nil {
		t.Fatal(err)
	}
	if st := h.waitReady("tv"); st.Tools != 11 {
		t.Errorf("tools = %d; want all 11 over 6 pages", st.Tools)
	}
}

func TestStdioTimeoutAndCancel(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.Add(context.Background(), stdioVendor("tv")); err != nil {
		t.Fatal(err)
	}
	h.waitReady("tv")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := h.call(ctx, "tv", "slow", map[string]any{"ms": 60000})
	if c := hub.CodeOf(err); c != hub.CodeTimeout {
		t.Errorf("code %q (%v); want timeout", c, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not wrap context.DeadlineExceeded", err)
	}
	// mcp-go sent notifications/cancelled, and the vendor stopped.
	waitFor(t, "the vendor to log the cancellation", func() bool {
		return strings.Contains(h.logs.String(), "testvendor: slow cancelled")
	})
	// A timeout does not count against the connection.
	if _, err := h.call(ctxTimeout(t, 10*time.Second), "tv", "echo", map[string]any{"text": "x"}); err != nil {
		t.Errorf("after timeout: %v", err)
	}
	if st := h.m.Status("tv"); st.State != StateReady || st.Restarts != 0 {
		t.Errorf("status after timeout = %+v", st)
	}
}

func TestStdioConcurrentCalls(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.Add(context.Background(), stdioVendor("tv")); err != nil {
		t.Fatal(err)
	}
	h.waitReady("tv")
	concurrentCalls(t, h, "tv")
}

// concurrentCalls runs many calls at once on one vendor's connection.
func concurrentCalls(t *testing.T, h *harness, vendor string) {
	t.Helper()
	ctx := ctxTimeout(t, 20*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			want := strconv.Itoa(i)
			r, err := h.call(ctx, vendor, "echo", map[string]any{"text": want})
			switch {
			case err != nil:
				errs <- err
			case text(r) != want:
				errs <- errors.New("got " + text(r) + ", want " + want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	b, _ := json.Marshal(h.m.Status(vendor))
	if st := h.m.Status(vendor); st.InFlight != 0 || st.Restarts != 0 {
		t.Errorf("status after concurrent calls: %s", b)
	}
}

func TestStdioVendorThatFailsToStart(t *testing.T) {
	h := newHarness(t, nil)
	spec := registry.Vendor{ID: "bad", MCP: &registry.MCPSpec{Transport: registry.TransportStdio,
		Command: "sh", Args: []string{"-c", "echo 'cannot open config' >&2; exit 7"}}}
	missing := registry.Vendor{ID: "missing", MCP: &registry.MCPSpec{Transport: registry.TransportStdio,
		Command: "no-such-command-here"}}
	for _, s := range []registry.Vendor{spec, missing} {
		if err := h.m.Add(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	st := h.waitStatus("bad", "unavailable", func(s VendorStatus) bool { return s.State == StateUnavailable })
	if !strings.Contains(st.LastError, "exit status 7") || !strings.Contains(st.LastError, "cannot open config") {
		t.Errorf("last error %q; want the exit status and stderr", st.LastError)
	}
	st = h.waitStatus("missing", "unavailable", func(s VendorStatus) bool { return s.State == StateUnavailable })
	if !strings.Contains(st.LastError, "no-such-command-here") {
		t.Errorf("last error %q", st.LastError)
	}
	// It keeps trying, with backoff.
	h.waitStatus("bad", "a few attempts", func(s VendorStatus) bool {
		n := 0
		for _, s := range h.states("bad") {
			if s == StateConnecting {
				n++
			}
		}
		return n >= 3
	})
}
