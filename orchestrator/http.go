package orchestrator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
)

// Handler serves POST /v1/plan: the body is a [Request]; the answer is the
// [Outcome] as JSON, or, when the request accepts text/event-stream,
// server-sent events: one "progress" event per [Event], then one "result"
// event with the Outcome. A failed run answers its Outcome with an error
// status (JSON) or as the "result" event (SSE; the status is already 200).
type Handler struct {
	Planner *Planner
	// Tenant names the caller of a request (api.TenantFrom); nil means
	// "default"; "" answers 403.
	Tenant func(*http.Request) string
	// MaxBody bounds the request body; zero means 64 KiB. The body is also
	// held to what a goal of the planner's MaxGoalBytes can take as JSON
	// (every byte escaped, six times), so a long goal is never read whole.
	MaxBody int64
	// Heartbeat is the interval of SSE keep-alive comments while a run is
	// quiet (a model thinking); zero means 15s.
	Heartbeat time.Duration
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, r, hub.CodeMethodNotAllowed, "use POST with a JSON body {\"goal\": \"…\"}")
		return
	}
	req, ok := h.readRequest(w, r)
	if !ok {
		return
	}
	tenant := "default"
	if h.Tenant != nil {
		if tenant = h.Tenant(r); tenant == "" {
			writeError(w, r, hub.CodeForbidden, "this key has no tenant and cannot plan; use a tenant key")
			return
		}
	}
	// Refusals (a goal over the bounds, the tenant's runs all taken) are
	// answered with their status, before a stream starts.
	release, err := h.Planner.admit(tenant, req)
	if err != nil {
		httperr.Write(w, r, err, "")
		return
	}
	defer release()
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		h.stream(w, r, tenant, req)
		return
	}
	out, err := h.Planner.run(r.Context(), tenant, req, nil)
	status := http.StatusOK
	if err != nil {
		if out == nil {
			httperr.Write(w, r, err, "")
			return
		}
		status = httperr.Status(hub.Code(out.Error.Code))
	}
	public(r, out)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(out)
}

// readRequest decodes the request's body, bounded by MaxBody and by what
// the planner's longest goal can take; ok false: the error is answered.
func (h *Handler) readRequest(w http.ResponseWriter, r *http.Request) (req Request, ok bool) {
	limit := h.MaxBody
	if limit <= 0 {
		limit = 64 << 10
	}
	why := ""
	if h.Planner != nil {
		if err := h.Planner.init(); err != nil {
			httperr.Write(w, r, err, "")
			return req, false
		}
		if g := int64(6*h.Planner.MaxGoalBytes + 4<<10); g < limit {
			limit = g
			why = fmt.Sprintf(" (a goal may have at most %d bytes, planner.max_goal_bytes; shorten it, or split it into several plans)", h.Planner.MaxGoalBytes)
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, r, hub.CodeTooLarge, fmt.Sprintf("body over %d bytes%s", limit, why))
			return req, false
		}
		writeError(w, r, hub.CodeInvalidRequest, "body must be JSON {\"goal\", \"mode\", \"max_steps\"}: "+err.Error())
		return req, false
	}
	return req, true
}

// stream runs the plan with its progress as server-sent events and the
// outcome as the last, with keep-alive comments while the run is quiet.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, tenant string, req Request) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var mu sync.Mutex
	write := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		io.WriteString(w, s)
		if fl != nil {
			fl.Flush()
		}
	}
	send := func(event string, v any) {
		b, _ := json.Marshal(v)
		write("event: " + event + "\ndata: " + string(b) + "\n\n")
	}
	beat := h.Heartbeat
	if beat <= 0 {
		beat = 15 * time.Second
	}
	stop := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		t := time.NewTicker(beat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				write(": keep-alive\n\n")
			}
		}
	}()
	out, err := h.Planner.run(r.Context(), tenant, req, func(e Event) { send("progress", publicEvent(e)) })
	close(stop)
	<-beating
	if out == nil {
		out = &Outcome{Status: StatusFailed, Error: errorBody(err)}
	}
	public(r, out)
	send("result", out)
}

// public replaces the text of the outcome's internal errors (a store's, a
// bug's) with httperr.InternalMessage, logging it under the plan id.
func public(r *http.Request, out *Outcome) {
	hide := func(e *ErrorBody) {
		if e != nil && e.Code == string(hub.CodeInternal) {
			b := httperr.BodyOf(r.Context(), &hub.Error{Code: hub.CodeInternal, Message: e.Message}, out.PlanID)
			e.Message = b.Message
		}
	}
	hide(out.Error)
	for i := range out.Steps {
		hide(out.Steps[i].Error)
	}
}

// publicEvent replaces the text of a progress event's internal error; the
// result's (public) logs it.
func publicEvent(e Event) Event {
	if e.Error != nil && e.Error.Code == string(hub.CodeInternal) {
		e.Error = &ErrorBody{Code: e.Error.Code, Message: httperr.InternalMessage}
	}
	return e
}

func writeError(w http.ResponseWriter, r *http.Request, code hub.Code, msg string) {
	httperr.Write(w, r, &hub.Error{Code: code, Message: msg}, "")
}

// Remote runs a goal on a running hub's POST /v1/plan (base like
// "http://127.0.0.1:8080") with server-sent events, calling progress for
// each event. hc nil means http.DefaultClient; header may add headers
// (Authorization). A failed run returns its Outcome and an error.
func Remote(ctx context.Context, hc *http.Client, base string, header http.Header, req Request, progress EventFunc) (*Outcome, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/v1/plan", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		hr.Header[k] = v
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e struct {
			Error *ErrorBody `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != nil {
			return nil, fmt.Errorf("%s: %s", e.Error.Code, e.Error.Message)
		}
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				switch event {
				case "progress":
					var e Event
					if json.Unmarshal(data.Bytes(), &e) == nil && progress != nil {
						progress(e)
					}
				case "result":
					var out Outcome
					if err := json.Unmarshal(data.Bytes(), &out); err != nil {
						return nil, fmt.Errorf("bad result event: %v", err)
					}
					if out.Error != nil {
						return &out, fmt.Errorf("%s: %s", out.Error.Code, out.Error.Message)
					}
					return &out, nil
				}
			}
			event = ""
			data.Reset()
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(line[len("data:"):], " "))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("the hub closed the stream before the result")
}
