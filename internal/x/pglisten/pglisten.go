// Package pglisten keeps a PostgreSQL connection listening on a
// notification channel: on a connection of its own, outside any pool,
// reconnecting with jittered backoff when it is lost. The registry store
// (registry/pgstore) and the shared key store (auth/pgkeys) listen through
// it.
//
//	err := pglisten.Run(ctx, connConfig, "toolhub_registry", pglisten.Handlers{
//		Connected: func() { reloadEverything() }, // changes while away were not heard
//		Notify:    func(payload string) { reload(payload) },
//		Lost:      func(err error, retryIn time.Duration) { log.Warn(...) },
//	})
package pglisten

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// Reconnect backoff: 100 ms doubling to 10 s, with jitter; back to 100 ms
// after a connection that had lasted longer than the maximum.
const (
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 10 * time.Second
)

// Handlers are called on Run's goroutine, one at a time. Nil ones are
// skipped.
type Handlers struct {
	// Connected: listening has started (the first time, and after every
	// reconnect). Notifications sent while not listening were not heard.
	Connected func()
	// Notify: a notification's payload.
	Notify func(payload string)
	// Lost: the connection failed or was lost (not called when ctx ends);
	// Run reconnects after retryIn.
	Lost func(err error, retryIn time.Duration)
}

// Run listens on channel until ctx ends, then returns ctx.Err().
func Run(ctx context.Context, conn *pgx.ConnConfig, channel string, h Handlers) error {
	backoff := MinBackoff
	for {
		lasted, err := once(ctx, conn, channel, h)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if lasted > MaxBackoff {
			backoff = MinBackoff // it had been working: come back fast
		}
		wait := backoff/2 + rand.N(backoff/2)
		if h.Lost != nil {
			h.Lost(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// once listens on one connection until it fails, and says how long it
// listened.
func once(ctx context.Context, cfg *pgx.ConnConfig, channel string, h Handlers) (time.Duration, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(ctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		return 0, fmt.Errorf("listen: %w", err)
	}
	start := time.Now()
	if h.Connected != nil {
		h.Connected()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return time.Since(start), err
		}
		if h.Notify != nil {
			h.Notify(n.Payload)
		}
	}
}
