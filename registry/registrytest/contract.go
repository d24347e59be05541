package registrytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolhub/toolhub/registry"
)

// ReopenFunc opens another [registry.Store] on the data behind s (the same
// file, the same schema). s may still be open (the suite then uses both
// stores at once, as two instances of the hub would) or already closed
// (the suite checks that the data survived). Like newStore, it registers
// the new store's Close with t.Cleanup.
type ReopenFunc func(t *testing.T, s registry.Store) registry.Store

// RunStoreContract runs the contract suite against the stores newStore
// makes. newStore returns a fresh, empty store and registers its Close with
// t.Cleanup; the suite may close a store itself first, so Close must
// tolerate a second call.
//
// reopen is optional (at most one): given, the suite also checks that data
// survives Close and that two open stores on the same data agree, including
// on version conflicts. A store with nothing to reopen (memory) omits it.
func RunStoreContract(t *testing.T, newStore func(t *testing.T) registry.Store, reopen ...ReopenFunc) {
	t.Helper()
	if len(reopen) > 1 {
		t.Fatalf("RunStoreContract: got %d reopen funcs, want at most one", len(reopen))
	}
	c := &contract{newStore: newStore}
	if len(reopen) == 1 {
		c.reopen = reopen[0]
	}

	t.Run("vendor round trip", c.vendorRoundTrip)
	t.Run("returned vendors are copies", c.vendorCopies)
	t.Run("versions and history", c.versionsAndHistory)
	t.Run("expected version", c.expectedVersion)
	t.Run("concurrent puts with one expected version: one wins", c.concurrentSameExpect)
	t.Run("concurrent puts with any version: none lost", c.concurrentAny)
	t.Run("concurrent put and delete: one after the other", c.concurrentPutDelete)
	t.Run("invalid vendor refused with its Validate error", c.invalidVendor)
	t.Run("unknown ids: ErrNotFound", c.notFound)
	t.Run("list vendors: newest versions by id", c.listVendors)
	t.Run("delete vendor removes its history", c.deleteVendor)
	t.Run("tenants", c.tenants)
	t.Run("capabilities", c.capabilities)
	t.Run("survives close and reopen", c.survivesReopen)
	t.Run("two open stores on the same data", c.twoInstances)
	t.Run("tool pins", c.toolPins)
}

type contract struct {
	newStore func(t *testing.T) registry.Store
	reopen   ReopenFunc
}

// cmpOpts is how the suite compares what it stored with what it read back.
var cmpOpts = cmp.Options{
	cmpopts.EquateEmpty(),
	cmpopts.IgnoreUnexported(registry.Capability{}), // compiled schemas are rebuilt by whoever serves them
	cmp.FilterValues(func(a, b json.RawMessage) bool { return len(a) > 0 || len(b) > 0 },
		cmp.Comparer(sameJSON)),
}

// sameJSON reports whether a and b hold the same JSON tokens in the same
// order: whitespace and string escapes may differ, key order may not.
func sameJSON(a, b json.RawMessage) bool {
	ta, errA := jsonTokens(a)
	tb, errB := jsonTokens(b)
	if errA != nil || errB != nil {
		return bytes.Equal(a, b)
	}
	return slices.Equal(ta, tb)
}

func jsonTokens(raw []byte) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var out []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%T:%v", tok, tok))
	}
}

// Vendors covers every field of a vendor spec: each transport, env and
// header maps (with characters that need escaping), limits, durations.
func Vendors() []registry.Vendor {
	return []registry.Vendor{
		{
			ID:   "files",
			Name: "Files (stdio)",
			MCP: &registry.MCPSpec{
				Transport: registry.TransportStdio,
				Command:   "npx",
				Args:      []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/data dir"},
				Env:       map[string]string{"HOME": "/var/empty", "FILES_TOKEN": "${FILES_TOKEN}", "EMPTY": ""},
				Dir:       "/srv/files",
			},
			Timeout: registry.Duration(2500 * time.Millisecond),
			Limits:  registry.Limits{RPS: 12.5, Burst: 3, Concurrency: 4},
		},
		{
			ID: "weather-a",
			MCP: &registry.MCPSpec{
				Transport: registry.TransportHTTP,
				URL:       "https://weather.example.com/mcp?region=eu&units=<metric>",
				Headers: map[string]string{
					"Authorization": "Bearer ${WEATHER_KEY}",
					"X-Note":        "ünïcode ✓ \"quoted\" \\ back\tslash",
				},
			},
			Timeout:  registry.Duration(5 * time.Second),
			Limits:   registry.Limits{RPS: 50, Burst: 10, Concurrency: 16},
			Disabled: true,
		},
		{
			ID:  "maps",
			MCP: &registry.MCPSpec{Transport: registry.TransportSSE, URL: "http://127.0.0.1:9102/sse"},
		},
		{
			ID:     "travel-agent",
			Name:   "Travel agent",
			A2A:    &registry.A2ASpec{Card: "http://127.0.0.1:9200/.well-known/agent-card.json"},
			Limits: registry.Limits{Concurrency: 2},
		},
	}
}

// Tenants covers every field of a tenant spec.
func Tenants() []registry.Tenant {
	return []registry.Tenant{
		{ID: "acme.prod", Name: "ACME production", Tools: []string{"weather-a__*", "image.*"}, Priority: "interactive"},
		{ID: "Batch_Jobs", Priority: "batch"},
		{ID: "a-b", Name: "A–B ✓"},
	}
}

// Capabilities covers every field of a capability spec. Its input schema
// lists properties out of alphabetical order and holds characters JSON
// encoders like to escape: a store must give both back as they were.
func Capabilities() []registry.Capability {
	return []registry.Capability{
		{
			Name:        "image.generate",
			Description: "Generate an image <from> a prompt & a size",
			InputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"zprompt": {"type": "string", "description": "what to draw <b>here</b> & there"},
					"size": {"type": "string", "enum": ["1024x1024", "512x512"]},
					"a": {"type": "integer", "minimum": 1, "maximum": 4}
				},
				"required": ["zprompt"]
			}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
			Chain: []registry.ChainStep{
				{
					Tool:   "doubao/generate_image",
					Args:   []registry.Mapping{{From: "/zprompt", To: "/prompt"}, {From: "/size", To: "/options/size"}},
					Result: []registry.Mapping{{From: "/data/0/url", To: "/url"}},
				},
				{Tool: "sd/txt2img"},
			},
		},
		{
			Name:  "weather.current",
			Chain: []registry.ChainStep{{Tool: "weather-a/current_weather"}},
		},
	}
}

func (c *contract) vendorRoundTrip(t *testing.T) {
	for _, v := range Vendors() {
		t.Run(v.ID, func(t *testing.T) {
			ctx := t.Context()
			s := c.newStore(t)
			before := time.Now().UTC().Truncate(time.Microsecond)
			r, err := s.PutVendor(ctx, v, 0, "alice@example.com")
			after := time.Now().UTC()
			if err != nil {
				t.Fatalf("PutVendor: %v", err)
			}
			want := registry.VendorRecord{Vendor: v, Version: 1, UpdatedAt: r.UpdatedAt, UpdatedBy: "alice@example.com"}
			if diff := cmp.Diff(want, r, cmpOpts); diff != "" {
				t.Errorf("PutVendor returned (-want +got):\n%s", diff)
			}
			checkStamp(t, r.UpdatedAt, before, after)

			got, err := s.GetVendor(ctx, v.ID)
			if err != nil {
				t.Fatalf("GetVendor: %v", err)
			}
			if diff := cmp.Diff(r, got, cmpOpts); diff != "" {
				t.Errorf("GetVendor differs from what PutVendor returned (-put +get):\n%s", diff)
			}
			checkStamp(t, got.UpdatedAt, before, after)

			h, err := s.VendorHistory(ctx, v.ID)
			if err != nil {
				t.Fatalf("VendorHistory: %v", err)
			}
			if diff := cmp.Diff([]registry.VendorRecord{r}, h, cmpOpts); diff != "" {
				t.Errorf("VendorHistory (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("empty updated by", func(t *testing.T) {
		s := c.newStore(t)
		r := mustPutVendor(t, s, Vendors()[2], 0, "")
		got := mustGetVendor(t, s, r.Vendor.ID)
		if diff := cmp.Diff(r, got, cmpOpts); diff != "" {
			t.Errorf("GetVendor (-put +get):\n%s", diff)
		}
	})
}

// checkStamp checks an UpdatedAt: in UTC, whole microseconds, within the
// call that made it.
func checkStamp(t *testing.T, at, before, after time.Time) {
	t.Helper()
	if at.Location() != time.UTC {
		t.Errorf("UpdatedAt %v is in %v, want UTC", at, at.Location())
	}
	if !at.Equal(at.Truncate(time.Microsecond)) {
		t.Errorf("UpdatedAt %v has a fraction of a microsecond; stores keep microseconds", at)
	}
	if at.Before(before) || at.After(after) {
		t.Errorf("UpdatedAt %v is outside the call [%v, %v]", at, before, after)
	}
}

func (c *contract) vendorCopies(t *testing.T) {
	s := c.newStore(t)
	v := Vendors()[0]
	put := mustPutVendor(t, s, v, 0, "alice")

	// Changing what was passed in or handed out must not change the store.
	v.MCP.Env["HOME"] = "/changed"
	v.MCP.Args[0] = "changed"
	put.Vendor.MCP.Env["HOME"] = "/changed"
	got := mustGetVendor(t, s, v.ID)
	got.Vendor.MCP.Env["HOME"] = "/changed"
	got.Vendor.MCP.Headers = map[string]string{"X": "y"}
	got.Vendor.MCP.Args[1] = "changed"

	want := Vendors()[0]
	if diff := cmp.Diff(want, mustGetVendor(t, s, v.ID).Vendor, cmpOpts); diff != "" {
		t.Errorf("stored vendor changed through a caller's copy (-want +got):\n%s", diff)
	}
	h, err := s.VendorHistory(t.Context(), v.ID)
	if err != nil {
		t.Fatalf("VendorHistory: %v", err)
	}
	h[0].Vendor.MCP.Env["HOME"] = "/changed"
	if diff := cmp.Diff(want, mustGetVendor(t, s, v.ID).Vendor, cmpOpts); diff != "" {
		t.Errorf("stored vendor changed through a history copy (-want +got):\n%s", diff)
	}
}

func (c *contract) versionsAndHistory(t *testing.T) {
	ctx := t.Context()
	s := c.newStore(t)
	base := Vendors()[1]
	var want []registry.VendorRecord
	for i := range 3 {
		v := base
		v.Name = fmt.Sprintf("Weather v%d", i+1)
		v.Timeout = registry.Duration(time.Duration(i+1) * time.Second)
		by := fmt.Sprintf("editor-%d", i+1)
		r := mustPutVendor(t, s, v, int64(i), by)
		if r.Version != int64(i+1) {
			t.Fatalf("put %d: version %d, want %d", i+1, r.Version, i+1)
		}
		if r.UpdatedBy != by {
			t.Errorf("put %d: UpdatedBy %q, want %q", i+1, r.UpdatedBy, by)
		}
		want = append(want, r)
	}
	for i := 1; i < len(want); i++ {
		if want[i].UpdatedAt.Before(want[i-1].UpdatedAt) {
			t.Errorf("version %d stamped %v, before version %d at %v", i+1, want[i].UpdatedAt, i, want[i-1].UpdatedAt)
		}
	}

	h, err := s.VendorHistory(ctx, base.ID)
	if err != nil {
		t.Fatalf("VendorHistory: %v", err)
	}
	if diff := cmp.Diff(want, h, cmpOpts); diff != "" {
		t.Errorf("VendorHistory, oldest first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[2], mustGetVendor(t, s, base.ID), cmpOpts); diff != "" {
		t.Errorf("GetVendor is not the newest version (-want +got):\n%s", diff)
	}
}

func (c *contract) expectedVersion(t *testing.T) {
	tests := []struct {
		name     string
		existing int   // versions stored before the put
		expect   int64 // passed to PutVendor
		want     int64 // version stored; 0 means ErrVersionConflict
	}{
		{name: "new vendor, expect 0", existing: 0, expect: 0, want: 1},
		{name: "new vendor, expect any", existing: 0, expect: -1, want: 1},
		{name: "new vendor, expect 1", existing: 0, expect: 1, want: 0},
		{name: "new vendor, expect 3", existing: 0, expect: 3, want: 0},
		{name: "existing, expect 0", existing: 2, expect: 0, want: 0},
		{name: "existing, expect an older version", existing: 2, expect: 1, want: 0},
		{name: "existing, expect a future version", existing: 2, expect: 3, want: 0},
		{name: "existing, expect current", existing: 2, expect: 2, want: 3},
		{name: "existing, expect any", existing: 2, expect: -1, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			s := c.newStore(t)
			v := Vendors()[2]
			for i := range tt.existing {
				mustPutVendor(t, s, v, int64(i), "setup")
			}
			v.Name = "changed"
			r, err := s.PutVendor(ctx, v, tt.expect, "test")
			if tt.want == 0 {
				if !errors.Is(err, registry.ErrVersionConflict) {
					t.Fatalf("PutVendor(expect %d) at version %d: err = %v, want ErrVersionConflict", tt.expect, tt.existing, err)
				}
				if !strings.Contains(err.Error(), v.ID) {
					t.Errorf("conflict error %q does not name vendor %q", err, v.ID)
				}
				// A refused put changes nothing.
				h, err := s.VendorHistory(ctx, v.ID)
				switch {
				case tt.existing == 0 && !errors.Is(err, registry.ErrNotFound):
					t.Errorf("after a refused first put, VendorHistory: %d records, err %v; want ErrNotFound", len(h), err)
				case tt.existing > 0 && (err != nil || len(h) != tt.existing):
					t.Errorf("after a refused put, VendorHistory: %d records, err %v; want %d records", len(h), err, tt.existing)
				}
				return
			}
			if err != nil {
				t.Fatalf("PutVendor(expect %d) at version %d: %v", tt.expect, tt.existing, err)
			}
			if r.Version != tt.want {
				t.Errorf("version %d, want %d", r.Version, tt.want)
			}
			if got := mustGetVendor(t, s, v.ID); got.Version != tt.want || got.Vendor.Name != "changed" {
				t.Errorf("GetVendor: version %d name %q, want version %d name %q", got.Version, got.Vendor.Name, tt.want, "changed")
			}
		})
	}
}

// race runs n PutVendor calls at once, each on stores[i%len(stores)], and
// returns their results and errors by caller.
func race(t *testing.T, stores []registry.Store, v registry.Vendor, expect int64, n int) ([]registry.VendorRecord, []error) {
	t.Helper()
	recs := make([]registry.VendorRecord, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v := v.Clone()
			v.Name = fmt.Sprintf("writer %d", i)
			<-start
			recs[i], errs[i] = stores[i%len(stores)].PutVendor(t.Context(), v, expect, fmt.Sprintf("writer-%d", i))
		})
	}
	close(start)
	wg.Wait()
	return recs, errs
}

// checkOneWinner checks a race of puts with one expected version: exactly
// one stored, every other one refused with ErrVersionConflict.
func checkOneWinner(t *testing.T, s registry.Store, id string, existing int, recs []registry.VendorRecord, errs []error) {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("writers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, registry.ErrVersionConflict):
			t.Errorf("writer %d: %v, want nil or ErrVersionConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no writer won: %v", errors.Join(errs...))
	}
	if got := recs[winner].Version; got != int64(existing+1) {
		t.Errorf("winner stored version %d, want %d", got, existing+1)
	}
	h, err := s.VendorHistory(t.Context(), id)
	if err != nil {
		t.Fatalf("VendorHistory: %v", err)
	}
	if len(h) != existing+1 {
		t.Fatalf("history has %d versions, want %d", len(h), existing+1)
	}
	if diff := cmp.Diff(recs[winner], h[existing], cmpOpts); diff != "" {
		t.Errorf("newest version is not the winner's (-winner +stored):\n%s", diff)
	}
}

// checkNoneLost checks a race of puts with expect -1: every put stored, each
// with its own version, and the history holds them all.
func checkNoneLost(t *testing.T, s registry.Store, id string, existing int, recs []registry.VendorRecord, errs []error) {
	t.Helper()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("PutVendor(expect -1): %v", err)
	}
	n := len(recs)
	byVersion := map[int64]registry.VendorRecord{}
	for _, r := range recs {
		if r.Version <= int64(existing) || r.Version > int64(existing+n) {
			t.Errorf("%s stored as version %d, want %d..%d", r.Vendor.Name, r.Version, existing+1, existing+n)
		}
		if prev, dup := byVersion[r.Version]; dup {
			t.Errorf("%s and %s both stored as version %d", prev.Vendor.Name, r.Vendor.Name, r.Version)
		}
		byVersion[r.Version] = r
	}
	h, err := s.VendorHistory(t.Context(), id)
	if err != nil {
		t.Fatalf("VendorHistory: %v", err)
	}
	if len(h) != existing+n {
		t.Fatalf("history has %d versions, want %d", len(h), existing+n)
	}
	for i, r := range h {
		if r.Version != int64(i+1) {
			t.Errorf("history[%d] is version %d, want %d", i, r.Version, i+1)
		}
		if i >= existing {
			if diff := cmp.Diff(byVersion[r.Version], r, cmpOpts); diff != "" {
				t.Errorf("history[%d] differs from what its writer was told (-told +stored):\n%s", i, diff)
			}
		}
	}
}

func (c *contract) concurrentSameExpect(t *testing.T) {
	for _, existing := range []int{0, 2} {
		t.Run(fmt.Sprintf("at version %d", existing), func(t *testing.T) {
			s := c.newStore(t)
			v := Vendors()[3]
			for i := range existing {
				mustPutVendor(t, s, v, int64(i), "setup")
			}
			recs, errs := race(t, []registry.Store{s}, v, int64(existing), 10)
			checkOneWinner(t, s, v.ID, existing, recs, errs)
		})
	}
}

func (c *contract) concurrentAny(t *testing.T) {
	s := c.newStore(t)
	v := Vendors()[3]
	mustPutVendor(t, s, v, 0, "setup")
	recs, errs := race(t, []registry.Store{s}, v, -1, 10)
	checkNoneLost(t, s, v.ID, 1, recs, errs)
}

// A put racing a delete must end as if one ran after the other: the vendor
// gone (put then delete, or delete then a refused put), or registered anew
// at version 1 (delete then put). Never a vendor whose history lost its
// first versions, or a put that revived a deleted vendor at an old version.
func (c *contract) concurrentPutDelete(t *testing.T) {
	for _, expect := range []int64{3, -1} {
		t.Run(fmt.Sprintf("expect %d", expect), func(t *testing.T) {
			ctx := t.Context()
			s := c.newStore(t)
			v := Vendors()[2]
			for round := range 20 {
				for i := range 3 {
					mustPutVendor(t, s, v, int64(i), "setup")
				}
				start := make(chan struct{})
				var putErr, delErr error
				var wg sync.WaitGroup
				wg.Go(func() { <-start; _, putErr = s.PutVendor(ctx, v, expect, "racer") })
				wg.Go(func() { <-start; delErr = s.DeleteVendor(ctx, v.ID) })
				close(start)
				wg.Wait()
				if delErr != nil {
					t.Fatalf("round %d: DeleteVendor: %v", round, delErr)
				}
				if putErr != nil && !errors.Is(putErr, registry.ErrVersionConflict) {
					t.Fatalf("round %d: PutVendor: %v", round, putErr)
				}
				h, err := s.VendorHistory(ctx, v.ID)
				switch {
				case errors.Is(err, registry.ErrNotFound):
					continue // put then delete, or delete then a refused put
				case err != nil:
					t.Fatalf("round %d: VendorHistory: %v", round, err)
				case putErr != nil || expect >= 0 || len(h) != 1 || h[0].Version != 1:
					var versions []int64
					for _, r := range h {
						versions = append(versions, r.Version)
					}
					t.Fatalf("round %d: after put (err %v) and delete, the vendor has versions %v; want it gone, or at version 1 alone after a put of any version", round, putErr, versions)
				}
				if err := s.DeleteVendor(ctx, v.ID); err != nil {
					t.Fatalf("round %d: clean up: %v", round, err)
				}
			}
		})
	}
}

func (c *contract) invalidVendor(t *testing.T) {
	valid := Vendors()[2]
	tests := []struct {
		name   string
		change func(v *registry.Vendor)
	}{
		{name: "bad id", change: func(v *registry.Vendor) { v.ID = "Bad_ID" }},
		{name: "empty id", change: func(v *registry.Vendor) { v.ID = "" }},
		{name: "no mcp or a2a section", change: func(v *registry.Vendor) { v.MCP = nil }},
		{name: "both sections", change: func(v *registry.Vendor) { v.A2A = &registry.A2ASpec{Card: "https://a.example/card.json"} }},
		{name: "stdio without command", change: func(v *registry.Vendor) { v.MCP = &registry.MCPSpec{Transport: registry.TransportStdio} }},
		{name: "unknown transport", change: func(v *registry.Vendor) { v.MCP.Transport = "carrier-pigeon" }},
		{name: "negative timeout", change: func(v *registry.Vendor) { v.Timeout = -1 }},
		{name: "negative limits", change: func(v *registry.Vendor) { v.Limits.Burst = -1 }},
	}
	for _, tt := range tests {
		for _, existing := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s, at version %d", tt.name, existing), func(t *testing.T) {
				ctx := t.Context()
				s := c.newStore(t)
				if existing > 0 {
					mustPutVendor(t, s, valid, 0, "setup")
				}
				v := valid.Clone()
				tt.change(&v)
				want := v.Validate()
				if want == nil {
					t.Fatalf("test vendor is valid: %+v", v)
				}
				// The spec is checked before the version: a wrong expect
				// still gives the spec's error.
				for _, expect := range []int64{int64(existing), -1, 7} {
					_, err := s.PutVendor(ctx, v, expect, "test")
					if err == nil || err.Error() != want.Error() {
						t.Errorf("PutVendor(expect %d): err = %v, want the Validate error %q", expect, err, want)
					}
				}
				h, err := s.VendorHistory(ctx, valid.ID)
				if existing == 0 && !errors.Is(err, registry.ErrNotFound) {
					t.Errorf("an invalid vendor was stored: history %v, err %v", h, err)
				}
				if existing > 0 && len(h) != existing {
					t.Errorf("after refused puts, history has %d versions (err %v), want %d", len(h), err, existing)
				}
			})
		}
	}
}

func (c *contract) notFound(t *testing.T) {
	const id = "no-such-id"
	tests := []struct {
		name string
		op   func(s registry.Store) error
	}{
		{"GetVendor", func(s registry.Store) error { _, err := s.GetVendor(t.Context(), id); return err }},
		{"VendorHistory", func(s registry.Store) error { _, err := s.VendorHistory(t.Context(), id); return err }},
		{"DeleteVendor", func(s registry.Store) error { return s.DeleteVendor(t.Context(), id) }},
		{"GetTenant", func(s registry.Store) error { _, err := s.GetTenant(t.Context(), id); return err }},
		{"DeleteTenant", func(s registry.Store) error { return s.DeleteTenant(t.Context(), id) }},
		{"DeleteCapability", func(s registry.Store) error { return s.DeleteCapability(t.Context(), id) }},
	}
	s := c.newStore(t)
	// Other entries exist, so the store is not simply empty.
	mustPutVendor(t, s, Vendors()[0], 0, "setup")
	if err := s.PutTenant(t.Context(), Tenants()[0]); err != nil {
		t.Fatalf("PutTenant: %v", err)
	}
	if err := s.PutCapability(t.Context(), Capabilities()[0]); err != nil {
		t.Fatalf("PutCapability: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op(s)
			if !errors.Is(err, registry.ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
			if !strings.Contains(err.Error(), id) {
				t.Errorf("error %q does not name %q", err, id)
			}
		})
	}
}

func (c *contract) listVendors(t *testing.T) {
	ctx := t.Context()
	s := c.newStore(t)
	got, err := s.ListVendors(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("ListVendors on an empty store: %v, %v; want none", got, err)
	}

	// Ids whose byte order differs from a natural-language collation
	// ('-' < '1' < 'b'), put in no particular order, with 1-3 versions each.
	ids := []string{"ab", "b", "a-c", "a", "a1"}
	newest := map[string]registry.VendorRecord{}
	for i, id := range ids {
		v := Vendors()[0]
		v.ID = id
		for n := range i%3 + 1 {
			v.Name = fmt.Sprintf("%s v%d", id, n+1)
			newest[id] = mustPutVendor(t, s, v, int64(n), "setup")
		}
	}
	var want []registry.VendorRecord
	for _, id := range []string{"a", "a-c", "a1", "ab", "b"} {
		want = append(want, newest[id])
	}
	got, err = s.ListVendors(ctx)
	if err != nil {
		t.Fatalf("ListVendors: %v", err)
	}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("ListVendors (-want +got):\n%s", diff)
	}
}

func (c *contract) deleteVendor(t *testing.T) {
	ctx := t.Context()
	s := c.newStore(t)
	gone, kept := Vendors()[0], Vendors()[1]
	for i := range 3 {
		mustPutVendor(t, s, gone, int64(i), "setup")
	}
	keptRec := mustPutVendor(t, s, kept, 0, "setup")

	if err := s.DeleteVendor(ctx, gone.ID); err != nil {
		t.Fatalf("DeleteVendor: %v", err)
	}
	if _, err := s.GetVendor(ctx, gone.ID); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("GetVendor after delete: err = %v, want ErrNotFound", err)
	}
	if _, err := s.VendorHistory(ctx, gone.ID); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("VendorHistory after delete: err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteVendor(ctx, gone.ID); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("second DeleteVendor: err = %v, want ErrNotFound", err)
	}
	list, err := s.ListVendors(ctx)
	if err != nil {
		t.Fatalf("ListVendors: %v", err)
	}
	if diff := cmp.Diff([]registry.VendorRecord{keptRec}, list, cmpOpts); diff != "" {
		t.Errorf("ListVendors after delete (-want +got):\n%s", diff)
	}

	// Registered again, the vendor starts over at version 1.
	if _, err := s.PutVendor(ctx, gone, 3, "again"); !errors.Is(err, registry.ErrVersionConflict) {
		t.Errorf("PutVendor(expect 3) after delete: err = %v, want ErrVersionConflict", err)
	}
	r := mustPutVendor(t, s, gone, 0, "again")
	if r.Version != 1 {
		t.Errorf("re-registered at version %d, want 1", r.Version)
	}
	h, err := s.VendorHistory(ctx, gone.ID)
	if err != nil {
		t.Fatalf("VendorHistory: %v", err)
	}
	if diff := cmp.Diff([]registry.VendorRecord{r}, h, cmpOpts); diff != "" {
		t.Errorf("history after re-registering (-want +got):\n%s", diff)
	}
}

func (c *contract) tenants(t *testing.T) {
	ctx := t.Context()
	s := c.newStore(t)
	if got, err := s.ListTenants(ctx); err != nil || len(got) != 0 {
		t.Fatalf("ListTenants on an empty store: %v, %v; want none", got, err)
	}
	for _, tn := range Tenants() {
		if err := s.PutTenant(ctx, tn); err != nil {
			t.Fatalf("PutTenant(%q): %v", tn.ID, err)
		}
	}
	for _, tn := range Tenants() {
		got, err := s.GetTenant(ctx, tn.ID)
		if err != nil {
			t.Fatalf("GetTenant(%q): %v", tn.ID, err)
		}
		if diff := cmp.Diff(tn, got, cmpOpts); diff != "" {
			t.Errorf("GetTenant(%q) (-want +got):\n%s", tn.ID, diff)
		}
	}
	byID := func(ts []registry.Tenant) []registry.Tenant {
		return slices.SortedFunc(slices.Values(ts), func(a, b registry.Tenant) int { return strings.Compare(a.ID, b.ID) })
	}
	list, err := s.ListTenants(ctx)
	if err != nil {
		t.Fatalf("ListTenants: %v", err)
	}
	want := byID(Tenants()) // "Batch_Jobs" < "a-b" < "acme.prod": bytes, not a collation
	if diff := cmp.Diff(want, list, cmpOpts); diff != "" {
		t.Errorf("ListTenants (-want +got):\n%s", diff)
	}

	t.Run("returned tenants are copies", func(t *testing.T) {
		got, err := s.GetTenant(ctx, "acme.prod")
		if err != nil {
			t.Fatalf("GetTenant: %v", err)
		}
		got.Tools[0] = "changed"
		list, _ := s.ListTenants(ctx)
		for i := range list {
			if len(list[i].Tools) > 0 {
				list[i].Tools[0] = "changed"
			}
		}
		if diff := cmp.Diff(Tenants()[0], mustGetTenant(t, s, "acme.prod"), cmpOpts); diff != "" {
			t.Errorf("stored tenant changed through a caller's copy (-want +got):\n%s", diff)
		}
	})

	t.Run("put replaces", func(t *testing.T) {
		tn := Tenants()[0]
		tn.Name = "ACME (renamed)"
		tn.Tools = []string{"maps__*"}
		tn.Priority = "batch"
		if err := s.PutTenant(ctx, tn); err != nil {
			t.Fatalf("PutTenant: %v", err)
		}
		if diff := cmp.Diff(tn, mustGetTenant(t, s, tn.ID), cmpOpts); diff != "" {
			t.Errorf("GetTenant after replace (-want +got):\n%s", diff)
		}
		list, err := s.ListTenants(ctx)
		if err != nil {
			t.Fatalf("ListTenants: %v", err)
		}
		want := byID(append(Tenants()[1:], tn))
		if diff := cmp.Diff(want, list, cmpOpts); diff != "" {
			t.Errorf("ListTenants after replace (-want +got):\n%s", diff)
		}
	})

	t.Run("invalid refused", func(t *testing.T) { tenantsInvalidRefused(t, s) })

	t.Run("delete", func(t *testing.T) { tenantsDelete(t, s) })
}

func (c *contract) capabilities(t *testing.T) {
	ctx := t.Context()
	s := c.newStore(t)
	if got, err := s.ListCapabilities(ctx); err != nil || len(got) != 0 {
		t.Fatalf("ListCapabilities on an empty store: %v, %v; want none", got, err)
	}
	caps := Capabilities()
	for i := len(caps) - 1; i >= 0; i-- { // out of order
		if err := s.PutCapability(ctx, caps[i]); err != nil {
			t.Fatalf("PutCapability(%q): %v", caps[i].Name, err)
		}
	}
	// What is stored is the compiled spec: a missing input schema is an
	// object schema.
	want := Capabilities()
	want[1].InputSchema = json.RawMessage(`{"type":"object"}`)
	list := mustListCapabilities(t, s)
	if diff := cmp.Diff(want, list, cmpOpts); diff != "" {
		t.Errorf("ListCapabilities (-want +got):\n%s", diff)
	}
	for i := range list {
		if err := list[i].Compile(); err != nil {
			t.Errorf("listed capability %q does not compile: %v", list[i].Name, err)
		}
	}

	t.Run("returned capabilities are copies", func(t *testing.T) {
		list := mustListCapabilities(t, s)
		list[0].InputSchema[0] = '['
		list[0].Chain[0].Args[0].To = "/changed"
		if diff := cmp.Diff(want, mustListCapabilities(t, s), cmpOpts); diff != "" {
			t.Errorf("stored capability changed through a caller's copy (-want +got):\n%s", diff)
		}
	})

	t.Run("put replaces", func(t *testing.T) {
		cp := Capabilities()[1]
		cp.Description = "Current weather, with a fallback"
		cp.Chain = append(cp.Chain, registry.ChainStep{Tool: "weather-b/now", Args: []registry.Mapping{{From: "/city", To: "/q"}}})
		if err := s.PutCapability(ctx, cp); err != nil {
			t.Fatalf("PutCapability: %v", err)
		}
		cp.InputSchema = json.RawMessage(`{"type":"object"}`)
		if diff := cmp.Diff([]registry.Capability{want[0], cp}, mustListCapabilities(t, s), cmpOpts); diff != "" {
			t.Errorf("ListCapabilities after replace (-want +got):\n%s", diff)
		}
	})

	t.Run("invalid refused", func(t *testing.T) { capabilitiesInvalidRefused(t, s) })

	t.Run("delete", func(t *testing.T) { capabilitiesDelete(t, s) })
}

// tenantsInvalidRefused: a tenant Validate refuses is refused with its error, and not stored.
func tenantsInvalidRefused(t *testing.T, s registry.Store) {
	ctx := t.Context()
	for _, tn := range []registry.Tenant{
		{ID: ""},
		{ID: "bad id"},
		{ID: "ok", Priority: "urgent"},
		{ID: "ok", Tools: []string{"[unclosed"}},
	} {
		want := tn.Validate()
		err := s.PutTenant(ctx, tn)
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("PutTenant(%+v): err = %v, want the Validate error %v", tn, err, want)
		}
	}
	if _, err := s.GetTenant(ctx, "ok"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("an invalid tenant was stored: GetTenant err = %v", err)
	}
}

// tenantsDelete: DeleteTenant removes a tenant once; then it is not found.
func tenantsDelete(t *testing.T, s registry.Store) {
	ctx := t.Context()
	if err := s.DeleteTenant(ctx, "a-b"); err != nil {
		t.Fatalf("DeleteTenant: %v", err)
	}
	if _, err := s.GetTenant(ctx, "a-b"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("GetTenant after delete: err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteTenant(ctx, "a-b"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("second DeleteTenant: err = %v, want ErrNotFound", err)
	}
	list, err := s.ListTenants(ctx)
	if err != nil {
		t.Fatalf("ListTenants: %v", err)
	}
	var ids []string
	for _, tn := range list {
		ids = append(ids, tn.ID)
	}
	if diff := cmp.Diff([]string{"Batch_Jobs", "acme.prod"}, ids); diff != "" {
		t.Errorf("tenant ids after delete (-want +got):\n%s", diff)
	}
}

// capabilitiesInvalidRefused: a capability Compile refuses is refused with its error, and not stored.
func capabilitiesInvalidRefused(t *testing.T, s registry.Store) {
	ctx := t.Context()
	for _, cp := range []registry.Capability{
		{Name: "Image", Chain: []registry.ChainStep{{Tool: "a/b"}}},
		{Name: "image.broken"},
		{Name: "image.broken", InputSchema: json.RawMessage(`{"type":"integr"}`), Chain: []registry.ChainStep{{Tool: "a/b"}}},
		{Name: "image.broken", Chain: []registry.ChainStep{{Tool: "no-slash"}}},
		{Name: "image.broken", Chain: []registry.ChainStep{{Tool: "a/b", Args: []registry.Mapping{{From: "nopointer", To: "/x"}}}}},
	} {
		check := cp
		want := check.Compile()
		err := s.PutCapability(ctx, cp)
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("PutCapability(%q): err = %v, want the Compile error %v", cp.Name, err, want)
		}
	}
	for _, cp := range mustListCapabilities(t, s) {
		if cp.Name != "image.generate" && cp.Name != "weather.current" {
			t.Errorf("an invalid capability was stored: %q", cp.Name)
		}
	}
}

// capabilitiesDelete: DeleteCapability removes a capability once; then it is not found.
func capabilitiesDelete(t *testing.T, s registry.Store) {
	ctx := t.Context()
	if err := s.DeleteCapability(ctx, "image.generate"); err != nil {
		t.Fatalf("DeleteCapability: %v", err)
	}
	if err := s.DeleteCapability(ctx, "image.generate"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("second DeleteCapability: err = %v, want ErrNotFound", err)
	}
	list := mustListCapabilities(t, s)
	if len(list) != 1 || list[0].Name != "weather.current" {
		t.Errorf("after delete, ListCapabilities = %v, want only weather.current", list)
	}
}

func (c *contract) survivesReopen(t *testing.T) {
	if c.reopen == nil {
		t.Skip("no reopen func: the store keeps nothing past Close")
	}
	ctx := t.Context()
	s := c.newStore(t)
	var history []registry.VendorRecord
	for i := range 2 {
		v := Vendors()[0]
		v.Name = fmt.Sprintf("v%d", i+1)
		history = append(history, mustPutVendor(t, s, v, int64(i), "alice"))
	}
	other := mustPutVendor(t, s, Vendors()[3], 0, "bob")
	for _, tn := range Tenants() {
		if err := s.PutTenant(ctx, tn); err != nil {
			t.Fatalf("PutTenant: %v", err)
		}
	}
	for _, cp := range Capabilities() {
		if err := s.PutCapability(ctx, cp); err != nil {
			t.Fatalf("PutCapability: %v", err)
		}
	}
	wantTenants, err := s.ListTenants(ctx)
	if err != nil {
		t.Fatalf("ListTenants: %v", err)
	}
	wantCaps := mustListCapabilities(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2 := c.reopen(t, s)
	h, err := s2.VendorHistory(ctx, history[0].Vendor.ID)
	if err != nil {
		t.Fatalf("VendorHistory after reopen: %v", err)
	}
	if diff := cmp.Diff(history, h, cmpOpts); diff != "" {
		t.Errorf("history after reopen (-want +got):\n%s", diff)
	}
	list, err := s2.ListVendors(ctx)
	if err != nil {
		t.Fatalf("ListVendors after reopen: %v", err)
	}
	if diff := cmp.Diff([]registry.VendorRecord{history[1], other}, list, cmpOpts); diff != "" {
		t.Errorf("ListVendors after reopen (-want +got):\n%s", diff)
	}
	tenants, err := s2.ListTenants(ctx)
	if err != nil {
		t.Fatalf("ListTenants after reopen: %v", err)
	}
	if diff := cmp.Diff(wantTenants, tenants, cmpOpts); diff != "" {
		t.Errorf("ListTenants after reopen (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantCaps, mustListCapabilities(t, s2), cmpOpts); diff != "" {
		t.Errorf("ListCapabilities after reopen (-want +got):\n%s", diff)
	}
	// Versions carry on from where they were.
	if _, err := s2.PutVendor(ctx, Vendors()[0], 1, "carol"); !errors.Is(err, registry.ErrVersionConflict) {
		t.Errorf("PutVendor(expect 1) after reopen: err = %v, want ErrVersionConflict", err)
	}
	if r := mustPutVendor(t, s2, Vendors()[0], 2, "carol"); r.Version != 3 {
		t.Errorf("first put after reopen stored version %d, want 3", r.Version)
	}
}

func (c *contract) twoInstances(t *testing.T) {
	if c.reopen == nil {
		t.Skip("no reopen func: the store cannot be shared")
	}
	ctx := t.Context()
	a := c.newStore(t)
	b := c.reopen(t, a)

	v := Vendors()[1]
	r := mustPutVendor(t, a, v, 0, "on-a")
	if diff := cmp.Diff(r, mustGetVendor(t, b, v.ID), cmpOpts); diff != "" {
		t.Errorf("b does not see a's put (-a +b):\n%s", diff)
	}
	if _, err := b.PutVendor(ctx, v, 0, "on-b"); !errors.Is(err, registry.ErrVersionConflict) {
		t.Errorf("b: PutVendor(expect 0) on a's vendor: err = %v, want ErrVersionConflict", err)
	}
	if err := b.PutTenant(ctx, Tenants()[0]); err != nil {
		t.Fatalf("b: PutTenant: %v", err)
	}
	if diff := cmp.Diff(Tenants()[0], mustGetTenant(t, a, Tenants()[0].ID), cmpOpts); diff != "" {
		t.Errorf("a does not see b's tenant (-want +got):\n%s", diff)
	}

	t.Run("racing with one expected version: one wins", func(t *testing.T) {
		recs, errs := race(t, []registry.Store{a, b}, v, 1, 10)
		checkOneWinner(t, a, v.ID, 1, recs, errs)
	})
	t.Run("racing with any version: none lost", func(t *testing.T) {
		recs, errs := race(t, []registry.Store{a, b}, v, -1, 10)
		checkNoneLost(t, b, v.ID, 2, recs, errs)
	})
}

func mustPutVendor(t *testing.T, s registry.Store, v registry.Vendor, expect int64, by string) registry.VendorRecord {
	t.Helper()
	r, err := s.PutVendor(t.Context(), v, expect, by)
	if err != nil {
		t.Fatalf("PutVendor(%q, expect %d): %v", v.ID, expect, err)
	}
	return r
}

func mustGetVendor(t *testing.T, s registry.Store, id string) registry.VendorRecord {
	t.Helper()
	r, err := s.GetVendor(t.Context(), id)
	if err != nil {
		t.Fatalf("GetVendor(%q): %v", id, err)
	}
	return r
}

func mustGetTenant(t *testing.T, s registry.Store, id string) registry.Tenant {
	t.Helper()
	tn, err := s.GetTenant(t.Context(), id)
	if err != nil {
		t.Fatalf("GetTenant(%q): %v", id, err)
	}
	return tn
}

func mustListCapabilities(t *testing.T, s registry.Store) []registry.Capability {
	t.Helper()
	caps, err := s.ListCapabilities(t.Context())
	if err != nil {
		t.Fatalf("ListCapabilities: %v", err)
	}
	return caps
}
