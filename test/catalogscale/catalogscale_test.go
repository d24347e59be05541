// Package catalogscale measures how toolhub's costs grow with the
// catalog: a generated catalog (registry/toolcorpus) of 10, 100 and 1,000
// vendors × 10 tools, in one process. make bench runs it
// (TOOLHUB_CATALOG_SCALE=1) and copies the table to docs/benchmarks.md.
package catalogscale

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/orchestrator"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/toolcorpus"
)

func pct(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// TestCatalogScale prints, for each catalog size: the time to register
// every vendor's tools in the catalog (schemas compiled), the Go heap in
// use and the process's RSS after it, one tools/list on /mcp (latency,
// bytes), tool search and offline planning per goal (p50, p99 over the
// 300 goals, three rounds), and a resync after one vendor's tools change
// (the catalog update and the next search, which indexes the vendor
// again; the median of 21).
func TestCatalogScale(t *testing.T) {
	if os.Getenv("TOOLHUB_CATALOG_SCALE") == "" {
		t.Skip("make bench runs this (TOOLHUB_CATALOG_SCALE=1)")
	}
	var rows []string
	for _, n := range []int{10, 100, 1000} {
		c := toolcorpus.Generate(n, 1)
		base := heapMB()
		cat := registry.NewCatalog()
		start := time.Now()
		for _, v := range c.Vendors {
			if errs := cat.SetVendorTools(v.ID, v.Tools); len(errs) > 0 {
				t.Fatal(errs)
			}
		}
		reg := time.Since(start)
		gw := hub.NewGateway(cat, hub.UpstreamsFunc(func(string) (hub.Invoker, bool) { return nil, false }), nil)
		p := &orchestrator.Planner{Gateway: gw, Catalog: cat}
		if err := p.Init(); err != nil {
			t.Fatal(err)
		}
		srv := api.NewServer(gw, &api.Options{ToolSearch: &api.ToolSearchOptions{Search: func(tenant, q string, k int) []api.SearchHit {
			var out []api.SearchHit
			for _, h := range p.Search(tenant, q, k) {
				out = append(out, api.SearchHit{Entry: h.Entry, Score: h.Score, Matched: h.Matched})
			}
			return out
		}}})
		ts := httptest.NewServer(srv)
		p.Search("default", "warm up the index", 5)
		heap, rss := heapMB()-base, rssMB()

		// tools/list on /mcp (the fast path), in a session.
		post := func(sid, body string) (*http.Response, []byte) {
			req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, b
		}
		resp, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"scale","version":"1"}}}`)
		sid := resp.Header.Get("Mcp-Session-Id")
		post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		var lists []time.Duration
		size := 0
		for i := 0; i < 20; i++ {
			s := time.Now()
			_, b := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			lists = append(lists, time.Since(s))
			size = len(b)
			if !bytes.Contains(b, []byte(`"tools"`)) {
				t.Fatalf("tools/list: %.200s", b)
			}
		}

		var search, plan []time.Duration
		for round := 0; round < 3; round++ {
			for _, g := range c.Goals {
				s := time.Now()
				p.Search("default", g.Text, 5)
				search = append(search, time.Since(s))
				s = time.Now()
				p.PlanOffline("default", g.Text)
				plan = append(plan, time.Since(s))
			}
		}

		// One vendor's tools change (a list_changed resync), back and
		// forth 21 times: the median.
		v := c.Vendors[len(c.Vendors)/2]
		changed := slices.Clone(v.Tools)
		changed[0].Description += " Now with hourly data."
		var updates, resyncs []time.Duration
		for i := 0; i < 21; i++ {
			defs := changed
			if i%2 == 1 {
				defs = v.Tools
			}
			s := time.Now()
			cat.SetVendorTools(v.ID, defs)
			updates = append(updates, time.Since(s))
			p.Search("default", c.Goals[0].Text, 5)
			resyncs = append(resyncs, time.Since(s))
		}
		update, resync := pct(updates, 0.5), pct(resyncs, 0.5)
		ts.Close()
		srv.Close()

		rows = append(rows, fmt.Sprintf("| %d × 10 | %d | %v | %.0f MB | %.0f MB | %v | %.1f KB | %v / %v | %v / %v | %v (catalog %v) |",
			n, c.Tools(), reg.Round(time.Millisecond), heap, rss, pct(lists, 0.5).Round(10*time.Microsecond), float64(size)/1024,
			pct(search, 0.5).Round(time.Microsecond), pct(search, 0.99).Round(time.Microsecond),
			pct(plan, 0.5).Round(time.Microsecond), pct(plan, 0.99).Round(time.Microsecond),
			resync.Round(100*time.Microsecond), update.Round(10*time.Microsecond)))
	}
	fmt.Println("| vendors | tools | registration | heap | RSS | tools/list p50 | tools/list bytes | search p50 / p99 | planner p50 / p99 | one-vendor resync |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Println(r)
	}
}
