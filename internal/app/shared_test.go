package app

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/x/pgtest"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/servers"
)

var (
	asVendor   = auth.Principal{KeyID: "00000000000000a1", Role: auth.RoleVendor, Vendor: "vx"}
	asOperator = auth.Principal{KeyID: "00000000000000b2", Role: auth.RoleOperator}
)

func newApp(t *testing.T, yaml string) *App {
	t.Helper()
	a, err := New(t.Context(), parse(t, yaml), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitTool waits until a serves vendor's tool from a ready connection.
func waitTool(t *testing.T, a *App, vendor, tool string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, ok := a.Catalog.VendorTool(vendor, tool)
		if ok && a.Manager.Status(vendor).State == servers.StateReady {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("vendor %s: tool %s not served after 30 s; status %+v", vendor, tool, a.Manager.Status(vendor))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
}

func call(t *testing.T, a *App, name string, args map[string]any) *hub.Result {
	t.Helper()
	res, err := a.Gateway.Call(t.Context(), &hub.Call{Tenant: "default", Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func spec(url string) registry.Vendor {
	return registry.Vendor{ID: "vx", MCP: &registry.MCPSpec{Transport: registry.TransportHTTP, URL: url}, Probe: &registry.Probe{Disabled: true}}
}

// submitBreaking registers vx (weather) as its vendor on a, then submits a
// breaking update (places: current_weather disappears), which waits.
func submitBreaking(t *testing.T, a *App, weather, places string) {
	t.Helper()
	ctx := api.WithPrincipal(t.Context(), asVendor)
	if c, err := a.RegisterVendor(ctx, spec(weather), true); err != nil || c.Status != "live" {
		t.Fatalf("register vx: %+v, %v", c, err)
	}
	waitTool(t, a, "vx", "current_weather")
	c, err := a.RegisterVendor(ctx, spec(places), false)
	if err != nil || c.Status != "pending_approval" || !strings.Contains(fmt.Sprint(c.Breaking), `"current_weather" removed`) {
		t.Fatalf("breaking update of vx: %+v, %v", c, err)
	}
}

func wantPending(t *testing.T, a *App, vendor string) {
	t.Helper()
	list, err := a.PendingVendors(api.WithPrincipal(t.Context(), asOperator))
	if err != nil {
		t.Fatal(err)
	}
	if vendor == "" {
		if len(list) != 0 {
			t.Fatalf("pending: %+v, want nothing", list)
		}
		return
	}
	if len(list) != 1 || list[0].Vendor != vendor || list[0].SubmittedBy == nil || *list[0].SubmittedBy != asVendor ||
		!slices.Equal(list[0].Tools, []string{"search_restaurants"}) {
		t.Fatalf("pending: %+v, want vx's change by its vendor key", list)
	}
}

// Two hubs on one PostgreSQL schema are one hub for operators and vendors:
// a breaking change submitted on A waits on both, survives A's restart,
// is approved on B and goes live on both; keys issued on one work on the
// other, and revoking on one refuses on the other; both read one audit log.
func TestSharedAdminState(t *testing.T) {
	schema, dsn := pgtest.Schema(t), pgtest.DSN(t)
	weather, places := exampleVendor(t, vendors.WeatherA), exampleVendor(t, vendors.Places)
	yaml := func() string {
		return fmt.Sprintf("data: %s\npostgres: %q\npostgres_schema: %s\noutbound: {allow: [127.0.0.0/8]}\n", t.TempDir(), dsn, schema)
	}
	a, b := newApp(t, yaml()), newApp(t, yaml())
	defer func() { b.Close() }()
	op := api.WithPrincipal(t.Context(), asOperator)

	submitBreaking(t, a, weather, places)
	waitTool(t, b, "vx", "current_weather") // registered on A, applied on B
	wantPending(t, a, "vx")
	wantPending(t, b, "vx")
	if _, ok := b.Catalog.VendorTool("vx", "search_restaurants"); ok {
		t.Fatal("a pending change went live")
	}

	// A restarts (a fresh data folder even): the change still waits.
	a.Close()
	a = newApp(t, yaml())
	defer func() { a.Close() }()
	wantPending(t, a, "vx")

	// Approved on B: live on both, waiting on neither.
	c, err := b.DecideVendor(op, "vx", true)
	if err != nil || c.Status != "live" || c.Version != 2 {
		t.Fatalf("approve on B: %+v, %v", c, err)
	}
	wantPending(t, a, "")
	wantPending(t, b, "")
	if _, err := a.DecideVendor(op, "vx", true); err == nil || !strings.Contains(err.Error(), "no change of vendor") {
		t.Errorf("approving again on A: %v", err)
	}
	for name, h := range map[string]*App{"A": a, "B": b} {
		waitTool(t, h, "vx", "search_restaurants")
		if res := call(t, h, "vx__search_restaurants", map[string]any{"near": "Oslo"}); res.Provenance.Vendor != "vx" {
			t.Errorf("hub %s: answered by %+v", name, res.Provenance)
		}
	}

	// Keys: issued on A, verified on B; revoked on B, refused on A.
	tok, k, err := a.IssueKey(op, api.KeyRequest{Role: auth.RoleTenant, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := auth.Verify(t.Context(), b.Keys, tok); err != nil || p.Tenant != "acme" {
		t.Fatalf("a key issued on A, on B: %+v, %v", p, err)
	}
	if _, err := auth.Verify(t.Context(), a.Keys, tok); err != nil { // A may now hold it in its cache
		t.Fatal(err)
	}
	if err := b.RevokeKey(op, k.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, err := auth.Verify(t.Context(), a.Keys, tok); !errors.Is(err, auth.ErrInvalidKey); _, err = auth.Verify(t.Context(), a.Keys, tok) {
		if time.Now().After(deadline) {
			t.Fatalf("a key revoked on B still works on A after 30 s: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
	if ks, err := a.ListKeys(op); err != nil || len(ks) != 1 || ks[0].RevokedAt == nil {
		t.Errorf("A lists %+v, %v; want the one revoked key", ks, err)
	}

	// One audit log: what the vendor did on A, what operators did on B.
	for name, h := range map[string]*App{"A": a, "B": b} {
		v, err := h.Audit(op, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range v.([]AuditEntry) {
			got = append(got, e.Action+" by "+e.Who.Role)
		}
		want := []string{"vendor.register by vendor", "vendor.pending by vendor", "vendor.update by operator",
			"vendor.approve by operator", "key.issue by operator", "key.revoke by operator"}
		if !slices.Equal(got, want) {
			t.Errorf("hub %s's audit log: %q, want %q", name, got, want)
		}
	}
}

// Embedded (no postgres): a pending change is kept in the data folder's
// registry database and survives a restart.
func TestPendingSurvivesRestart(t *testing.T) {
	weather, places := exampleVendor(t, vendors.WeatherA), exampleVendor(t, vendors.Places)
	yaml := fmt.Sprintf("data: %s\noutbound: {allow: [127.0.0.0/8]}\n", t.TempDir())
	a := newApp(t, yaml)
	submitBreaking(t, a, weather, places)
	a.Close()

	a = newApp(t, yaml)
	defer a.Close()
	wantPending(t, a, "vx")
	waitTool(t, a, "vx", "current_weather") // still the approved version
	op := api.WithPrincipal(t.Context(), asOperator)
	if c, err := a.DecideVendor(op, "vx", true); err != nil || c.Status != "live" || c.Version != 2 {
		t.Fatalf("approve after the restart: %+v, %v", c, err)
	}
	waitTool(t, a, "vx", "search_restaurants")
	call(t, a, "vx__search_restaurants", map[string]any{"near": "Oslo"})
	wantPending(t, a, "")
	// A rejected change does not go live, and is not kept.
	submitBreakingAgain := func() {
		c, err := a.RegisterVendor(api.WithPrincipal(t.Context(), asVendor), spec(weather), false)
		if err != nil || c.Status != "pending_approval" {
			t.Fatalf("breaking update back to weather: %+v, %v", c, err)
		}
	}
	submitBreakingAgain()
	if c, err := a.DecideVendor(op, "vx", false); err != nil || c.Status != "rejected" {
		t.Fatalf("reject: %+v, %v", c, err)
	}
	wantPending(t, a, "")
	if _, ok := a.Catalog.VendorTool("vx", "current_weather"); ok {
		t.Error("a rejected change went live")
	}
	// Removing a vendor drops its waiting change: approving it would bring
	// the vendor back.
	submitBreakingAgain()
	if err := a.RemoveVendor(api.WithPrincipal(t.Context(), asVendor), "vx"); err != nil {
		t.Fatal(err)
	}
	wantPending(t, a, "")
}
