package vendors_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/examples/vendors"
)

// state is the body of a _control answer.
type state struct {
	Vendor string `json:"vendor"`
	Knobs  struct {
		Mode       string   `json:"mode"`
		Latency    string   `json:"latency"`
		FailRate   float64  `json:"fail_rate"`
		RetryAfter string   `json:"retry_after"`
		Tools      []string `json:"tools"`
	} `json:"knobs"`
	AllTools []string         `json:"all_tools"`
	Counters vendors.Counters `json:"counters"`
	Calls    []vendors.Call   `json:"calls"`
	Error    string           `json:"error"`
}

func control(t *testing.T, url, body string) (int, state) {
	t.Helper()
	var resp *http.Response
	var err error
	if body == "" {
		resp, err = http.Get(url)
	} else {
		resp, err = http.Post(url, "application/json", strings.NewReader(body))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s state
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, s
}

// TestControl drives one vendor among several through its control endpoint.
func TestControl(t *testing.T) {
	weather := newVendor(t, vendors.WeatherA, nil)
	maps := newVendor(t, vendors.Maps, nil)
	base := serve(t, vendors.HTTP, weather, maps)
	ctl := base + "/weather-a/_control"

	code, s := control(t, ctl, `{"mode": "slow", "latency": "200ms", "fail_rate": 0.5, "retry_after": "2s"}`)
	if code != http.StatusOK {
		t.Fatalf("POST = %d %s", code, s.Error)
	}
	want := vendors.Knobs{Mode: vendors.ModeSlow, Latency: 200 * time.Millisecond, FailRate: 0.5, RetryAfter: 2 * time.Second}
	if diff := cmp.Diff(want, weather.Knobs()); diff != "" {
		t.Errorf("knobs after POST (-want +got):\n%s", diff)
	}
	if s.Knobs.Latency != "200ms" || s.Knobs.Mode != "slow" || s.Knobs.RetryAfter != "2s" {
		t.Errorf("POST answered knobs %+v", s.Knobs)
	}
	if maps.Knobs().Mode != "" {
		t.Errorf("maps knobs changed too: %+v", maps.Knobs())
	}

	// A partial update keeps the other knobs.
	if code, s := control(t, ctl, `{"mode": "ok"}`); code != http.StatusOK || s.Knobs.Latency != "200ms" {
		t.Errorf("partial POST = %d %+v, want latency kept", code, s.Knobs)
	}
	control(t, ctl, `{"latency": "0s", "fail_rate": 0}`)

	c := dialects[0].dial(t, base+"/weather-a", nil)
	req := mcp.CallToolRequest{}
	req.Params.Name = "current_weather"
	req.Params.Arguments = map[string]any{"city": "Rome", "units": "metric"}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"tenant": "acme"}}
	if _, err := c.CallTool(t.Context(), req); err != nil {
		t.Fatal(err)
	}

	_, s = control(t, ctl, "")
	if s.Vendor != "weather-a" || s.Counters.CallsTotal != 1 || s.Counters.OK != 1 || s.Counters.CallsByTool["current_weather"] != 1 {
		t.Errorf("GET = %+v, want one ok call to current_weather", s)
	}
	if len(s.Calls) != 1 || !cmp.Equal(s.Calls[0].ArgKeys, []string{"city", "units"}) || s.Calls[0].Meta["tenant"] != "acme" {
		t.Errorf("recorded calls = %+v, want arg keys [city units] and _meta.tenant", s.Calls)
	}
	if !cmp.Equal(s.Knobs.Tools, []string{"current_weather"}) || !cmp.Equal(s.AllTools, []string{"current_weather"}) {
		t.Errorf("tools = %v, all_tools = %v", s.Knobs.Tools, s.AllTools)
	}

	if _, s := control(t, ctl, `{"reset": true}`); s.Counters.CallsTotal != 0 || len(s.Calls) != 0 || s.Calls == nil {
		t.Errorf("after reset: counters %+v, calls %v", s.Counters, s.Calls)
	}
}

func TestControlRejects(t *testing.T) {
	v := newVendor(t, vendors.Doubao, nil)
	ctl := serve(t, vendors.HTTP, v) + "/_control" // one vendor: served at the root
	for _, body := range []string{
		`{"mode": "explode"}`,
		`{"latency": "soon"}`,
		`{"fail_rate": 1.5}`,
		`{"tools": ["draw"]}`,
		`{"colour": "red"}`,
		`not json`,
	} {
		code, s := control(t, ctl, body)
		if code != http.StatusBadRequest || s.Error == "" {
			t.Errorf("POST %s = %d %q, want 400 with an error", body, code, s.Error)
		}
	}
	if diff := cmp.Diff(vendors.Knobs{}, v.Knobs()); diff != "" {
		t.Errorf("rejected POSTs changed the knobs (-want +got):\n%s", diff)
	}
}

// TestRecentCalls checks a vendor remembers only the last 100 calls.
func TestRecentCalls(t *testing.T) {
	v := newVendor(t, vendors.Maps, nil)
	c := stdioClient(t, v)
	for range 105 {
		call(t, c, "route", map[string]any{"from": "A", "to": "B"})
	}
	calls := v.Calls()
	if len(calls) != 100 || calls[0].Seq != 6 || calls[99].Seq != 105 {
		t.Errorf("kept %d calls, seq %d..%d; want 100, 6..105", len(calls), calls[0].Seq, calls[len(calls)-1].Seq)
	}
}
