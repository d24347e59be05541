package backend

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/approval/pgapproval"
	"github.com/toolhub/toolhub/audit"
	"github.com/toolhub/toolhub/audit/pgaudit"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/pgledger"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/pgstore"
)

// pgSet is the records' stores in PostgreSQL, opened together.
type pgSet struct {
	reg       *pgstore.Store
	keys      auth.Store
	audit     *pgaudit.Log
	approvals *pgapproval.Store
	ledger    *pgledger.Ledger
	cleanups  Cleanups
}

// openPostgres opens the five record stores; when one fails, those opened
// are closed again.
func openPostgres(ctx context.Context, c Config) (_ *pgSet, err error) {
	p := &pgSet{}
	defer func() {
		if err != nil {
			p.cleanups.Close()
		}
	}()
	if p.reg, err = pgstore.Open(ctx, c.Postgres, &pgstore.Options{Schema: c.Schema, Logger: c.Logger}); err != nil {
		return nil, err
	}
	p.cleanups.AddCloser(p.reg)
	if p.keys, err = OpenKeys(ctx, c); err != nil {
		return nil, err
	}
	p.cleanups.AddCloser(p.keys)
	if p.audit, err = pgaudit.Open(ctx, c.Postgres, &pgaudit.Options{Schema: c.Schema}); err != nil {
		return nil, err
	}
	p.cleanups.AddCloser(p.audit)
	if p.approvals, err = pgapproval.Open(ctx, c.Postgres, &pgapproval.Options{Schema: c.Schema}); err != nil {
		return nil, err
	}
	p.cleanups.AddCloser(p.approvals)
	if p.ledger, err = pgledger.Open(ctx, c.Postgres, &pgledger.Options{Schema: c.Schema}); err != nil {
		return nil, err
	}
	p.cleanups.AddCloser(p.ledger)
	return p, nil
}

// pgJoin holds the PostgreSQL stores of a hub that started while
// PostgreSQL was away: until [pgJoin.join] opens them, every store
// answers an [AwayError]; then each forwards to its store.
type pgJoin struct {
	mu        sync.Mutex
	set       *pgSet
	joinedSet atomic.Pointer[pgSet] // set, once joined
	lastErr   error
	joined    chan struct{} // closed once set is
	closed    bool
}

func newPGJoin(first error) *pgJoin { return &pgJoin{lastErr: first, joined: make(chan struct{})} }

// get returns the joined stores, or the AwayError; once joined, without
// a lock (keys are read on every authenticated request).
func (j *pgJoin) get() (*pgSet, error) {
	if p := j.joinedSet.Load(); p != nil {
		return p, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.set == nil {
		return nil, &AwayError{Store: StorePostgres, Err: j.lastErr}
	}
	return j.set, nil
}

// through runs f on the joined stores, or answers their AwayError.
func through[T any](j *pgJoin, f func(*pgSet) (T, error)) (T, error) {
	p, err := j.get()
	if err != nil {
		var zero T
		return zero, err
	}
	return f(p)
}

// throughErr is through for a call that answers only an error.
func throughErr(j *pgJoin, f func(*pgSet) error) error {
	p, err := j.get()
	if err != nil {
		return err
	}
	return f(p)
}

// join opens the stores once; an error is kept for the AwayErrors.
func (j *pgJoin) join(ctx context.Context, c Config) error {
	p, err := openPostgres(ctx, c)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		j.lastErr = err
		return err
	}
	if j.closed { // the hub closed while the stores were opening
		p.cleanups.Close()
		return nil
	}
	j.set = p
	j.joinedSet.Store(p)
	close(j.joined)
	return nil
}

// Close closes the stores if they were opened.
func (j *pgJoin) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	if j.set == nil {
		return nil
	}
	return j.set.cleanups.Close()
}

// listen waits for the registry to be joined, reports a change (the
// stored vendors were not read at start), then follows its notifications.
func (j *pgJoin) listen(ctx context.Context, changed func()) error {
	select {
	case <-ctx.Done():
		return nil
	case <-j.joined:
	}
	changed()
	p, _ := j.get()
	return p.reg.Listen(ctx, func(kind, _ string) {
		if kind == pgstore.KindVendor || kind == pgstore.KindResync {
			changed()
		}
	})
}

// The stores of a pgJoin. Close is the join's (Stores.Close), not theirs.

type awayRegistry struct{ j *pgJoin }
type awayKeys struct{ j *pgJoin }
type awayAudit struct{ j *pgJoin }
type awayApprovals struct{ j *pgJoin }
type awayLedger struct{ j *pgJoin }

var (
	_ registry.Store = awayRegistry{}
	_ auth.Store     = awayKeys{}
	_ audit.Log      = awayAudit{}
	_ approval.Store = awayApprovals{}
	_ billing.Ledger = awayLedger{}
)

func (s awayRegistry) PutVendor(ctx context.Context, v registry.Vendor, expect int64, by string) (registry.VendorRecord, error) {
	return through(s.j, func(p *pgSet) (registry.VendorRecord, error) { return p.reg.PutVendor(ctx, v, expect, by) })
}

func (s awayRegistry) GetVendor(ctx context.Context, id string) (registry.VendorRecord, error) {
	return through(s.j, func(p *pgSet) (registry.VendorRecord, error) { return p.reg.GetVendor(ctx, id) })
}

func (s awayRegistry) VendorHistory(ctx context.Context, id string) ([]registry.VendorRecord, error) {
	return through(s.j, func(p *pgSet) ([]registry.VendorRecord, error) { return p.reg.VendorHistory(ctx, id) })
}

func (s awayRegistry) ListVendors(ctx context.Context) ([]registry.VendorRecord, error) {
	return through(s.j, func(p *pgSet) ([]registry.VendorRecord, error) { return p.reg.ListVendors(ctx) })
}

func (s awayRegistry) DeleteVendor(ctx context.Context, id string) error {
	return throughErr(s.j, func(p *pgSet) error { return p.reg.DeleteVendor(ctx, id) })
}

func (s awayRegistry) PutTenant(ctx context.Context, t registry.Tenant) error {
	return throughErr(s.j, func(p *pgSet) error { return p.reg.PutTenant(ctx, t) })
}

func (s awayRegistry) GetTenant(ctx context.Context, id string) (registry.Tenant, error) {
	return through(s.j, func(p *pgSet) (registry.Tenant, error) { return p.reg.GetTenant(ctx, id) })
}

func (s awayRegistry) ListTenants(ctx context.Context) ([]registry.Tenant, error) {
	return through(s.j, func(p *pgSet) ([]registry.Tenant, error) { return p.reg.ListTenants(ctx) })
}

func (s awayRegistry) DeleteTenant(ctx context.Context, id string) error {
	return throughErr(s.j, func(p *pgSet) error { return p.reg.DeleteTenant(ctx, id) })
}

func (s awayRegistry) PutCapability(ctx context.Context, c registry.Capability) error {
	return throughErr(s.j, func(p *pgSet) error { return p.reg.PutCapability(ctx, c) })
}

func (s awayRegistry) ListCapabilities(ctx context.Context) ([]registry.Capability, error) {
	return through(s.j, func(p *pgSet) ([]registry.Capability, error) { return p.reg.ListCapabilities(ctx) })
}

func (s awayRegistry) DeleteCapability(ctx context.Context, name string) error {
	return throughErr(s.j, func(p *pgSet) error { return p.reg.DeleteCapability(ctx, name) })
}

func (s awayRegistry) PutToolPin(ctx context.Context, pin registry.ToolPin) error {
	return throughErr(s.j, func(p *pgSet) error { return p.reg.PutToolPin(ctx, pin) })
}

// ToolPins fails while PostgreSQL is away: the pin gate then keeps what
// the catalog serves (it fails closed).
func (s awayRegistry) ToolPins(ctx context.Context, vendor string) ([]registry.ToolPin, error) {
	return through(s.j, func(p *pgSet) ([]registry.ToolPin, error) { return p.reg.ToolPins(ctx, vendor) })
}

func (s awayRegistry) DeleteToolPin(ctx context.Context, vendor, tool, state string) error {
	return throughErr(s.j, func(p *pgSet) error { return p.reg.DeleteToolPin(ctx, vendor, tool, state) })
}

func (s awayRegistry) DeleteVendorPins(ctx context.Context, vendor string) error {
	return throughErr(s.j, func(p *pgSet) error { return p.reg.DeleteVendorPins(ctx, vendor) })
}

func (awayRegistry) Close() error { return nil }

func (s awayKeys) PutKey(ctx context.Context, k auth.Key) error {
	return throughErr(s.j, func(p *pgSet) error { return p.keys.PutKey(ctx, k) })
}

func (s awayKeys) GetKey(ctx context.Context, id string) (auth.Key, error) {
	return through(s.j, func(p *pgSet) (auth.Key, error) { return p.keys.GetKey(ctx, id) })
}

func (s awayKeys) ListKeys(ctx context.Context) ([]auth.Key, error) {
	return through(s.j, func(p *pgSet) ([]auth.Key, error) { return p.keys.ListKeys(ctx) })
}

func (awayKeys) Close() error { return nil }

func (s awayAudit) Append(ctx context.Context, e audit.Entry) error {
	return throughErr(s.j, func(p *pgSet) error { return p.audit.Append(ctx, e) })
}

func (s awayAudit) Recent(ctx context.Context, n int) ([]audit.Entry, error) {
	return through(s.j, func(p *pgSet) ([]audit.Entry, error) { return p.audit.Recent(ctx, n) })
}

func (awayAudit) Close() error { return nil }

func (s awayApprovals) Put(ctx context.Context, c approval.Change) error {
	return throughErr(s.j, func(p *pgSet) error { return p.approvals.Put(ctx, c) })
}

func (s awayApprovals) List(ctx context.Context) ([]approval.Change, error) {
	return through(s.j, func(p *pgSet) ([]approval.Change, error) { return p.approvals.List(ctx) })
}

func (s awayApprovals) Take(ctx context.Context, vendor string) (approval.Change, error) {
	return through(s.j, func(p *pgSet) (approval.Change, error) { return p.approvals.Take(ctx, vendor) })
}

func (awayApprovals) Close() error { return nil }

func (s awayLedger) Append(ctx context.Context, events []billing.Event) error {
	return throughErr(s.j, func(p *pgSet) error { return p.ledger.Append(ctx, events) })
}

func (s awayLedger) Query(ctx context.Context, f billing.Filter, fn func(billing.Event) error) error {
	return throughErr(s.j, func(p *pgSet) error { return p.ledger.Query(ctx, f, fn) })
}

func (s awayLedger) Rollup(ctx context.Context, q billing.RollupQuery) ([]billing.Row, error) {
	return through(s.j, func(p *pgSet) ([]billing.Row, error) { return p.ledger.Rollup(ctx, q) })
}

func (s awayLedger) Stats() billing.LedgerStats {
	p, err := s.j.get()
	if err != nil {
		return billing.LedgerStats{}
	}
	return p.ledger.Stats()
}

func (awayLedger) Close() error { return nil }
