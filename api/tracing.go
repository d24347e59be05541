package api

import (
	"bufio"
	"net"
	"net/http"
	"strings"

	"github.com/toolhub/toolhub/hub/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traced serves r inside a server span ("METHOD /route"), a child of the
// caller's traceparent header when it sends one. Only installed when
// [Options].Tracing is on.
func (s *Server) traced(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request)) {
	ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := tracing.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
	defer span.End()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	r = r.WithContext(ctx)
	if _, pattern := s.mux.Handler(r); pattern != "" && pattern != "/" {
		route := pattern
		if method, path, ok := strings.Cut(pattern, " "); ok && method != "" {
			route = path
		}
		span.SetName(r.Method + " " + route) // "POST /v1/tools/{name}/call": few names, the path's values stay out
		span.SetAttributes(attribute.String("http.route", route))
	}
	serve(sw, r)
	span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
	if sw.status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(sw.status))
	}
}

// statusWriter remembers the status of a response; it keeps streaming
// (Flush) and http.ResponseController working.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	w.wrote = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
