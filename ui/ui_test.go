package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/ui"
)

func get(t *testing.T, h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandlerServesFiles(t *testing.T) {
	h := ui.Handler(&ui.Options{Refresh: 1500 * time.Millisecond})
	tests := []struct {
		name, path, ctype, contains string
	}{
		{"index", "/ui/", "text/html; charset=utf-8", `<script src="app.js" defer></script>`},
		{"index by name", "/ui/index.html", "text/html; charset=utf-8", `data-refresh-ms="1500"`},
		{"script", "/ui/app.js", "text/javascript; charset=utf-8", `"/v1/vendors"`},
		{"styles", "/ui/app.css", "text/css; charset=utf-8", ".panel.stale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, h, "GET", tt.path)
			if w.Code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", tt.path, w.Code, w.Body)
			}
			if got := w.Header().Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type = %q, want %q", got, tt.ctype)
			}
			if !strings.Contains(w.Body.String(), tt.contains) {
				t.Errorf("GET %s does not contain %q", tt.path, tt.contains)
			}
			for _, k := range []string{"ETag", "Content-Security-Policy"} {
				if w.Header().Get(k) == "" {
					t.Errorf("no %s header", k)
				}
			}
			if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
			// The ETag revalidates.
			w2 := get(t, h, "GET", tt.path, "If-None-Match", w.Header().Get("ETag"))
			if w2.Code != http.StatusNotModified {
				t.Errorf("revalidation: %d, want 304", w2.Code)
			}
			// HEAD has the headers, no body.
			w3 := get(t, h, "HEAD", tt.path)
			if w3.Code != http.StatusOK || w3.Body.Len() != 0 || w3.Header().Get("Content-Type") != tt.ctype {
				t.Errorf("HEAD: %d, %d bytes, %q", w3.Code, w3.Body.Len(), w3.Header().Get("Content-Type"))
			}
		})
	}
}

func TestHandlerNoExternalResources(t *testing.T) {
	h := ui.Handler(nil)
	for _, p := range []string{"/ui/", "/ui/app.js", "/ui/app.css"} {
		// The SVG namespace is a name, not a fetch.
		body := strings.ReplaceAll(get(t, h, "GET", p).Body.String(), "http://www.w3.org/2000/svg", "")
		for _, bad := range []string{"http://", "https://", "innerHTML", "eval("} {
			if strings.Contains(body, bad) {
				t.Errorf("%s contains %q: everything must be embedded, and data set as text", p, bad)
			}
		}
	}
}

func TestHandlerRedirectsAndNotFound(t *testing.T) {
	h := ui.Handler(nil)
	w := get(t, h, "GET", "/ui")
	if w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d Location %q, want 301 to /ui/", w.Code, w.Header().Get("Location"))
	}
	for _, p := range []string{"/ui/nope.js", "/ui/static/app.js", "/ui/api/", "/ui/api/other", "/uix", "/v1/vendors", "/ui/app.js/"} {
		w := get(t, h, "GET", p)
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, w.Code)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s: Content-Type %q", p, ct)
		}
	}
	w = get(t, h, "POST", "/ui/api/decisions")
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d Allow %q, want 405", w.Code, w.Header().Get("Allow"))
	}
}

func TestHandlerPrefix(t *testing.T) {
	h := ui.Handler(&ui.Options{Prefix: "/admin/dash/"})
	if w := get(t, h, "GET", "/admin/dash/app.js"); w.Code != http.StatusOK {
		t.Errorf("GET under a custom prefix: %d", w.Code)
	}
	if w := get(t, h, "GET", "/ui/app.js"); w.Code != http.StatusNotFound {
		t.Errorf("GET under the default prefix: %d, want 404", w.Code)
	}
}

type decisions struct {
	Decisions []map[string]any `json:"decisions"`
	Recorded  uint64           `json:"recorded"`
}

func fetchDecisions(t *testing.T, h http.Handler, target string) decisions {
	t.Helper()
	w := get(t, h, "GET", target)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %q %s", target, w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	var d decisions
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecisionsEndpoint(t *testing.T) {
	empty := fetchDecisions(t, ui.Handler(nil), "/ui/api/decisions")
	if empty.Decisions == nil || len(empty.Decisions) != 0 || empty.Recorded != 0 {
		t.Errorf("without a recorder: %+v, want an empty list", empty)
	}

	rec := ui.NewRecorder(nil, 3)
	log := slog.New(rec).With("component", "govern")
	for i := range 5 {
		log.Info("call", "call_id", i, "tool", "weather.current")
		log.Info("vendor health change", "vendor", "weather-a") // not a decision
	}
	log.Warn("call", "call_id", 5, "code", "circuit_open")
	h := ui.Handler(&ui.Options{Recorder: rec})

	d := fetchDecisions(t, h, "/ui/api/decisions")
	var ids []float64
	for _, l := range d.Decisions {
		ids = append(ids, l["call_id"].(float64))
		if l["msg"] != "call" || l["component"] != "govern" {
			t.Errorf("line %v: want msg call and the logger's attrs", l)
		}
	}
	if diff := cmp.Diff([]float64{5, 4, 3}, ids); diff != "" {
		t.Errorf("decisions, newest first (-want +got):\n%s", diff)
	}
	if d.Recorded != 6 {
		t.Errorf("recorded = %d, want 6", d.Recorded)
	}
	if d.Decisions[0]["level"] != "WARN" || d.Decisions[0]["code"] != "circuit_open" {
		t.Errorf("newest line: %v", d.Decisions[0])
	}
	if got := fetchDecisions(t, h, "/ui/api/decisions?limit=1"); len(got.Decisions) != 1 {
		t.Errorf("limit=1: %d lines", len(got.Decisions))
	}
	if w := get(t, h, "GET", "/ui/api/decisions?limit=x"); w.Code != http.StatusBadRequest {
		t.Errorf("limit=x: %d, want 400", w.Code)
	}
}

func TestPublic(t *testing.T) {
	tests := []struct {
		method, path string
		want         bool
	}{
		{"GET", "/ui", true},
		{"GET", "/ui/", true},
		{"GET", "/ui/app.js", true},
		{"HEAD", "/ui/app.css", true},
		{"GET", "/ui/api/decisions", false},
		{"GET", "/ui/api", false},
		{"POST", "/ui/", false},
		{"GET", "/uix", false},
		{"GET", "/v1/vendors", false},
		{"GET", "/ui/../v1/vendors", false},
		{"GET", "/ui//api/decisions", false},
		{"GET", "/ui/./api/decisions", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, "/", nil)
		r.URL.Path = tt.path // as a client could send it, uncleaned
		if got := ui.Public(r, ""); got != tt.want {
			t.Errorf("Public(%s %s) = %v, want %v", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestRecorderPassesOn(t *testing.T) {
	var out strings.Builder
	next := slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn})
	rec := ui.NewRecorder(next, 0)
	log := slog.New(rec).WithGroup("g")
	if !rec.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("Info must be enabled: decision lines are Info")
	}
	if rec.Enabled(context.Background(), slog.LevelDebug) {
		t.Error("Debug enabled although the wrapped handler is at Warn")
	}
	log.Info("call", "tool", "maps.route")      // kept, not passed on (next is at Warn)
	log.Warn("call", "tool", "weather.current") // kept and passed on
	log.Warn("other")                           // passed on, not kept
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Errorf("wrapped handler got %d lines, want 2:\n%s", got, out.String())
	}
	lines := rec.Lines(0)
	if len(lines) != 2 {
		t.Fatalf("kept %d lines, want 2", len(lines))
	}
	var l struct {
		G struct{ Tool string } `json:"g"`
	}
	if err := json.Unmarshal(lines[1], &l); err != nil || l.G.Tool != "maps.route" {
		t.Errorf("oldest line %s: %v", lines[1], err)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	rec := ui.NewRecorder(slog.NewJSONHandler(io.Discard, nil), 50)
	log := slog.New(rec)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				log.Info("call", "g", g, "i", i)
				_ = rec.Lines(10)
			}
		}()
	}
	for range 8 {
		<-done
	}
	if got := rec.Recorded(); got != 1600 {
		t.Errorf("recorded %d, want 1600", got)
	}
	for _, l := range rec.Lines(0) {
		if !json.Valid(l) {
			t.Errorf("invalid line %s", l)
		}
	}
}

// countingValue counts how often a handler resolves it.
type countingValue struct{ n *int }

func (c countingValue) LogValue() slog.Value { *c.n++; return slog.IntValue(*c.n) }

// A decision line is formatted when it is read, not when the call logs
// it: the call path only keeps the record.
func TestRecorderFormatsOnRead(t *testing.T) {
	rec := ui.NewRecorder(nil, 0)
	n := 0
	slog.New(rec).Info("call", "v", countingValue{&n})
	if n != 0 {
		t.Fatalf("logging a decision resolved its value %d times, want 0 (formatting belongs to the read)", n)
	}
	lines := rec.Lines(0)
	if n != 1 || len(lines) != 1 || !strings.Contains(string(lines[0]), `"v":1`) {
		t.Errorf("after Lines: resolved %d times, lines %s", n, lines)
	}
}
