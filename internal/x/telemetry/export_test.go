package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/toolhub/toolhub/hub/tracing"
	"go.opentelemetry.io/otel"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// received collects the names of the spans a receiver got.
type received struct {
	mu    sync.Mutex
	names []string
}

func (r *received) add(req *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.names = append(r.names, s.Name)
			}
		}
	}
}

func (r *received) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.names {
		if n == name {
			return true
		}
	}
	return false
}

type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	got *received
}

func (g grpcReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.got.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// export starts tracing with cfg, records one span and shuts down (which
// exports what is buffered).
func export(t *testing.T, cfg Config) {
	t.Helper()
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	tr, err := Start(context.Background(), cfg, Options{LookupEnv: env(nil), Version: "test", Enable: tracing.Enable})
	if err != nil || !tr.On {
		t.Fatalf("Start(%+v): %+v, %v", cfg, tr, err)
	}
	if !tracing.Enabled() {
		t.Error("tracing not enabled after Start")
	}
	_, span := tracing.Start(context.Background(), "toolhub.test")
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tracing.Enabled() {
		t.Error("tracing still enabled after Shutdown")
	}
}

func TestExportOverGRPCFromConfig(t *testing.T) {
	got := &received{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, grpcReceiver{got: got})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	export(t, Config{Endpoint: "http://" + ln.Addr().String(), Protocol: "grpc"})
	if !got.has("toolhub.test") {
		t.Errorf("the gRPC receiver got %v", got.names)
	}
}

func TestExportOverHTTPFromConfig(t *testing.T) {
	got := &received{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got.add(&req)
	}))
	defer srv.Close()
	export(t, Config{Endpoint: srv.URL, Headers: map[string]string{"x-test": "1"}})
	if !got.has("toolhub.test") {
		t.Errorf("the HTTP receiver got %v", got.names)
	}
}
