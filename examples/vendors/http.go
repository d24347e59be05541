package vendors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Transport is how a vendor speaks MCP.
type Transport string

// The transports. Stdio is served by the caller with
// server.NewStdioServer(v.MCPServer()); the others by [Vendor.Mount] and [Handler].
const (
	HTTP  Transport = "http"  // streamable HTTP at <prefix>/mcp
	SSE   Transport = "sse"   // HTTP+SSE at <prefix>/sse and <prefix>/message
	Stdio Transport = "stdio" // stdin/stdout
)

// ParseTransport parses "http", "sse" or "stdio"; "" is HTTP.
func ParseTransport(s string) (Transport, error) {
	switch t := Transport(s); t {
	case "":
		return HTTP, nil
	case HTTP, SSE, Stdio:
		return t, nil
	}
	return "", fmt.Errorf("vendors: transport %q: want http, sse or stdio", s)
}

// Mount serves v on mux under prefix ("" or "/name"): MCP over t, and the
// control endpoint at <prefix>/_control.
func (v *Vendor) Mount(mux *http.ServeMux, prefix string, t Transport) error {
	switch t {
	case HTTP:
		mux.Handle(prefix+"/mcp", v.httpFaults(server.NewStreamableHTTPServer(v.srv)))
	case SSE:
		sse := server.NewSSEServer(v.srv, server.WithStaticBasePath(prefix))
		mux.Handle(prefix+"/sse", sse)
		mux.Handle(prefix+"/message", v.httpFaults(sse))
	default:
		return fmt.Errorf("vendor %q: cannot mount transport %q on HTTP", v.name, t)
	}
	mux.Handle(prefix+"/_control", v.ControlHandler())
	return nil
}

// ControlHandler returns the control endpoint alone, for a vendor served
// over stdio: GET for knobs, counters and calls; POST to change knobs.
func (v *Vendor) ControlHandler() http.Handler { return http.HandlerFunc(v.serveControl) }

// Handler serves vendors over t on one listener. One vendor is served at
// the root (/mcp, /_control); several are each served under /<name>/, and
// GET / lists them.
func Handler(t Transport, vendors ...*Vendor) (http.Handler, error) {
	mux := http.NewServeMux()
	if len(vendors) == 1 {
		if err := vendors[0].Mount(mux, "", t); err != nil {
			return nil, err
		}
		return mux, nil
	}
	type entry struct {
		Name    string   `json:"name"`
		MCP     []string `json:"mcp"`
		Control string   `json:"control"`
	}
	var index []entry
	for _, v := range vendors {
		prefix := "/" + v.name
		if err := v.Mount(mux, prefix, t); err != nil {
			return nil, err
		}
		e := entry{Name: v.name, MCP: []string{prefix + "/mcp"}, Control: prefix + "/_control"}
		if t == SSE {
			e.MCP = []string{prefix + "/sse", prefix + "/message"}
		}
		index = append(index, e)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"transport": t, "vendors": index})
	})
	return mux, nil
}

// controlState is the body of GET and POST _control answers.
type controlState struct {
	Vendor   string    `json:"vendor"`
	Knobs    knobsJSON `json:"knobs"`
	AllTools []string  `json:"all_tools"`
	Counters Counters  `json:"counters"`
	Calls    []Call    `json:"calls"`
}

// serveControl answers GET (state) and POST (change knobs, reset counters).
func (v *Vendor) serveControl(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		var p patch
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("vendor %q: control body: %v", v.name, err)})
			return
		}
		k, err := p.apply(v.Knobs())
		if err == nil {
			err = v.SetKnobs(k)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if p.Reset {
			v.Reset()
		}
	default:
		w.Header().Set("Allow", "GET, POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET or POST"})
		return
	}
	calls := v.Calls()
	if calls == nil {
		calls = []Call{}
	}
	writeJSON(w, http.StatusOK, controlState{
		Vendor:   v.name,
		Knobs:    v.Knobs().wire(v.ToolNames()),
		AllTools: v.ToolNames(),
		Counters: v.Counters(),
		Calls:    calls,
	})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(body)
}

// httpFaults answers tools/call POSTs with HTTP 500 or 429 in those modes,
// before next (the MCP handler) sees them. Everything else — initialize,
// tools/list, notifications, GET streams — passes through, so a hub can
// still connect and list tools.
func (v *Vendor) httpFaults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !v.Knobs().Mode.isHTTP() {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		call, ok := peekToolCall(body)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		mode, latency := v.decide()
		if !mode.isHTTP() {
			ctx := context.WithValue(r.Context(), decidedKey{}, decision{mode: mode, latency: latency})
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		meta := call.Params.Meta
		if len(meta) == 0 {
			meta = nil
		}
		v.received(call.Params.Name, argKeys(call.Params.Arguments), meta)
		v.finished(false, true)
		if latency > 0 && v.sleep(r.Context(), latency) != nil {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if mode == ModeHTTP429 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(v.retryAfter().Seconds()))))
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, "%s: too many requests (injected fault, mode %q)\n", v.name, mode)
			return
		}
		// A plain-text body: mcp-go's client reports a JSON body as if it
		// were the JSON-RPC answer and loses the status.
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s: internal error (injected fault, mode %q)\n", v.name, mode)
	})
}

// toolCallMessage is the part of a JSON-RPC tools/call request httpFaults reads.
type toolCallMessage struct {
	Method string `json:"method"`
	Params struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
		Meta      map[string]any             `json:"_meta"`
	} `json:"params"`
}

// peekToolCall reports whether body is a single tools/call request. JSON-RPC
// batches (dropped from MCP in 2025-06-18) pass through unchecked.
func peekToolCall(body []byte) (toolCallMessage, bool) {
	var m toolCallMessage
	if json.Unmarshal(body, &m) != nil || m.Method != string(mcp.MethodToolsCall) {
		return m, false
	}
	return m, true
}
