package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/pgstore"
	"github.com/toolhub/toolhub/registry/registrytest"
)

type event struct{ kind, id string }

// listen starts s.Listen and returns its events and a function that stops
// it and returns what Listen returned. It waits for the first resync, so
// the listener hears every change made after listen returns.
func listen(t *testing.T, s *pgstore.Store) (<-chan event, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	events := make(chan event, 100)
	done := make(chan error, 1)
	go func() { done <- s.Listen(ctx, func(kind, id string) { events <- event{kind, id} }) }()
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	t.Cleanup(func() { stop() })
	want(t, events, event{pgstore.KindResync, ""}, nil)
	return events, stop
}

// want waits for the next event about ids (or a resync) and checks it is w;
// events about other ids (other tests' schemas share the channel) are
// skipped.
func want(t *testing.T, events <-chan event, w event, ids map[string]bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e := <-events:
			if e.kind != pgstore.KindResync && !ids[e.id] {
				continue
			}
			if e != w {
				t.Fatalf("heard %+v, want %+v", e, w)
			}
			return
		case <-timeout:
			t.Fatalf("heard nothing in 30 s, want %+v", w)
		}
	}
}

// A change made through one Store is heard by another Store's Listen on the
// same schema, once it commits, and a change that did not happen is not.
func TestListenHearsOtherStore(t *testing.T) {
	schema := newSchema(t)
	writer := open(t, testDSN(), schema)
	reader := open(t, testDSN(), schema)
	events, _ := listen(t, reader)

	ctx := t.Context()
	vendor := registrytest.Vendors()[0]
	vendor.ID = uniqueName("l-")
	tenant := registrytest.Tenants()[0]
	tenant.ID = uniqueName("t-")
	capability := registrytest.Capabilities()[0]
	capability.Name = uniqueName("listen.c")
	ids := map[string]bool{vendor.ID: true, tenant.ID: true, capability.Name: true}

	steps := []struct {
		name string
		do   func() error
		want event
	}{
		{"put vendor", func() error { _, err := writer.PutVendor(ctx, vendor, 0, "t"); return err }, event{pgstore.KindVendor, vendor.ID}},
		{"put vendor again", func() error { _, err := writer.PutVendor(ctx, vendor, 1, "t"); return err }, event{pgstore.KindVendor, vendor.ID}},
		{"put tenant", func() error { return writer.PutTenant(ctx, tenant) }, event{pgstore.KindTenant, tenant.ID}},
		{"put capability", func() error { return writer.PutCapability(ctx, capability) }, event{pgstore.KindCapability, capability.Name}},
		{"delete capability", func() error { return writer.DeleteCapability(ctx, capability.Name) }, event{pgstore.KindCapability, capability.Name}},
		{"delete tenant", func() error { return writer.DeleteTenant(ctx, tenant.ID) }, event{pgstore.KindTenant, tenant.ID}},
		{"delete vendor", func() error { return writer.DeleteVendor(ctx, vendor.ID) }, event{pgstore.KindVendor, vendor.ID}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		want(t, events, st.want, ids)
	}

	// Refused changes send nothing: the next event is the marker's.
	if _, err := writer.PutVendor(ctx, vendor, 5, "t"); !errors.Is(err, registry.ErrVersionConflict) {
		t.Fatalf("PutVendor(expect 5) of a missing vendor: %v", err)
	}
	bad := vendor
	bad.MCP = nil
	if _, err := writer.PutVendor(ctx, bad, -1, "t"); err == nil {
		t.Fatal("invalid vendor stored")
	}
	if err := writer.DeleteTenant(ctx, tenant.ID); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("DeleteTenant of a deleted tenant: %v", err)
	}
	if err := writer.PutCapability(ctx, registry.Capability{Name: capability.Name, InputSchema: json.RawMessage(`{"type":"integr"}`)}); err == nil {
		t.Fatal("invalid capability stored")
	}
	marker := uniqueName("m-")
	ids[marker] = true
	if err := writer.PutTenant(ctx, registry.Tenant{ID: marker}); err != nil {
		t.Fatal(err)
	}
	want(t, events, event{pgstore.KindTenant, marker}, ids)
}

// A rolled-back change sends nothing: the notification is in the change's
// own transaction.
func TestListenOnlyCommitted(t *testing.T) {
	schema := newSchema(t)
	s := open(t, testDSN(), schema)
	events, _ := listen(t, s)
	conn, err := pgx.Connect(t.Context(), testDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	gone := uniqueName("g-")
	if _, err := tx.Exec(t.Context(), `SELECT pg_notify($1, $2)`, pgstore.Channel, "vendor:"+gone); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	marker := uniqueName("m-")
	if err := s.PutTenant(t.Context(), registry.Tenant{ID: marker}); err != nil {
		t.Fatal(err)
	}
	want(t, events, event{pgstore.KindTenant, marker}, map[string]bool{gone: true, marker: true})
}

// When its connection is cut, Listen reconnects, says so with a resync, and
// hears changes again.
func TestListenReconnects(t *testing.T) {
	app := uniqueName("toolhub_listen_test_")
	dsn := withAppName(t, testDSN(), app)
	s := open(t, dsn, newSchema(t))
	events, _ := listen(t, s)

	conn, err := pgx.Connect(t.Context(), testDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var killed int
	if err := conn.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND query LIKE 'LISTEN %'`, app).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d listening connections, want 1", killed)
	}
	want(t, events, event{pgstore.KindResync, ""}, nil)

	id := uniqueName("r-")
	if err := s.PutTenant(t.Context(), registry.Tenant{ID: id}); err != nil {
		t.Fatal(err)
	}
	want(t, events, event{pgstore.KindTenant, id}, map[string]bool{id: true})
}

func TestListenStopsWithContext(t *testing.T) {
	s := open(t, testDSN(), newSchema(t))
	_, stop := listen(t, s)
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("Listen returned %v, want context.Canceled", err)
	}
}
