package vendors_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/examples/vendors"
)

var weatherArgs = map[string]any{"city": "Oslo"}

func setKnobs(t *testing.T, v *vendors.Vendor, k vendors.Knobs) {
	t.Helper()
	if err := v.SetKnobs(k); err != nil {
		t.Fatal(err)
	}
}

func TestFail(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			v := newVendor(t, vendors.WeatherA, &vendors.Options{Knobs: vendors.Knobs{Mode: vendors.ModeFail}})
			c := d.dial(t, serve(t, d.tr, v), nil)
			res := call(t, c, "current_weather", weatherArgs)
			if !res.IsError {
				t.Fatalf("mode fail answered %v, want isError", res.StructuredContent)
			}
			if text, _ := mcp.AsTextContent(res.Content[0]); text == nil || !strings.Contains(text.Text, "injected") {
				t.Errorf("error text = %v, want it to say the fault is injected", res.Content)
			}
			if got := v.Counters(); got.CallsTotal != 1 || got.Failed != 1 || got.OK != 0 {
				t.Errorf("counters = %+v, want 1 call, 1 failed", got)
			}
		})
	}
}

// TestFailRate checks faults are spread evenly and deterministically.
func TestFailRate(t *testing.T) {
	tests := []struct {
		name  string
		knobs vendors.Knobs
		want  []bool // isError per call
	}{
		{"ok mode, half fail", vendors.Knobs{FailRate: 0.5}, []bool{true, false, true, false}},
		{"ok mode, quarter fail", vendors.Knobs{FailRate: 0.25}, []bool{true, false, false, false, true, false}},
		{"fail mode, rate zero means all", vendors.Knobs{Mode: vendors.ModeFail}, []bool{true, true, true}},
		{"garbage mode, rate one means all", vendors.Knobs{Mode: vendors.ModeGarbage, FailRate: 1}, []bool{false, false}},
		{"healthy", vendors.Knobs{}, []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVendor(t, vendors.WeatherA, &vendors.Options{Knobs: tt.knobs})
			c := stdioClient(t, v)
			var got []bool
			for range tt.want {
				got = append(got, call(t, c, "current_weather", weatherArgs).IsError)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("isError per call (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLatency checks slow mode and the latency knob wait through the
// injected Sleep, with no real waiting.
func TestLatency(t *testing.T) {
	tests := []struct {
		name  string
		knobs vendors.Knobs
		want  []time.Duration
	}{
		{"slow default", vendors.Knobs{Mode: vendors.ModeSlow}, []time.Duration{vendors.DefaultSlowLatency}},
		{"slow with latency", vendors.Knobs{Mode: vendors.ModeSlow, Latency: 300 * time.Millisecond}, []time.Duration{300 * time.Millisecond}},
		{"latency in ok mode", vendors.Knobs{Latency: 200 * time.Millisecond}, []time.Duration{200 * time.Millisecond}},
		{"latency before a failure", vendors.Knobs{Mode: vendors.ModeFail, Latency: time.Second}, []time.Duration{time.Second}},
		{"healthy waits nothing", vendors.Knobs{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var slept []time.Duration
			v := newVendor(t, vendors.WeatherA, &vendors.Options{
				Knobs: tt.knobs,
				Sleep: func(_ context.Context, d time.Duration) error {
					mu.Lock()
					defer mu.Unlock()
					slept = append(slept, d)
					return nil
				},
			})
			c := stdioClient(t, v)
			res := call(t, c, "current_weather", weatherArgs)
			if res.IsError != (tt.knobs.Mode == vendors.ModeFail) {
				t.Errorf("isError = %v in mode %q", res.IsError, tt.knobs.Mode)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tt.want, slept); diff != "" {
				t.Errorf("slept (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHang checks a hanging call returns when the caller's context ends, or
// when the vendor is closed.
func TestHang(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name+"/ctx cancelled", func(t *testing.T) {
			arrived := make(chan vendors.Call, 1)
			v := newVendor(t, vendors.WeatherA, &vendors.Options{
				Knobs:  vendors.Knobs{Mode: vendors.ModeHang},
				OnCall: func(c vendors.Call) { arrived <- c },
			})
			c := d.dial(t, serve(t, d.tr, v), nil)
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				<-arrived
				cancel()
			}()
			_, err := callErr(ctx, c, "current_weather", weatherArgs)
			if err == nil {
				t.Fatal("a hanging call returned no error")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		})
	}
	t.Run("vendor closed", func(t *testing.T) {
		arrived := make(chan vendors.Call, 1)
		v := newVendor(t, vendors.WeatherA, &vendors.Options{
			Knobs:  vendors.Knobs{Mode: vendors.ModeHang},
			OnCall: func(c vendors.Call) { arrived <- c },
		})
		c := stdioClient(t, v)
		go func() {
			<-arrived
			v.Close()
		}()
		if _, err := callErr(t.Context(), c, "current_weather", weatherArgs); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("err = %v, want the vendor-closed error", err)
		}
	})
}

// TestGarbage checks garbage answers violate the tool's own output schema.
func TestGarbage(t *testing.T) {
	for _, sc := range sampleCalls {
		t.Run(sc.vendor, func(t *testing.T) {
			v := newVendor(t, sc.vendor, &vendors.Options{Knobs: vendors.Knobs{Mode: vendors.ModeGarbage}})
			c := stdioClient(t, v)
			res := call(t, c, sc.tool, sc.args)
			if res.IsError {
				t.Fatalf("garbage answered isError: %v", res.Content)
			}
			if err := outputSchema(t, c, sc.tool).Validate(structured(t, res)); err == nil {
				t.Errorf("garbage %s fits the output schema", res.RawStructuredContent)
			}
			if got := v.Counters(); got.OK != 1 {
				t.Errorf("counters = %+v, want the lie counted ok", got)
			}
		})
	}
}

// statusRecorder records the HTTP status and Retry-After of tools/call answers.
type statusRecorder struct {
	mu    sync.Mutex
	codes []int
	retry []string
}

func (s *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.StatusCode >= 400 {
		s.mu.Lock()
		s.codes = append(s.codes, resp.StatusCode)
		s.retry = append(s.retry, resp.Header.Get("Retry-After"))
		s.mu.Unlock()
	}
	return resp, err
}

// TestHTTPFaults checks http500 and http429 answer tools/call at the HTTP
// layer while initialize and tools/list still work.
func TestHTTPFaults(t *testing.T) {
	tests := []struct {
		mode      vendors.Mode
		wantCode  int
		wantRetry string
	}{
		{vendors.ModeHTTP500, http.StatusInternalServerError, ""},
		{vendors.ModeHTTP429, http.StatusTooManyRequests, "3"}, // 2.5s rounds up
	}
	for _, d := range dialects {
		for _, tt := range tests {
			t.Run(d.name+"/"+string(tt.mode), func(t *testing.T) {
				v := newVendor(t, vendors.WeatherA, &vendors.Options{
					Knobs: vendors.Knobs{Mode: tt.mode, RetryAfter: 2500 * time.Millisecond},
				})
				rec := &statusRecorder{}
				c := d.dial(t, serve(t, d.tr, v), &http.Client{Transport: rec}) // initialize must pass
				if _, err := c.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
					t.Fatalf("tools/list in mode %s: %v", tt.mode, err)
				}
				_, err := callErr(t.Context(), c, "current_weather", map[string]any{"city": "Oslo", "units": "metric"})
				if err == nil {
					t.Fatalf("mode %s: tools/call succeeded", tt.mode)
				}
				t.Logf("client error: %v", err) // mcp-go keeps the status only in the text
				rec.mu.Lock()
				defer rec.mu.Unlock()
				if diff := cmp.Diff([]int{tt.wantCode}, rec.codes); diff != "" {
					t.Errorf("HTTP statuses (-want +got):\n%s", diff)
				}
				if tt.wantRetry != "" && (len(rec.retry) != 1 || rec.retry[0] != tt.wantRetry) {
					t.Errorf("Retry-After = %q, want %q", rec.retry, tt.wantRetry)
				}
				want := vendors.Counters{CallsTotal: 1, CallsByTool: map[string]int64{"current_weather": 1}, Failed: 1, Rejected: 1}
				if diff := cmp.Diff(want, v.Counters()); diff != "" {
					t.Errorf("counters (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"city", "units"}, v.Calls()[0].ArgKeys); diff != "" {
					t.Errorf("recorded arg keys (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestHTTPFaultRate checks a call let through by the HTTP layer is not
// faulted again by the MCP layer.
func TestHTTPFaultRate(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) { testHTTPFaultRate(t, d) })
	}
}

func testHTTPFaultRate(t *testing.T, d dialect) {
	v := newVendor(t, vendors.WeatherA, &vendors.Options{Knobs: vendors.Knobs{Mode: vendors.ModeHTTP500, FailRate: 0.5}})
	c := d.dial(t, serve(t, d.tr, v), nil)
	var got []string
	for range 4 {
		res, err := callErr(t.Context(), c, "current_weather", weatherArgs)
		switch {
		case err != nil && strings.Contains(err.Error(), "500"):
			got = append(got, "500")
		case err != nil:
			t.Fatalf("unexpected error: %v", err)
		case res.IsError:
			got = append(got, "isError")
		default:
			got = append(got, "ok")
		}
	}
	if diff := cmp.Diff([]string{"500", "ok", "500", "ok"}, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if c := v.Counters(); c.OK != 2 || c.Rejected != 2 || c.CallsTotal != 4 {
		t.Errorf("counters = %+v, want 4 calls, 2 ok, 2 rejected", c)
	}
}

// TestHTTPModeOffHTTP checks http modes over stdio turn into JSON-RPC errors.
func TestHTTPModeOffHTTP(t *testing.T) {
	v := newVendor(t, vendors.WeatherA, &vendors.Options{Knobs: vendors.Knobs{Mode: vendors.ModeHTTP429}})
	if _, err := callErr(t.Context(), stdioClient(t, v), "current_weather", weatherArgs); err == nil {
		t.Fatal("http429 over stdio succeeded")
	}
	if c := v.Counters(); c.Failed != 1 || c.Rejected != 0 {
		t.Errorf("counters = %+v, want 1 failed, not rejected", c)
	}
}

// TestToolsListChanged checks hiding and showing a tool notifies a connected
// client and changes tools/list.
func TestToolsListChanged(t *testing.T) {
	for _, d := range []struct {
		name string
		tr   vendors.Transport
	}{{"http", vendors.HTTP}, {"sse", vendors.SSE}} {
		t.Run(d.name, func(t *testing.T) {
			v := newVendor(t, vendors.Places, nil)
			dial := dialects[0].dial
			if d.tr == vendors.SSE {
				dial = dialects[2].dial
			}
			c := dial(t, serve(t, d.tr, v), nil)
			changed, acked := make(chan struct{}, 4), make(chan struct{}, 1)
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				switch n.Method {
				case string(mcp.MethodNotificationToolsListChanged):
					changed <- struct{}{}
				case mcp.MethodNotificationSubscriptionsAcknowledged:
					acked <- struct{}{}
				}
			})
			if d.tr == vendors.HTTP { // protocol 2026-07-28: opt in with subscriptions/listen
				stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(stop)
				recv(t, acked, "subscriptions/acknowledged")
			}

			setKnobs(t, v, vendors.Knobs{Tools: []string{}})
			recv(t, changed, "tools/list_changed after hiding")
			if got := listNames(t, c); len(got) != 0 {
				t.Errorf("tools/list after hiding = %v, want none", got)
			}
			if _, err := callErr(t.Context(), c, "search_restaurants", map[string]any{"near": "Soho"}); err == nil {
				t.Error("a hidden tool answered")
			}

			setKnobs(t, v, vendors.Knobs{})
			recv(t, changed, "tools/list_changed after showing")
			if diff := cmp.Diff([]string{"search_restaurants"}, listNames(t, c)); diff != "" {
				t.Errorf("tools/list after showing (-want +got):\n%s", diff)
			}
			if got := v.Counters(); got.CallsByTool["search_restaurants"] != 1 || got.Failed != 1 {
				t.Errorf("counters = %+v, want the call to the hidden tool counted as failed", got)
			}
		})
	}
}

// recv waits for a notification; the deadline only turns a lost
// notification into a failure instead of a hung test.
func recv(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
	}
}

func listNames(t *testing.T, c interface {
	ListTools(context.Context, mcp.ListToolsRequest) (*mcp.ListToolsResult, error)
}) []string {
	t.Helper()
	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestInFlight checks the in-flight gauge and its high-water mark, holding
// calls inside the vendor through the injected Sleep.
func TestInFlight(t *testing.T) {
	entered, release, sleep := heldSleep(0)
	v := newVendor(t, vendors.Maps, &vendors.Options{Knobs: vendors.Knobs{Latency: time.Second}, Sleep: sleep})
	c := dialects[0].dial(t, serve(t, vendors.HTTP, v), nil)
	const n = 3
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := callErr(t.Context(), c, "route", map[string]any{"from": "A", "to": "B"})
			errs <- err
		}()
	}
	for range n {
		<-entered
	}
	if got := v.Counters(); got.InFlight != n || got.MaxInFlight != n {
		t.Errorf("while held: in_flight %d, max %d; want %d, %d", got.InFlight, got.MaxInFlight, n, n)
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := v.Counters(); got.InFlight != 0 || got.MaxInFlight != n || got.OK != n {
		t.Errorf("after: %+v, want in_flight 0, max %d, ok %d", got, n, n)
	}
}
