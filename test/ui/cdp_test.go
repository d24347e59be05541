package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// page is one headless Chromium tab driven over the DevTools protocol, for
// tests that click: Runtime.evaluate runs JavaScript in the page as a user
// script would (button clicks, form submits).
type page struct {
	ws *websocket.Conn
	mu sync.Mutex
	id int
}

// openPage starts Chromium on url with remote debugging on a free port
// and attaches to its tab.
func openPage(t *testing.T, bin, url string) *page {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still write there
	// while the test's cleanup removes it.
	dir, err := os.MkdirTemp("", "toolhub-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+dir, "--remote-debugging-port=0", "--remote-allow-origins=*", "--window-size=1400,1000", url)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // one group: the browser and its helpers
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		_ = os.RemoveAll(dir) // best effort
	})
	var port string
	waitUntil(t, 60*time.Second, "Chromium's DevTools port", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if err != nil {
			return false
		}
		port, _, _ = strings.Cut(string(b), "\n")
		return port != ""
	})
	var ws string
	waitUntil(t, 60*time.Second, "Chromium's tab", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var targets []struct{ Type, URL, WebSocketDebuggerURL string }
		if json.NewDecoder(resp.Body).Decode(&targets) != nil {
			return false
		}
		for _, tg := range targets {
			if tg.Type == "page" && strings.HasPrefix(tg.URL, url) {
				ws = tg.WebSocketDebuggerURL
			}
		}
		return ws != ""
	})
	c, _, err := websocket.DefaultDialer.Dial(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &page{ws: c}
}

// eval runs expr in the page (awaiting a promise) and returns its value.
func (p *page) eval(t *testing.T, expr string) any {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.id++
	id := p.id
	if err := p.ws.WriteJSON(map[string]any{"id": id, "method": "Runtime.evaluate",
		"params": map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}}); err != nil {
		t.Fatal(err)
	}
	_ = p.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Result struct {
					Value any `json:"value"`
				} `json:"result"`
				ExceptionDetails *struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			} `json:"result"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := p.ws.ReadJSON(&msg); err != nil {
			t.Fatalf("DevTools: %v", err)
		}
		if msg.ID != id {
			continue // an event
		}
		if msg.Error != nil {
			t.Fatalf("DevTools: %s: %s", expr, msg.Error.Message)
		}
		if e := msg.Result.ExceptionDetails; e != nil {
			t.Fatalf("page: %s: %s %s", expr, e.Text, e.Exception.Description)
		}
		return msg.Result.Result.Value
	}
}

// waitJS polls a JavaScript condition in the page until it is true (an
// exception, e.g. while the page is still loading, counts as false).
func (p *page) waitJS(t *testing.T, what, cond string) {
	t.Helper()
	expr := "(() => { try { return !!(" + cond + "); } catch (e) { return false; } })()"
	waitUntil(t, 30*time.Second, what, func() bool { return p.eval(t, expr) == true })
}

// click clicks the element selector names, failing when there is none.
func (p *page) click(t *testing.T, selector string) {
	t.Helper()
	sel, _ := json.Marshal(selector)
	p.waitJS(t, selector+" on the page", fmt.Sprintf("document.querySelector(%s)", sel))
	p.eval(t, fmt.Sprintf("document.querySelector(%s).click()", sel))
}

// waitUntil polls cond until it holds, failing the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
}
