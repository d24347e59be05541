package vendorconn

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/toolhub/toolhub/registry"
)

// Conn is one vendor as its protocol runs it: the background work that
// dials it, lists its tools and keeps it connected, the connection that
// work holds, and the status it shows. A [Lifecycle] holds one Conn per
// vendor id, and replaces it when a spec changes how the vendor is
// reached. S is the protocol's status type.
type Conn[S any] interface {
	comparable
	// Start begins the background work. The lifecycle calls it once,
	// under its lock: it must not block.
	Start()
	// Stop ends the background work and returns when it has ended. With
	// drain, the connection left takes no new calls and closes once the
	// calls in flight are done (see [Lifecycle.Retire]); without, it
	// closes at once. A protocol whose calls hold nothing of the
	// connection may close at once either way.
	Stop(drain bool)
	// Retired is closed once the vendor's last connection is closed.
	Retired() <-chan struct{}
	// Spec returns a copy of the spec the vendor runs with now.
	Spec() registry.Vendor
	// Status is what the protocol shows of the vendor.
	Status() S
}

// Protocol is what a vendor protocol plugs into a [Lifecycle]: which
// specs are its own, and how it makes and changes a vendor of one.
type Protocol[V, S any] interface {
	// Accepts reports whether spec is the protocol's: a reload
	// ([Lifecycle.Sync]) leaves the others to their own manager.
	Accepts(spec registry.Vendor) bool
	// Check refuses a spec the protocol cannot run: not its own, or not
	// valid.
	Check(spec registry.Vendor) error
	// New makes a vendor of spec, not started yet.
	New(spec registry.Vendor) V
	// Change applies spec to old, the vendor held: in place when nothing
	// about how the vendor is reached changed (replace false), or else by
	// returning the vendor that takes old's place. It runs under the set's
	// locks and must not block.
	Change(old V, spec registry.Vendor) (nv V, replace bool)
	// Unknown is the status of an id the lifecycle does not hold.
	Unknown(id string) S
}

// LifecycleOptions configure a [Lifecycle]. A nil *LifecycleOptions, and
// every zero field, means the default.
type LifecycleOptions struct {
	// Logger records each update and removal, with the vendor id; nil
	// means slog.Default().
	Logger *slog.Logger
	// Noun is what those records call a vendor ("a2a vendor" makes "a2a
	// vendor updated"); "" means "vendor".
	Noun string
}

// Lifecycle is the life of a manager's vendors that every protocol
// shares: add, update (replace the vendor, retiring the old one once its
// calls in flight are done), remove, reload ([Lifecycle.Sync]), status,
// and close. The protocol plugs in its own vendors ([Conn]) and specs
// ([Protocol]). Its zero value is not usable; make one with
// [NewLifecycle]. It is safe for concurrent use.
type Lifecycle[V Conn[S], S any] struct {
	set     *Set[V]
	proto   Protocol[V, S]
	log     *slog.Logger
	noun    string
	closing chan struct{} // closed when Close starts
}

// NewLifecycle returns a lifecycle without vendors, whose vendors' tools
// go to cat; errs are the protocol package's sentinels.
func NewLifecycle[V Conn[S], S any](cat *registry.Catalog, errs Errors, proto Protocol[V, S], opts *LifecycleOptions) *Lifecycle[V, S] {
	l := &Lifecycle[V, S]{set: NewSet[V](cat, errs), proto: proto, log: slog.Default(), noun: "vendor", closing: make(chan struct{})}
	if opts != nil && opts.Logger != nil {
		l.log = opts.Logger
	}
	if opts != nil && opts.Noun != "" {
		l.noun = opts.Noun
	}
	return l
}

// Set returns the vendors held, for the protocol's own use of them (its
// catalog writes, background jobs, look-ups by id).
func (l *Lifecycle[V, S]) Set() *Set[V] { return l.set }

// Add holds and starts a vendor of spec. It fails for a spec the protocol
// refuses, an id already held, or a closed lifecycle.
func (l *Lifecycle[V, S]) Add(ctx context.Context, spec registry.Vendor) error {
	return l.set.AddSpec(ctx, spec, l.proto.Check, l.proto.New, func(v V) { v.Start() })
}

// Update applies a changed spec to a vendor held (see [Protocol.Change]).
// A vendor replaced is stopped with drain and its successor started;
// Update then waits for the old one to retire until ctx is done (what is
// left goes on in the background: not an error).
func (l *Lifecycle[V, S]) Update(ctx context.Context, spec registry.Vendor) error {
	if err := l.proto.Check(spec); err != nil {
		return err
	}
	spec = spec.Clone()
	old, nv, err := l.set.Replace(spec.ID, func(old V) (V, bool) { return l.proto.Change(old, spec) })
	var zero V
	if err != nil || nv == zero {
		return err
	}
	old.Stop(true)
	nv.Start()
	l.log.Info(l.noun+" updated", "vendor", spec.ID)
	waitCtx(ctx, old.Retired())
	return nil
}

// Remove stops a vendor with drain and removes its tools from the
// catalog, then waits for it to retire until ctx is done.
func (l *Lifecycle[V, S]) Remove(ctx context.Context, id string) error {
	v, err := l.set.Remove(id)
	if err != nil {
		return err
	}
	v.Stop(true)
	l.log.Info(l.noun+" removed", "vendor", id)
	waitCtx(ctx, v.Retired())
	return nil
}

// Sync makes the vendors held equal to the protocol's specs in specs: it
// adds new ones, updates changed ones and removes those gone; a vendor
// whose spec is unchanged, and the calls on it, are not touched. Removals
// and updates run in parallel, each draining on its own. Every spec is
// applied that can be; the errors of the others are joined: an id listed
// twice first, then those gone (by id), then the specs in the order
// given.
func (l *Lifecycle[V, S]) Sync(ctx context.Context, specs []registry.Vendor) error {
	p := PlanSync(l.set, specs, l.proto.Accepts, func(v V) registry.Vendor { return v.Spec() })
	gone := make([]error, len(p.Gone))
	want := make([]error, len(p.Order))
	var wg sync.WaitGroup
	for i, id := range p.Gone {
		wg.Go(func() { gone[i] = l.Remove(ctx, id) })
	}
	for i, id := range p.Order {
		spec := p.Want[id]
		have, held := p.Have[id]
		switch {
		case !held:
			want[i] = l.Add(ctx, spec)
		case !SameJSON(have, spec):
			wg.Go(func() { want[i] = l.Update(ctx, spec) })
		}
	}
	wg.Wait()
	return errors.Join(slices.Concat(p.Errs, gone, want)...)
}

// Status is the status of the vendor held as id, or the protocol's
// Unknown status when none is.
func (l *Lifecycle[V, S]) Status(id string) S {
	v, ok := l.set.Get(id)
	if !ok {
		return l.proto.Unknown(id)
	}
	return v.Status()
}

// Statuses is the status of every vendor held (asked outside the set's
// lock), sorted by id.
func (l *Lifecycle[V, S]) Statuses() []S {
	l.set.mu.RLock()
	ids := slices.Sorted(maps.Keys(l.set.vendors))
	vs := make([]V, len(ids))
	for i, id := range ids {
		vs[i] = l.set.vendors[id]
	}
	l.set.mu.RUnlock()
	out := make([]S, len(vs))
	for i, v := range vs {
		out[i] = v.Status()
	}
	return out
}

// Retire closes a connection its vendor has stopped with: when drain is
// nil, at once; else once the channel drain returns is closed (the
// connection takes no new calls and those in flight are done), after
// timeout (onTimeout is called first), or when the lifecycle closes,
// whichever comes first. closeConn closes the connection and marks the
// vendor retired. Retire returns at once; [Lifecycle.Close] waits for a
// drain in progress.
func (l *Lifecycle[V, S]) Retire(drain func() <-chan struct{}, timeout time.Duration, onTimeout, closeConn func()) {
	if drain == nil || !l.set.Track() { // no drain, or the lifecycle is closing
		closeConn()
		return
	}
	drained := drain()
	go func() {
		defer l.set.Done()
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-drained:
		case <-t.C:
			onTimeout()
		case <-l.closing:
		}
		closeConn()
	}()
}

// Close stops every vendor at once, without drain, and waits for them to
// retire and for the background work of the set ([Set.Go], and drains in
// progress: see [Lifecycle.Retire]). From then on Add, Update and Sync
// fail. It reports false when the lifecycle was closed already.
func (l *Lifecycle[V, S]) Close() bool {
	vs, first := l.set.Close(func() { close(l.closing) })
	if !first {
		return false
	}
	var wg sync.WaitGroup
	for _, v := range vs {
		wg.Go(func() {
			v.Stop(false)
			<-v.Retired()
		})
	}
	wg.Wait()
	l.set.Wait()
	return true
}

// waitCtx waits for done until ctx is done.
func waitCtx(ctx context.Context, done <-chan struct{}) {
	select {
	case <-done:
	case <-ctx.Done():
	}
}
