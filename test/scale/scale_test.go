// Package scale runs several hubs on one PostgreSQL and one Redis and
// checks that they behave as one: a vendor registered on one is callable
// on all, limits are global, jobs and the ledger are shared.
package scale

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/drill"
)

func dsn() string {
	if d := os.Getenv("TOOLHUB_TEST_POSTGRES"); d != "" {
		return d
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// cluster starts n hubs sharing a fresh PostgreSQL schema and Redis prefix.
func cluster(t *testing.T, n int, extra string) []*drill.Lab {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	schema := "toolhub_scale_" + id
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn())
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			conn.Close(context.Background())
		}
	})
	cfg := fmt.Sprintf(`
postgres: %q
postgres_schema: %s
redis: redis://127.0.0.1:6379/0
redis_prefix: "scale-%s:"
instances: %d
outbound: {allow: ["127.0.0.0/8"]}
%s`, dsn(), schema, id, n, extra)
	var labs []*drill.Lab
	for range n {
		l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		labs = append(labs, l)
	}
	return labs
}

func post(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestRegistrationPropagates(t *testing.T) {
	labs := cluster(t, 3, "")
	start := time.Now()
	st, m := post(t, labs[0].HubURL+"/v1/vendors/shared", map[string]any{"mcp": map[string]any{"transport": "http", "url": labs[0].URL + "/weather-a/mcp"}})
	if st != 200 {
		t.Fatalf("register on hub 0: %d %v", st, m)
	}
	for i, l := range labs[1:] {
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		err := l.WaitReady(ctx, "shared")
		cancel()
		if err != nil {
			t.Fatalf("hub %d: %v", i+1, err)
		}
		t.Logf("hub %d: vendor callable %v after it was registered on hub 0", i+1, time.Since(start).Round(time.Millisecond))
		res, err := l.App.Gateway.Call(t.Context(), &hub.Call{Tenant: "default", Name: "shared__current_weather", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil || res.Provenance.Vendor != "shared" {
			t.Fatalf("hub %d calling it: %v", i+1, err)
		}
	}
}

func TestOneLedgerAndSharedJobs(t *testing.T) {
	labs := cluster(t, 3, `
vendors:
  - {id: weather-a, mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}, probe: {disabled: true}}
  - {id: doubao, mcp: {transport: http, url: "{{vendors}}/doubao/mcp"}, probe: {disabled: true}}
capabilities:
  - name: image.generate
    input_schema: {type: object, required: [prompt], properties: {prompt: {type: string}}}
    chain: [{tool: doubao/generate_image}]
fallback: {capabilities: {image.generate: {queue: true}}}
governance: {retry: {max: 0}}
jobs: {max_attempts: 20}
`)
	// Calls on every hub land in one ledger, exactly once each.
	var wg sync.WaitGroup
	var okCalls atomic.Int64
	for _, l := range labs {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					if _, err := l.App.Gateway.Call(t.Context(), &hub.Call{Tenant: "default", Name: "weather-a__current_weather", Arguments: map[string]any{"city": "Oslo"}}); err == nil {
						okCalls.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	var atVendors int64
	for _, l := range labs {
		if err := l.App.Meter.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		atVendors += l.Vendors["weather-a"].Counters().OK
	}
	q := billing.ReportQuery{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), GroupBy: []string{"vendor"}, Format: "json"}
	var buf bytes.Buffer
	if err := billing.Report(t.Context(), labs[2].App.Ledger, &buf, q); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rep); err != nil {
		t.Fatalf("report %s: %v", buf.String(), err)
	}
	var ledgerCalls float64
	for _, r := range rep.Rows {
		if r["vendor"] == "weather-a" {
			ledgerCalls, _ = r["calls"].(float64)
		}
	}
	if okCalls.Load() != 180 || atVendors != 180 || ledgerCalls != 180 {
		t.Errorf("client ok %d, vendors %d, ledger %v: want 180 each", okCalls.Load(), atVendors, ledgerCalls)
	}

	// A job queued on one hub can be finished by another: hub 0 queues
	// while doubao is down and is then stopped; the others finish it.
	for _, l := range labs {
		if err := l.SetMode("doubao", "fail"); err != nil {
			t.Fatal(err)
		}
	}
	res, err := labs[0].App.Gateway.Call(t.Context(), &hub.Call{Tenant: "default", Name: "image.generate", Arguments: map[string]any{"prompt": "x"}})
	if err != nil || !res.Provenance.Queued {
		t.Fatalf("queue on hub 0: %v %+v", err, res)
	}
	labs[0].Close()
	for _, l := range labs[1:] {
		if err := l.SetMode("doubao", "ok"); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		j, err := labs[1].App.Jobs.Get(t.Context(), res.Provenance.JobID)
		if err == nil && j.Status == "succeeded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not finished by the other hubs: %+v %v", res.Provenance.JobID, j, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
}
