package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
)

// The shared stores, as [Health] names them.
const (
	StoreRedis    = "redis"
	StorePostgres = "postgres"
)

// AwayError is what a shared store answers while it cannot be reached
// and has not been joined yet (a hub started while it was away): the
// caller carries on as it does when the store goes away later (the meter
// spills usage events, limits fall back to local ones).
type AwayError struct {
	Store string // StoreRedis or StorePostgres
	Err   error  // the last attempt's error; may be nil
}

func (e *AwayError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("backend: %s is away; toolhub joins it when it answers", e.Store)
	}
	return fmt.Sprintf("backend: %s is away; toolhub joins it when it answers (last: %v)", e.Store, e.Err)
}

func (e *AwayError) Unwrap() error { return e.Err }

// IsAway reports whether err says a shared store is away.
func IsAway(err error) bool {
	var a *AwayError
	return errors.As(err, &a)
}

// unreachable reports whether err is a store that could not be reached
// (refused, timed out, reset, closed), not one that answered: a wrong
// password, a missing database or a bad schema name still fail a start.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// The server answered; only "starting up / shutting down" (class 57)
		// and "too many connections" are a passing state.
		return pe.Code == "57P03" || pe.Code == "57P01" || pe.Code == "53300"
	}
	var re redis.Error
	if errors.As(err, &re) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// Health follows whether each configured shared store answers, and how
// long it has not: /readyz and the metrics read it. Safe for concurrent
// use.
type Health struct {
	now func() time.Time

	mu     sync.Mutex
	stores map[string]*storeHealth
}

type storeHealth struct {
	up        bool
	downSince time.Time     // while down
	degraded  time.Duration // down time before downSince
	lastErr   error
}

// StoreState is one shared store in [Health.States].
type StoreState struct {
	Store           string  `json:"store"`
	Up              bool    `json:"up"`
	DegradedSeconds float64 `json:"degraded_seconds"` // time spent away since start
	LastError       string  `json:"last_error,omitempty"`
}

func newHealth(now func() time.Time) *Health {
	if now == nil {
		now = time.Now
	}
	return &Health{now: now, stores: map[string]*storeHealth{}}
}

// track starts following a store, down until set says otherwise.
func (h *Health) track(store string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.stores[store]; !ok {
		h.stores[store] = &storeHealth{downSince: h.now()}
	}
}

// set records whether store answered (err == nil).
func (h *Health) set(store string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.stores[store]
	if !ok {
		s = &storeHealth{downSince: h.now()}
		h.stores[store] = s
	}
	now := h.now()
	switch {
	case err == nil && !s.up:
		s.degraded += now.Sub(s.downSince)
		s.up = true
	case err != nil && s.up:
		s.up, s.downSince = false, now
	}
	s.lastErr = err
}

// States lists the tracked stores, by name.
func (h *Health) States() []StoreState {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]StoreState, 0, len(h.stores))
	now := h.now()
	for name, s := range h.stores {
		st := StoreState{Store: name, Up: s.up, DegradedSeconds: s.degraded.Seconds()}
		if !s.up {
			st.DegradedSeconds += now.Sub(s.downSince).Seconds()
			if s.lastErr != nil {
				st.LastError = s.lastErr.Error()
			}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Store < out[j].Store })
	return out
}

// Away returns an error naming every tracked store that is away, or nil.
func (h *Health) Away() error {
	var errs []error
	for _, s := range h.States() {
		if !s.Up {
			errs = append(errs, fmt.Errorf("%s is away", s.Store))
		}
	}
	return errors.Join(errs...)
}

// Backoff bounds of [watch]: the first retry after 100 ms, doubling up to
// 5 s while a store is away; once up it is checked every CheckEvery.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
	checkEvery = time.Second
)

// watch follows one shared store until ctx ends: probe says whether it
// answers; join (nil once done) completes what start-up could not (open
// the PostgreSQL stores, create the queue's consumer group) the first
// time it does. Retries back off from backoffMin to backoffMax.
func (h *Health) watch(ctx context.Context, store string, probe, join func(context.Context) error) {
	h.track(store)
	wait := backoffMin
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := probe(pctx)
		if err == nil && join != nil {
			if err = join(pctx); err == nil {
				join = nil
			}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		h.set(store, err)
		if err == nil {
			wait = backoffMin
			t.Reset(checkEvery)
			continue
		}
		t.Reset(wait)
		wait = min(2*wait, backoffMax)
	}
}
