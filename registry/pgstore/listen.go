package pgstore

import (
	"context"
	"strings"
	"time"

	"github.com/toolhub/toolhub/internal/x/pglisten"
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
	return pglisten.Run(ctx, s.conn, Channel, pglisten.Handlers{
		Connected: func() { fn(KindResync, "") },
		Notify: func(payload string) {
			kind, id, ok := strings.Cut(payload, ":")
			if !ok || kind == "" || id == "" {
				s.log.Warn("pgstore: listen: notification is not kind:id; ignored", "where", s.where, "payload", payload)
				return
			}
			fn(kind, id)
		},
		Lost: func(err error, wait time.Duration) {
			s.log.Warn("pgstore: listen: connection lost, reconnecting", "where", s.where, "err", err, "retry_in", wait)
		},
	})
}
