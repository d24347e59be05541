package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// HoldOptions of [Hold]. Zero fields mean the defaults.
type HoldOptions struct {
	URL       string         // MCP streamable HTTP endpoint
	Protocol  string         // MCP revision; default 2025-03-26 (one with sessions: 2026-07-28 has none)
	Tool      string         // if set, each session calls it once after initialize
	Arguments map[string]any // its arguments
	Sessions  int            // sessions to open; default 1000
	Parallel  int            // sessions being opened at once; default 32
}

// Held are open MCP sessions, each with its GET stream (the stream a
// session of the streamable HTTP transport keeps open for the server's
// messages) established.
type Held struct {
	Sessions int // open sessions
	hc       *http.Client
	tr       *http.Transport
	url      string
	protocol string
	mu       sync.Mutex
	open     []heldSession
}

type heldSession struct {
	id     string
	cancel context.CancelFunc
	body   io.ReadCloser
}

// Hold opens o.Sessions MCP sessions against o.URL the way a client that
// stays connected does: initialize, notifications/initialized, the GET
// stream (waiting for its 200), and with o.Tool one tools/call. They stay
// open until [Held.Close]. On an error the sessions opened so far are
// closed.
func Hold(ctx context.Context, o HoldOptions) (*Held, error) {
	if o.Protocol == "" {
		o.Protocol = mcp.ProtocolVersion20250326
	}
	if mcp.IsModernProtocol(o.Protocol) {
		return nil, fmt.Errorf("loadgen: MCP %s has no sessions to hold; use %s or another earlier revision", o.Protocol, mcp.ProtocolVersion20250326)
	}
	if o.Sessions <= 0 {
		o.Sessions = 1000
	}
	if o.Parallel <= 0 {
		o.Parallel = 32
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Each GET stream holds its own connection; the POSTs share a pool.
	tr.MaxIdleConnsPerHost = o.Parallel + 2
	h := &Held{hc: &http.Client{Transport: tr}, tr: tr, url: o.URL, protocol: o.Protocol}
	var (
		next     atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	for range o.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(o.Sessions) && firstErr.Load() == nil {
				if err := h.open1(ctx, o); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		h.Close()
		return nil, err
	}
	h.Sessions = len(h.open)
	return h, nil
}

// open1 opens one session and keeps it.
func (h *Held) open1(ctx context.Context, o HoldOptions) error {
	init, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{
			"protocolVersion": o.Protocol,
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]any{"name": "toolhub-loadgen", "version": "1"},
		},
	})
	resp, body, err := h.post(ctx, "", init)
	if err != nil {
		return fmt.Errorf("loadgen: initialize: %w", err)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		return fmt.Errorf("loadgen: initialize: %s answered no Mcp-Session-Id (%s)", h.url, snippet(body))
	}
	if _, _, err := h.post(ctx, id, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return fmt.Errorf("loadgen: notifications/initialized: %w", err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, h.url, nil)
	if err != nil {
		cancel()
		return err
	}
	h.headers(req, id)
	req.Header.Set("Accept", "text/event-stream")
	get, err := h.hc.Do(req)
	if err != nil {
		cancel()
		return fmt.Errorf("loadgen: GET stream: %w", err)
	}
	if get.StatusCode != http.StatusOK || !strings.HasPrefix(get.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(get.Body, 512))
		get.Body.Close()
		cancel()
		return fmt.Errorf("loadgen: GET stream: %s %s", get.Status, snippet(b))
	}
	h.mu.Lock()
	h.open = append(h.open, heldSession{id: id, cancel: cancel, body: get.Body})
	h.mu.Unlock()
	if o.Tool != "" {
		call, _ := json.Marshal(map[string]any{
			"jsonrpc": "2.0", "id": 2, "method": "tools/call",
			"params": map[string]any{"name": o.Tool, "arguments": o.Arguments},
		})
		_, body, err := h.post(ctx, id, call)
		if err != nil {
			return fmt.Errorf("loadgen: tools/call: %w", err)
		}
		if !bytes.Contains(body, []byte(`"result"`)) || bytes.Contains(body, []byte(`"isError":true`)) {
			return fmt.Errorf("loadgen: tools/call %s: %s", o.Tool, snippet(body))
		}
	}
	return nil
}

// post sends one JSON-RPC message on session id ("" before initialize) and
// reads the whole answer (JSON or an event stream that ends with it).
func (h *Held) post(ctx context.Context, id string, msg []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(msg))
	if err != nil {
		return nil, nil, err
	}
	h.headers(req, id)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, fmt.Errorf("%s %s", resp.Status, snippet(b))
	}
	return resp, b, nil
}

func (h *Held) headers(req *http.Request, id string) {
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("MCP-Protocol-Version", h.protocol)
	}
}

// Close ends every session: its GET stream, then a DELETE.
func (h *Held) Close() {
	h.mu.Lock()
	open := h.open
	h.open = nil
	h.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, s := range open {
		s.cancel()
		s.body.Close()
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodDelete, h.url, nil)
			if err != nil {
				return
			}
			h.headers(req, s.id)
			if resp, err := h.hc.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	h.tr.CloseIdleConnections()
}

func snippet(b []byte) string {
	const n = 300
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
