package vendorconn

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/registry"
)

// The lifecycle's tests plug in a protocol of their own: its vendors are
// the specs' MCP sections, and a vendor's "connection" is a channel its
// calls in flight hold open (calls) until the test closes it. Stop drains
// it through Lifecycle.Retire, as a real protocol does.

const drainTimeout = time.Minute

var errNotOurs = errors.New("not ours")

type plugStatus struct {
	ID    string
	URL   string // the spec's, so a status tells which vendor it is of
	Name  string
	State string // "" (not held), "new", "running", "stopped", "retired"
}

type plugConn struct {
	l     *Lifecycle[*plugConn, plugStatus]
	calls chan struct{} // closed once the calls in flight are done

	mu       sync.Mutex
	spec     registry.Vendor
	state    string
	drained  bool // stopped with drain
	timedOut bool // closed with calls still in flight
	retired  chan struct{}
}

func (c *plugConn) Start() { c.set("running") }

func (c *plugConn) Stop(drain bool) {
	c.mu.Lock()
	c.state, c.drained = "stopped", drain
	c.mu.Unlock()
	var d func() <-chan struct{}
	if drain {
		d = func() <-chan struct{} { return c.calls }
	}
	c.l.Retire(d, drainTimeout, func() {
		c.mu.Lock()
		c.timedOut = true
		c.mu.Unlock()
	}, func() {
		c.set("retired")
		close(c.retired)
	})
}

func (c *plugConn) Retired() <-chan struct{} { return c.retired }

func (c *plugConn) Spec() registry.Vendor {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spec.Clone()
}

func (c *plugConn) Status() plugStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return plugStatus{ID: c.spec.ID, URL: c.spec.MCP.URL, Name: c.spec.Name, State: c.state}
}

func (c *plugConn) set(state string) {
	c.mu.Lock()
	c.state = state
	c.mu.Unlock()
}

// plug is the protocol: it takes specs with an MCP section; a new URL
// replaces the vendor, a new name is taken in place.
type plug struct {
	l *Lifecycle[*plugConn, plugStatus]
}

func (plug) Accepts(spec registry.Vendor) bool { return spec.MCP != nil }

func (plug) Check(spec registry.Vendor) error {
	if spec.MCP == nil {
		return errNotOurs
	}
	return nil
}

func (p *plug) New(spec registry.Vendor) *plugConn {
	return &plugConn{l: p.l, spec: spec, state: "new", calls: make(chan struct{}), retired: make(chan struct{})}
}

func (p *plug) Change(old *plugConn, spec registry.Vendor) (*plugConn, bool) {
	if old.spec.MCP.URL == spec.MCP.URL {
		old.mu.Lock()
		old.spec.Name = spec.Name
		old.mu.Unlock()
		return nil, false
	}
	return p.New(spec), true
}

func (plug) Unknown(id string) plugStatus { return plugStatus{ID: id} }

func newLifecycle(t *testing.T) (*Lifecycle[*plugConn, plugStatus], *registry.Catalog) {
	t.Helper()
	cat := registry.NewCatalog()
	p := &plug{}
	p.l = NewLifecycle(cat, Errors{Closed: errClosed, Duplicate: errDup, Unknown: errUnk}, p,
		&LifecycleOptions{Logger: slog.New(slog.DiscardHandler)})
	return p.l, cat
}

func spec(id, url string) registry.Vendor {
	return registry.Vendor{ID: id, MCP: &registry.MCPSpec{Transport: "http", URL: url}}
}

func held(t *testing.T, l *Lifecycle[*plugConn, plugStatus], id string) *plugConn {
	t.Helper()
	c, ok := l.Set().Get(id)
	if !ok {
		t.Fatalf("%q is not held", id)
	}
	return c
}

// TestLifecycleUpdate: an update that changes how the vendor is reached
// starts its successor at once, and returns once the old vendor, stopped
// with drain, has retired: when its calls in flight are done.
func TestLifecycleUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLifecycle(t)
		if err := l.Add(t.Context(), spec("v", "http://one")); err != nil {
			t.Fatal(err)
		}
		old := held(t, l, "v")
		ret := make(chan error, 1)
		go func() { ret <- l.Update(t.Context(), spec("v", "http://two")) }()
		synctest.Wait()
		select {
		case err := <-ret:
			t.Fatalf("Update returned (%v) with the old vendor's calls still in flight", err)
		default:
		}
		nv := held(t, l, "v")
		if nv == old || nv.Status().State != "running" {
			t.Fatalf("the successor is %+v", nv.Status())
		}
		if st := old.Status(); st.State != "stopped" || !old.drained {
			t.Fatalf("the old vendor before its calls end: %+v, drained %v", st, old.drained)
		}
		close(old.calls)
		if err := <-ret; err != nil {
			t.Fatalf("Update: %v", err)
		}
		if st := old.Status(); st.State != "retired" || old.timedOut {
			t.Errorf("the old vendor after its calls end: %+v, timed out %v", st, old.timedOut)
		}
	})
}

// TestLifecycleUpdateInPlace: a change the protocol takes in place keeps
// the vendor running; an unknown id or a spec the protocol refuses fails.
func TestLifecycleUpdateInPlace(t *testing.T) {
	l, _ := newLifecycle(t)
	l.Add(t.Context(), spec("v", "http://one"))
	c := held(t, l, "v")
	s := spec("v", "http://one")
	s.Name = "Renamed"
	if err := l.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if got := held(t, l, "v"); got != c || got.Status() != (plugStatus{ID: "v", URL: "http://one", Name: "Renamed", State: "running"}) {
		t.Errorf("after an in-place update: %+v (same vendor: %v)", got.Status(), got == c)
	}
	if err := l.Update(t.Context(), spec("nope", "http://one")); !errors.Is(err, errUnk) {
		t.Errorf("Update of an id not held: %v", err)
	}
	if err := l.Update(t.Context(), registry.Vendor{ID: "v"}); !errors.Is(err, errNotOurs) {
		t.Errorf("Update with a spec the protocol refuses: %v", err)
	}
}

// TestLifecycleDrainTimeout: a vendor whose calls do not end is closed
// after the drain timeout; Update, its ctx done, returns before that.
func TestLifecycleDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLifecycle(t)
		l.Add(t.Context(), spec("v", "http://one"))
		old := held(t, l, "v")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := l.Update(ctx, spec("v", "http://two")); err != nil {
			t.Fatalf("Update with its ctx done: %v", err)
		}
		if st := old.Status(); st.State != "stopped" {
			t.Fatalf("the old vendor right after Update: %+v", st)
		}
		time.Sleep(drainTimeout)
		synctest.Wait()
		if st := old.Status(); st.State != "retired" || !old.timedOut {
			t.Errorf("the old vendor after the drain timeout: %+v, timed out %v", st, old.timedOut)
		}
	})
}

// TestLifecycleRemove: Remove takes the vendor's tools out of the
// catalog, drains it, and waits for it to retire.
func TestLifecycleRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, cat := newLifecycle(t)
		l.Add(t.Context(), spec("v", "http://one"))
		c := held(t, l, "v")
		if _, ok := l.Set().SetTools("v", c, alive, echo); !ok {
			t.Fatal("SetTools did not write")
		}
		ret := make(chan error, 1)
		go func() { ret <- l.Remove(t.Context(), "v") }()
		synctest.Wait()
		if _, ok := l.Set().Get("v"); ok || len(cat.VendorTools("v")) != 0 {
			t.Errorf("after Remove: held %v, tools %d", ok, len(cat.VendorTools("v")))
		}
		if st := c.Status(); st.State != "stopped" || !c.drained {
			t.Errorf("the vendor removed, before its calls end: %+v, drained %v", st, c.drained)
		}
		close(c.calls)
		if err := <-ret; err != nil || c.Status().State != "retired" {
			t.Errorf("Remove: %v, vendor %+v", err, c.Status())
		}
		if err := l.Remove(t.Context(), "v"); !errors.Is(err, errUnk) {
			t.Errorf("Remove again: %v", err)
		}
		if st := l.Status("v"); st != (plugStatus{ID: "v"}) {
			t.Errorf("Status of a vendor removed: %+v", st)
		}
	})
}

// TestLifecycleClose: Close stops every vendor without drain, cuts short a
// drain in progress, waits for all to retire, and refuses what comes
// after.
func TestLifecycleClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLifecycle(t)
		l.Add(t.Context(), spec("a", "http://a"))
		l.Add(t.Context(), spec("b", "http://b"))
		draining := held(t, l, "a")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		l.Update(ctx, spec("a", "http://a2")) // draining keeps its calls
		a, b := held(t, l, "a"), held(t, l, "b")
		if !l.Close() {
			t.Fatal("the first Close reported it was closed already")
		}
		for _, c := range []*plugConn{draining, a, b} {
			if st := c.Status(); st.State != "retired" {
				t.Errorf("after Close: %+v", st)
			}
		}
		if draining.timedOut || a.drained || b.drained {
			t.Errorf("drain timed out %v; a drained %v, b drained %v", draining.timedOut, a.drained, b.drained)
		}
		if l.Close() {
			t.Error("the second Close reported it closed")
		}
		if err := l.Add(t.Context(), spec("c", "http://c")); !errors.Is(err, errClosed) {
			t.Errorf("Add after Close: %v", err)
		}
		if err := l.Update(t.Context(), spec("b", "http://b2")); !errors.Is(err, errClosed) {
			t.Errorf("Update after Close: %v", err)
		}
	})
}

// TestLifecycleSync: a reload adds, updates and removes; it leaves an
// unchanged vendor and a spec of another protocol alone, and says which
// id was listed twice.
func TestLifecycleSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLifecycle(t)
		for _, s := range []registry.Vendor{spec("gone", "http://g"), spec("same", "http://s"), spec("moved", "http://m")} {
			l.Add(t.Context(), s)
		}
		same, moved, gone := held(t, l, "same"), held(t, l, "moved"), held(t, l, "gone")
		close(moved.calls)
		close(gone.calls)
		err := l.Sync(t.Context(), []registry.Vendor{
			spec("new", "http://n"), spec("same", "http://s"), {ID: "other"}, spec("moved", "http://m2"), spec("new", "http://dup"),
		})
		if err == nil || !strings.Contains(err.Error(), `"new" is listed twice`) {
			t.Errorf("Sync: %v", err)
		}
		want := []plugStatus{
			{ID: "moved", URL: "http://m2", State: "running"},
			{ID: "new", URL: "http://n", State: "running"},
			{ID: "same", URL: "http://s", State: "running"},
		}
		if diff := cmp.Diff(want, l.Statuses()); diff != "" {
			t.Errorf("Statuses after Sync (-want +got):\n%s", diff)
		}
		if held(t, l, "same") != same {
			t.Error("Sync replaced a vendor whose spec did not change")
		}
		if moved.Status().State != "retired" || gone.Status().State != "retired" {
			t.Errorf("replaced %+v, removed %+v", moved.Status(), gone.Status())
		}
		if st := l.Status("other"); st != (plugStatus{ID: "other"}) {
			t.Errorf("Status of a spec of another protocol: %+v", st)
		}
	})
}
