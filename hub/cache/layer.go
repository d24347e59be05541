package cache

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/tracing"
)

// PrivateLevel is the data level from which calls are never cached (L2:
// personal data).
const PrivateLevel = 2

// setTimeout bounds the write of an answer to the cache.
const setTimeout = 2 * time.Second

// DefaultRefreshTimeout bounds a background refresh.
const DefaultRefreshTimeout = 30 * time.Second

// Options configure [New]. A nil *Options, and every zero field, means the
// default.
type Options struct {
	// Cache stores the entries; nil means NewMemory(nil) on Now.
	Cache Cache
	// Config holds the policies; its zero value caches nothing. Replace
	// it at run time with [Layer.SetConfig].
	Config Config
	// DataLevel returns the privacy level of a call (0 public … 3); a
	// call at [PrivateLevel] or above is neither served from nor written to
	// the cache. Nil means every call is level 0.
	DataLevel func(c *hub.Call) int
	// RefreshTimeout bounds a background refresh; zero means
	// [DefaultRefreshTimeout].
	RefreshTimeout time.Duration
	// Logger receives cache errors (a failing cache is a miss, never a
	// failed call); nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock for ages; nil means time.Now. Give the Cache the
	// same clock.
	Now func() time.Time
}

// Layer is the result cache of the call pipeline: a [hub.Middleware] for
// the Call tier with fresh hits, stale-while-revalidate and one upstream
// call per key at a time, and the last-known-good answers the fallback
// chain serves when every vendor failed. Safe for concurrent use.
type Layer struct {
	cache     Cache
	cfg       atomic.Pointer[Config]
	dataLevel func(c *hub.Call) int
	refreshTO time.Duration
	log       *slog.Logger
	now       func() time.Time

	mu      sync.Mutex
	flights map[string]*flight
	bg      sync.WaitGroup
}

// flight is one upstream call for a key; callers of the same key wait for
// it instead of calling again.
type flight struct {
	done chan struct{}
	val  []byte // the encoded result, when there is one
	prov hub.Provenance
	err  error
}

// New returns a cache layer.
func New(opts *Options) *Layer {
	l := &Layer{flights: map[string]*flight{}, refreshTO: DefaultRefreshTimeout, log: slog.Default(), now: time.Now, dataLevel: func(*hub.Call) int { return 0 }}
	var cfg Config
	if opts != nil {
		cfg = opts.Config
		if opts.Now != nil {
			l.now = opts.Now
		}
		l.cache = opts.Cache
		if opts.DataLevel != nil {
			l.dataLevel = opts.DataLevel
		}
		if opts.RefreshTimeout > 0 {
			l.refreshTO = opts.RefreshTimeout
		}
		if opts.Logger != nil {
			l.log = opts.Logger
		}
	}
	if l.cache == nil {
		l.cache = NewMemory(&MemoryOptions{Now: l.now})
	}
	l.cfg.Store(&cfg)
	return l
}

// Cache returns the store.
func (l *Layer) Cache() Cache { return l.cache }

// SetConfig replaces the policies; calls after it use the new ones.
func (l *Layer) SetConfig(cfg Config) { l.cfg.Store(&cfg) }

// Name returns the name a call is cached under: the capability name, or
// "vendor/tool" for a direct vendor tool call ("" when neither is set).
func Name(c *hub.Call) string {
	switch {
	case c.Capability != nil:
		return c.Capability.Name
	case c.Tool != nil:
		return c.Tool.Vendor + "/" + c.Tool.Def.Name
	}
	return ""
}

// Policy returns the policy of a call.
func (l *Layer) Policy(c *hub.Call) Policy {
	cfg := l.cfg.Load()
	if p, ok := cfg.Tools[Name(c)]; ok {
		return p
	}
	if c.Capability == nil && c.Tool != nil {
		if p, ok := cfg.Tools[c.Tool.Catalog]; ok {
			return p
		}
	}
	return cfg.Default
}

// Key returns the cache key of a call and its policy; ok is false when the
// call is not cached (policy, or data level ≥ L2, or a relayed request
// such as resources/read: its params are not in c.Arguments, and a
// resource changes without the vendor telling toolhub; or the retry of a
// multi round trip, whose answer depends on the client's input).
func (l *Layer) Key(c *hub.Call) (key string, p Policy, ok bool) {
	name := Name(c)
	if name == "" || c.Method != "" || c.Input != nil {
		return "", p, false
	}
	p = l.Policy(c)
	if !p.Cacheable() || l.dataLevel(c) >= PrivateLevel {
		return "", p, false
	}
	tenant := ""
	if p.Personal {
		tenant = c.Tenant
	}
	key, err := Key(name, tenant, c.Arguments)
	if err != nil {
		l.log.Warn("cache: no key", "tool", name, "err", err)
		return "", p, false
	}
	return key, p, true
}

// Middleware returns the Call-tier middleware (see [hub.Options].Call).
func (l *Layer) Middleware() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			return l.invoke(ctx, c, next)
		})
	}
}

func (l *Layer) invoke(ctx context.Context, c *hub.Call, next hub.Invoker) (*hub.Result, error) {
	key, p, ok := l.Key(c)
	if !ok {
		return next.Invoke(ctx, c)
	}
	end := tracing.Lookup(ctx, "toolhub.cache.get", Name(c))
	val, at, found, err := l.cache.Get(ctx, key)
	if err != nil {
		l.log.Warn("cache: get failed; calling upstream", "tool", Name(c), "err", err)
	}
	if found {
		age := l.now().Sub(at)
		switch {
		case age < p.TTL.D():
			if r, err := l.decode(c, val, age); err == nil {
				end("hit")
				c.Trace.Decide(fmt.Sprintf("cache hit (age %.1fs)", age.Seconds()))
				return r, nil
			}
		case age < p.TTL.D()+p.StaleWhileRevalidate.D():
			if r, err := l.decode(c, val, age); err == nil {
				end("stale")
				r.Provenance.Stale = true
				started := l.refresh(ctx, c, key, p, next)
				c.Trace.Decide(fmt.Sprintf("cache stale hit (age %.1fs), background refresh started=%v", age.Seconds(), started))
				return r, nil
			}
		}
	}
	end("miss")
	return l.fetch(ctx, c, key, p, next)
}

func (l *Layer) decode(c *hub.Call, val []byte, age time.Duration) (*hub.Result, error) {
	r, err := Decode(val)
	if err != nil {
		l.log.Warn("cache: undecodable entry; calling upstream", "tool", Name(c), "err", err)
		return nil, err
	}
	r.Provenance.Cached = true
	r.Provenance.AgeSeconds = max(age.Seconds(), 0)
	if c.Capability != nil {
		r.Provenance.Capability = c.Capability.Name
	}
	return r, nil
}

// fetch calls upstream once per key: concurrent callers of the same key
// wait for the call in flight and share its answer.
func (l *Layer) fetch(ctx context.Context, c *hub.Call, key string, p Policy, next hub.Invoker) (*hub.Result, error) {
	l.mu.Lock()
	if f, ok := l.flights[key]; ok {
		l.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, hub.AsError(ctx.Err())
		}
		if f.err == nil && f.val != nil {
			if r, err := Decode(f.val); err == nil {
				r.Provenance = f.prov
				c.Trace.Decide("cache: shared the answer of the call in flight for this key")
				return r, nil
			}
		}
		if f.err != nil && hub.CodeOf(f.err) != hub.CodeCanceled {
			c.Trace.Decide("cache: shared the error of the call in flight for this key")
			return nil, f.err
		}
		return next.Invoke(ctx, c) // the leader went away: call for ourselves
	}
	f := &flight{done: make(chan struct{})}
	l.flights[key] = f
	l.mu.Unlock()
	return l.lead(ctx, c, key, p, next, f, false)
}

// refresh starts one background call for key unless one is in flight.
func (l *Layer) refresh(ctx context.Context, c *hub.Call, key string, p Policy, next hub.Invoker) bool {
	l.mu.Lock()
	if _, ok := l.flights[key]; ok {
		l.mu.Unlock()
		return false
	}
	f := &flight{done: make(chan struct{})}
	l.flights[key] = f
	l.bg.Add(1)
	l.mu.Unlock()
	sc := *c
	sc.Trace = &hub.Trace{}
	sc.Trace.Decide("cache: background refresh")
	go func() {
		defer l.bg.Done()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.refreshTO)
		defer cancel()
		if _, err := l.lead(rctx, &sc, key, p, next, f, true); err != nil {
			l.log.Info("cache: background refresh failed; the stale entry stays", "tool", Name(&sc), "err", err)
		}
	}()
	return true
}

// lead runs the call of flight f (bg: a background refresh), stores a
// good answer, then releases the waiters. It first reads the key again: the
// flight before ours may have stored a fresh answer between our Get and our
// taking the flight (one more cache read per miss, to close the last gap
// for a stampede).
func (l *Layer) lead(ctx context.Context, c *hub.Call, key string, p Policy, next hub.Invoker, f *flight, bg bool) (r *hub.Result, err error) {
	defer func() {
		l.mu.Lock()
		delete(l.flights, key)
		l.mu.Unlock()
		close(f.done)
	}()
	if val, at, found, gerr := l.cache.Get(ctx, key); gerr == nil && found {
		if age := l.now().Sub(at); age < p.TTL.D() && !bg {
			if r, derr := l.decode(c, val, age); derr == nil {
				c.Trace.Decide(fmt.Sprintf("cache hit (age %.1fs)", age.Seconds()))
				f.val, f.prov = val, r.Provenance
				return r, nil
			}
		} else if age < p.TTL.D() {
			return nil, nil // a refresh that another refresh already did
		}
	}
	r, err = next.Invoke(ctx, c)
	f.err = err
	if err != nil || r == nil {
		return r, err
	}
	if r.Input != nil {
		// The vendor asks this caller for input: nothing to share with
		// the calls waiting on the key (f.val stays nil: they call for
		// themselves), nothing to keep.
		return r, nil
	}
	val, encErr := Encode(r)
	if encErr != nil {
		l.log.Warn("cache: cannot encode result; not cached", "tool", Name(c), "err", encErr)
		return r, nil
	}
	f.val, f.prov = val, r.Provenance
	if storable(r) {
		// The answer is worth keeping even if its caller left just now.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), setTimeout)
		defer cancel()
		if err := l.cache.Set(sctx, key, val, p.TTL.D(), p.keep()); err != nil {
			l.log.Warn("cache: set failed", "tool", Name(c), "err", err)
		}
	}
	return r, nil
}

// storable: only a vendor's own good answer is cached, never a tool error,
// a stale or cached answer, or a queued job.
func storable(r *hub.Result) bool {
	p := r.Provenance
	return !r.IsError && r.Input == nil && !p.Stale && !p.Cached && !p.Queued
}

// Wait blocks until the background refreshes started so far are done (for
// shutdown and tests).
func (l *Layer) Wait() { l.bg.Wait() }

// Stale returns the entry under key as a last-known-good answer, whatever
// its age (up to TTL+keep): Provenance.Stale and AgeSeconds are set.
func (l *Layer) Stale(ctx context.Context, key string) (*hub.Result, bool) {
	val, at, found, err := l.cache.Get(ctx, key)
	if err != nil {
		l.log.Warn("cache: get failed", "key", key, "err", err)
		return nil, false
	}
	if !found {
		return nil, false
	}
	r, err := Decode(val)
	if err != nil {
		return nil, false
	}
	r.Provenance.Stale = true
	r.Provenance.AgeSeconds = max(l.now().Sub(at).Seconds(), 0)
	return r, true
}

// LastKnownGood returns the last good answer to the same call, marked
// stale with its age, when the call's policy caches it. It is the
// fallback chain's stale step (fallback.Options.Stale).
func (l *Layer) LastKnownGood(ctx context.Context, c *hub.Call) (*hub.Result, bool) {
	key, _, ok := l.Key(c)
	if !ok {
		return nil, false
	}
	r, ok := l.Stale(ctx, key)
	if ok && c.Capability != nil {
		r.Provenance.Capability = c.Capability.Name
	}
	return r, ok
}

// Invalidate removes the entry of one call.
func (l *Layer) Invalidate(ctx context.Context, c *hub.Call) error {
	key, _, ok := l.Key(c)
	if !ok {
		return nil
	}
	return l.cache.Delete(ctx, key)
}

// InvalidateTool removes every entry of a capability ("weather.current")
// or vendor tool ("weather-a/current") and returns how many.
func (l *Layer) InvalidateTool(ctx context.Context, name string) (int, error) {
	return l.cache.DeletePrefix(ctx, ToolPrefix(name))
}
