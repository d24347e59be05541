package ops

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: it decodes each export
// request (protobuf) and keeps the spans.
type collector struct {
	url      string
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func startCollector(t *testing.T) *collector {
	c := &collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.Error(w, "not an OTLP trace export", http.StatusNotFound)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("collector: undecodable export request (%s): %v", r.Header.Get("Content-Type"), err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					c.services = append(c.services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// trace returns the spans of one trace by name (the last of each name).
func (c *collector) trace(traceID string) map[string]*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*tracepb.Span{}
	for _, s := range c.spans {
		if hex.EncodeToString(s.TraceId) == traceID {
			out[s.Name] = s
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.GetAttributes() {
		if a.Key == key {
			switch v := a.GetValue().GetValue().(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_IntValue:
				return strconv.FormatInt(v.IntValue, 10)
			case *commonpb.AnyValue_BoolValue:
				return strconv.FormatBool(v.BoolValue)
			}
		}
	}
	return ""
}

func id(b []byte) string { return hex.EncodeToString(b) }

const telemetryConfig = `addr: 127.0.0.1:0
outbound: {allow: ["{{vendor_host}}"]}
governance:
  retry: {max: 0}
cache:
  tools:
    weather-a__current_weather: {ttl: 10m}
fallback:
  capabilities:
    weather.later: {queue: true}
jobs: {max_attempts: 50}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendor}}/weather-a/mcp"}
    probe: {disabled: true}
capabilities:
  - name: weather.later
    input_schema: {type: object, required: [city], properties: {city: {type: string}}}
    chain:
      - tool: weather-a/current_weather
`

// TestCallSpansReachOTLPCollector: given only OTEL_EXPORTER_OTLP_ENDPOINT,
// a REST call with a traceparent header gives the request, call, vendor,
// attempt and cache spans in the caller's trace; the vendor gets the
// attempt's trace context as a header and in _meta; the decision log names
// the trace. An MCP call with traceparent in _meta is traced in that trace.
func TestCallSpansReachOTLPCollector(t *testing.T) {
	col := startCollector(t)
	vs := startVendor(t)
	h := startHub(t, telemetryConfig, vs, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.url)
	drilltest.WaitFor(t, 60*time.Second, "weather-a ready", func() bool { return h.VendorsReady(t.Context(), "weather-a") })

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := `{"arguments": {"city": "Paris"}}`
	req, _ := http.NewRequest("POST", h.URL()+"/v1/tools/weather-a__current_weather/call", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("call: %d %s", resp.StatusCode, b)
	}

	var spans map[string]*tracepb.Span
	want := []string{"POST /v1/tools/{name}/call", "toolhub.call", "toolhub.cache.get", "toolhub.vendor", "toolhub.attempt"}
	drilltest.WaitFor(t, 60*time.Second, "spans at the collector", func() bool {
		spans = col.trace(traceID)
		for _, n := range want {
			if spans[n] == nil {
				return false
			}
		}
		return true
	})
	srv, call, cache, vendor, attempt := spans[want[0]], spans[want[1]], spans[want[2]], spans[want[3]], spans[want[4]]
	if id(srv.ParentSpanId) != parentID || srv.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span: parent %s kind %v, want the caller's %s, server", id(srv.ParentSpanId), srv.Kind, parentID)
	}
	if id(call.ParentSpanId) != id(srv.SpanId) || id(cache.ParentSpanId) != id(call.SpanId) ||
		id(vendor.ParentSpanId) != id(call.SpanId) || id(attempt.ParentSpanId) != id(vendor.SpanId) {
		t.Errorf("span tree: request %s ← call %s (parent %s) ← cache (parent %s), vendor %s (parent %s) ← attempt (parent %s)",
			id(srv.SpanId), id(call.SpanId), id(call.ParentSpanId), id(cache.ParentSpanId), id(vendor.SpanId), id(vendor.ParentSpanId), id(attempt.ParentSpanId))
	}
	for _, c := range []struct {
		span      *tracepb.Span
		key, want string
	}{
		{call, "toolhub.tool", "weather-a__current_weather"},
		{call, "toolhub.outcome", "ok"},
		{call, "toolhub.tenant", "default"},
		{cache, "toolhub.cache", "miss"},
		{vendor, "toolhub.vendor", "weather-a"},
		{vendor, "toolhub.breaker_state", "closed"},
		{vendor, "toolhub.retries", "0"},
		{attempt, "toolhub.vendor", "weather-a"},
		{attempt, "toolhub.tool", "current_weather"},
		{attempt, "toolhub.outcome", "ok"},
		{attempt, "toolhub.retry", "0"},
		{attempt, "toolhub.breaker_state", "closed"},
	} {
		if got := attr(c.span, c.key); got != c.want {
			t.Errorf("span %s: %s = %q, want %q", c.span.Name, c.key, got, c.want)
		}
	}
	if !strings.Contains(strings.Join(col.services, ","), "toolhub") {
		t.Errorf("service.name of the exports: %v, want toolhub", col.services)
	}

	// The vendor got the attempt span as its parent, as a header and in _meta.
	wantTP := "00-" + traceID + "-" + id(attempt.SpanId) + "-01"
	if !contains(vs.traceparents(), wantTP) {
		t.Errorf("vendor traceparent headers %q, want one %q", vs.traceparents(), wantTP)
	}
	calls := vs.vendor.Calls()
	if len(calls) == 0 || calls[len(calls)-1].Meta["traceparent"] != wantTP {
		t.Errorf("vendor _meta: %+v, want traceparent %q", calls, wantTP)
	}
	// The decision log line of the call names its trace.
	if !logHas(h.Logs(), "call", func(l map[string]any) bool { return l["trace_id"] == traceID && l["span_id"] == id(call.SpanId) }) {
		t.Errorf("no decision log line with trace_id %s span_id %s:\n%s", traceID, id(call.SpanId), h.Tail(20))
	}

	// An MCP client that traces sends traceparent in _meta.
	const mcpTrace = "0af7651916cd43dd8448eb211c80319c"
	c := gomcp.NewClient(&gomcp.Implementation{Name: "traced-client", Version: "1.0.0"}, nil)
	s, err := c.Connect(t.Context(), &gomcp.StreamableClientTransport{Endpoint: h.URL() + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(t.Context(), &gomcp.CallToolParams{Name: "weather-a__current_weather", Arguments: map[string]any{"city": "Oslo"},
		Meta: gomcp.Meta{"traceparent": "00-" + mcpTrace + "-b7ad6b7169203331-01"}})
	if err != nil || res.IsError {
		t.Fatalf("MCP call: %v %+v", err, res)
	}
	drilltest.WaitFor(t, 60*time.Second, "MCP call spans", func() bool {
		sp := col.trace(mcpTrace)
		return sp["toolhub.call"] != nil && sp["toolhub.attempt"] != nil && id(sp["toolhub.call"].ParentSpanId) == "b7ad6b7169203331"
	})

	// A call queued while the vendor fails: the job, run once it answers
	// again, continues the caller's trace under the queued call's span.
	if err := vs.vendor.SetKnobs(vendors.Knobs{Mode: vendors.ModeHTTP500}); err != nil {
		t.Fatal(err)
	}
	const jobTrace = "11112222333344445555666677778888"
	req, _ = http.NewRequest("POST", h.URL()+"/v1/tools/weather.later/call", strings.NewReader(`{"arguments": {"city": "Rome"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+jobTrace+"-1111222233334444-01")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"queued":true`) {
		t.Fatalf("weather.later while weather-a fails: %d %s, want queued", resp.StatusCode, b)
	}
	if err := vs.vendor.SetKnobs(vendors.Knobs{Mode: vendors.ModeOK}); err != nil {
		t.Fatal(err)
	}
	var jobSpans map[string]*tracepb.Span
	drilltest.WaitFor(t, 120*time.Second, "the job's span in the caller's trace", func() bool {
		jobSpans = col.trace(jobTrace)
		return jobSpans["toolhub.job"] != nil && jobSpans["toolhub.call"] != nil && attr(jobSpans["toolhub.job"], "toolhub.outcome") == "ok"
	})
	// Its parent is the call that was queued: the one under the request
	// span (the job's own run is another toolhub.call, under the job).
	job, srvSpan := jobSpans["toolhub.job"], jobSpans["POST /v1/tools/{name}/call"]
	var queuedCall string
	col.mu.Lock()
	for _, sp := range col.spans {
		if id(sp.TraceId) == jobTrace && sp.Name == "toolhub.call" && srvSpan != nil && id(sp.ParentSpanId) == id(srvSpan.SpanId) {
			queuedCall = id(sp.SpanId)
		}
	}
	col.mu.Unlock()
	if attr(job, "toolhub.job_id") == "" || queuedCall == "" || id(job.ParentSpanId) != queuedCall {
		t.Errorf("job span: job id %q, parent %s, want the queued call's span %s", attr(job, "toolhub.job_id"), id(job.ParentSpanId), queuedCall)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// logHas reports whether a JSON log line with message msg satisfies ok.
func logHas(logs, msg string, ok func(map[string]any) bool) bool {
	for _, line := range bytes.Split([]byte(logs), []byte("\n")) {
		var l map[string]any
		if json.Unmarshal(line, &l) == nil && l["msg"] == msg && ok(l) {
			return true
		}
	}
	return false
}
