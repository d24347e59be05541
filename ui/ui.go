package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
)

//go:embed static
var static embed.FS

// DefaultPrefix is where the dashboard is mounted by default.
const DefaultPrefix = "/ui"

// Options configure [Handler]. A nil *Options means the defaults.
type Options struct {
	// Recorder supplies GET {Prefix}/api/decisions; nil serves an empty
	// list.
	Recorder *Recorder
	// Prefix is the path the handler is mounted at, without a trailing
	// slash; "" means DefaultPrefix ("/ui").
	Prefix string
	// Refresh is how often the page reloads its data; zero means 2 s.
	Refresh time.Duration
	// Now is the clock of the series' window; nil means time.Now.
	Now func() time.Time
	// Flush, when set, is called before the decisions and the series are
	// read: a decision log written off the call path (govern's
	// Options.LogQueue, Governor.Flush) hands over the lines that wait,
	// so that every call that returned is in them.
	Flush func()
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// contentTypes are the types of the embedded files, by extension: fixed
// here rather than taken from the system's MIME tables.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// csp allows only the page's own files and same-origin fetches: no inline
// scripts, no third-party hosts.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the dashboard under opts.Prefix:
//
//	GET {prefix}                redirect to {prefix}/
//	GET {prefix}/               the page (index.html)
//	GET {prefix}/app.js, …      the embedded CSS and JavaScript
//	GET {prefix}/api/decisions  the Recorder's lines, newest first: {"decisions": [...], "recorded": n}; ?limit=
//	GET {prefix}/api/series     per-vendor attempts, errors and latency over time: {"bucket_s": 10, "vendors": {"v": [Point…]}}
//
// Everything else under the prefix is 404, and methods other than GET and
// HEAD are 405. The decisions carry tenants, tools and error texts: mount
// that path behind operator authorization (see [Public]).
func Handler(opts *Options) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	o.Prefix = strings.TrimRight(o.Prefix, "/")
	if o.Refresh <= 0 {
		o.Refresh = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	assets := map[string]*asset{}
	entries, err := static.ReadDir("static")
	if err != nil {
		panic("ui: embedded files: " + err.Error()) // programmer error: the embed is broken
	}
	for _, e := range entries {
		name := e.Name()
		body, err := static.ReadFile("static/" + name)
		if err != nil {
			panic("ui: embedded files: " + err.Error())
		}
		if name == "index.html" {
			body = bytes.ReplaceAll(body, []byte("{{refresh_ms}}"), []byte(strconv.FormatInt(o.Refresh.Milliseconds(), 10)))
		}
		ext := name[strings.LastIndexByte(name, '.'):]
		ct, ok := contentTypes[ext]
		if !ok {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		assets[name] = &asset{body: body, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return &handler{o: o, assets: assets}
}

type handler struct {
	o      Options
	assets map[string]*asset
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, h.o.Prefix)
	if !ok || rest != "" && rest[0] != '/' {
		h.notFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httperr.Write(w, r, &hub.Error{Code: hub.CodeMethodNotAllowed, Message: r.Method + " " + r.URL.Path + ": the dashboard is read-only (GET, HEAD)"}, "")
		return
	}
	switch rest {
	case "":
		http.Redirect(w, r, h.o.Prefix+"/", http.StatusMovedPermanently)
		return
	case "/", "/index.html":
		rest = "/index.html"
	case "/api/decisions":
		h.decisions(w, r)
		return
	case "/api/series":
		h.series(w, r)
		return
	}
	a, ok := h.assets[rest[1:]]
	if !ok {
		h.notFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("ETag", a.etag)
	hd.Set("Cache-Control", "no-cache") // revalidate: a new binary may bring new files
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", csp)
	hd.Set("Referrer-Policy", "no-referrer")
	http.ServeContent(w, r, rest, time.Time{}, bytes.NewReader(a.body))
}

func (h *handler) decisions(w http.ResponseWriter, r *http.Request) {
	limit := 0
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			httperr.Write(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: "limit " + strconv.Quote(s) + ": want a number of lines, 0 or more"}, "")
			return
		}
		limit = n
	}
	lines := []json.RawMessage{}
	var recorded uint64
	if h.o.Recorder != nil {
		if h.o.Flush != nil {
			h.o.Flush()
		}
		lines = h.o.Recorder.Lines(limit)
		recorded = h.o.Recorder.Recorded()
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"decisions": lines, "recorded": recorded})
}

func (h *handler) series(w http.ResponseWriter, r *http.Request) {
	vendors := map[string][]Point{}
	bucket := DefaultBucket
	if h.o.Recorder != nil {
		if h.o.Flush != nil {
			h.o.Flush()
		}
		vendors, bucket = h.o.Recorder.Series(h.o.Now())
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"bucket_s": bucket.Seconds(), "vendors": vendors})
}

// Public reports whether r asks for one of the dashboard's static files
// under prefix ("" means DefaultPrefix): GET or HEAD of anything under it
// but {prefix}/api/. They hold no data, and a browser must load the page
// before it can send a key, so the front door may serve them without
// authentication; the data APIs the page calls keep theirs.
func Public(r *http.Request, prefix string) bool {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	prefix = strings.TrimRight(prefix, "/")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok || rest != "" && rest[0] != '/' {
		return false
	}
	// Only clean paths: "/ui/../v1/vendors" must not skip authentication
	// on its way to the mux's redirect.
	if rest != "" && rest != "/" && path.Clean(rest) != rest {
		return false
	}
	return rest != "/api" && !strings.HasPrefix(rest, "/api/")
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	httperr.Write(w, r, &hub.Error{Code: hub.CodeNotFound, Message: "no such page in the dashboard; see " + h.o.Prefix + "/"}, "")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
