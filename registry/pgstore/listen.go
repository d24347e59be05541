package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Channel is the PostgreSQL notification channel: every committed put or
// delete sends NOTIFY toolhub_registry, '<kind>:<id>' (for example
// "vendor:weather-a" or "capability:image.generate").
const Channel = "toolhub_registry"

// Kinds of change, the part of a notification before the colon.
const (
	KindVendor     = "vendor"
	KindTenant     = "tenant"
	KindCapability = "capability"
	// KindResync is what [Store.Listen] passes, with an empty id, each
	// time it starts listening: the first time and after every reconnect.
	// Changes made while it was not listening were not heard; reload
	// everything.
	KindResync = "resync"
)

// Reconnect backoff of [Store.Listen].
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
)

// Listen calls fn for every change to the registry that commits in this
// database, made through any Store (this one included), until ctx ends;
// then it returns ctx.Err().
//
// fn gets the kind ([KindVendor], [KindTenant], [KindCapability]) and the
// id of what changed: read it again from the store to learn what it now is
// (a delete reads as [registry.ErrNotFound]). fn also gets [KindResync]
// when listening starts and after every reconnect. Calls come one at a
// time on Listen's goroutine; a slow fn holds back the calls after it.
//
// Listen uses a connection of its own, outside the pool (so [Store.Close]
// does not stop it: end ctx). When it loses it, it logs the error and
// reconnects with backoff (100 ms doubling to 10 s, with jitter).
//
// The channel is per database, not per schema: a Store also hears of
// changes made to other schemas' registries. Reading the id again makes
// those harmless.
func (s *Store) Listen(ctx context.Context, fn func(kind, id string)) error {
	backoff := minBackoff
	for {
		lasted, err := s.listenOnce(ctx, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if lasted > maxBackoff {
			backoff = minBackoff // it had been working: come back fast
		}
		wait := backoff/2 + rand.N(backoff/2)
		s.log.Warn("pgstore: listen: connection lost, reconnecting", "where", s.where, "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// listenOnce listens on one connection until it fails, and says how long
// it listened.
func (s *Store) listenOnce(ctx context.Context, fn func(kind, id string)) (time.Duration, error) {
	conn, err := pgx.ConnectConfig(ctx, s.conn)
	if err != nil {
		return 0, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(ctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{Channel}.Sanitize()); err != nil {
		return 0, fmt.Errorf("listen: %w", err)
	}
	start := time.Now()
	fn(KindResync, "")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return time.Since(start), err
		}
		kind, id, ok := strings.Cut(n.Payload, ":")
		if !ok || kind == "" || id == "" {
			s.log.Warn("pgstore: listen: notification is not kind:id; ignored", "where", s.where, "payload", n.Payload)
			continue
		}
		fn(kind, id)
	}
}
