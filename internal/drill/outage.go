package drill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/toolhub/toolhub/hub"
)

// The shared stores the drills use when their options name none: the
// Redis and PostgreSQL `make services` starts.
const (
	DefaultRedis    = "127.0.0.1:6379"
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// OutageOptions configure [RedisOutage] and [PostgresOutage]. Vendors is
// required; zero fields of the others mean the defaults.
type OutageOptions struct {
	// Vendors serves the hub's vendors (weather-a); toolhub ships none:
	// callers pass the example vendors (examples/drillvendors).
	Vendors VendorServer
	// Rate is the offered calls/s; zero means 200.
	Rate float64
	// Hold is how long the outage lasts once the hub noticed it; zero
	// means one second.
	Hold time.Duration
	// Warm is how long healthy traffic runs before the cut; zero means
	// 500ms.
	Warm time.Duration
	// Redis is the real Redis (host:port) behind the cuttable proxy; ""
	// means [DefaultRedis]. Keys go under a prefix of the drill's own,
	// deleted at the end.
	Redis string
	// Postgres is the real PostgreSQL (a postgres:// URL) behind the
	// proxy; "" means [DefaultPostgres]. Tables go in a schema of the
	// drill's own, dropped at the end.
	Postgres string
	// Logger receives the hub's log; nil discards it.
	Logger *slog.Logger
}

var errVendors = errors.New("drill: OutageOptions.Vendors: a vendor server is required")

func (o *OutageOptions) defaults() OutageOptions {
	var d OutageOptions
	if o != nil {
		d = *o
	}
	if d.Rate <= 0 {
		d.Rate = 200
	}
	if d.Hold <= 0 {
		d.Hold = time.Second
	}
	if d.Warm <= 0 {
		d.Warm = 500 * time.Millisecond
	}
	if d.Redis == "" {
		d.Redis = DefaultRedis
	}
	if d.Postgres == "" {
		d.Postgres = DefaultPostgres
	}
	return d
}

// OutageReport is what a shared-store outage drill measured.
type OutageReport struct {
	Store        string  // "redis" or "postgres"
	Rate         float64 // offered calls/s
	Instances    int     // redis: the instances the fallback divides limits by
	Calls        int64   // calls made
	ClientErrors int64   // calls that failed (must be 0: the hub works on without the store)
	FirstError   string  // the first of them
	DuringFault  int64   // calls made while the store was down
	FaultOK      int64   // of those, answered
	// FaultP50 and FaultMax are the median and the slowest latency of the
	// calls made during the outage.
	FaultP50, FaultMax time.Duration
	// DetectAfter: store cut → the hub's first fallback log line (redis:
	// "shared limiter unreachable"; postgres: "usage ledger unwritable").
	DetectAfter time.Duration
	// FallbackLogs is how often the fallback was logged (once per outage).
	FallbackLogs int
	// RecoverAfter: store back → the hub back on it (redis: "shared
	// limiter reachable again"; postgres: "usage ledger writable again").
	RecoverAfter time.Duration
	// Spilled and Replayed (postgres): usage events spilled to the local
	// log while the ledger was down, and replayed into it afterwards;
	// ReplayAfter: store back → every spilled event in the ledger.
	Spilled, Replayed int64
	ReplayAfter       time.Duration
	EventsLost        int64 // answered calls missing from the ledger (must be 0)
	EventsExtra       int64 // ledger call events beyond the calls made (must be 0)
}

func (r OutageReport) String() string {
	pct := 100 * float64(r.FaultOK) / float64(max(r.DuringFault, 1))
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	var b strings.Builder
	fmt.Fprintf(&b, "%s down at %.0f calls/s: %d calls, %d client errors; success during the outage %d/%d (%.1f%%), latency p50 %v, max %v; ",
		r.Store, r.Rate, r.Calls, r.ClientErrors, r.FaultOK, r.DuringFault, pct, ms(r.FaultP50), ms(r.FaultMax))
	switch r.Store {
	case "redis":
		fmt.Fprintf(&b, "limits fell back to local (rate/%d) %v after the cut, logged %d time(s); back on Redis %v after it returned; ",
			r.Instances, ms(r.DetectAfter), r.FallbackLogs, ms(r.RecoverAfter))
	case "postgres":
		fmt.Fprintf(&b, "ledger writes spilling to the local log %v after the cut; ledger writable %v after PostgreSQL returned, "+
			"%d spilled events replayed %v after it returned; ", ms(r.DetectAfter), ms(r.RecoverAfter), r.Replayed, ms(r.ReplayAfter))
	}
	fmt.Fprintf(&b, "usage events lost %d, duplicated %d", r.EventsLost, r.EventsExtra)
	if r.FirstError != "" {
		fmt.Fprintf(&b, " (first error: %s)", r.FirstError)
	}
	return b.String()
}

// Ok reports whether the drill kept every call and every usage event.
func (r OutageReport) Ok() bool {
	return r.ClientErrors == 0 && r.EventsLost == 0 && r.EventsExtra == 0 && r.DuringFault > 0
}

// runOutage is the common script: healthy traffic, the proxy cut, the hub
// noticing (the log line detect), the outage held, the proxy restored,
// the hub back (the log line back), then the ledger counted.
func runOutage(ctx context.Context, l *Lab, w *logWatch, p *Proxy, o OutageOptions, rep *OutageReport, detect, back string, drained func() bool) error {
	var n atomic.Uint64
	tr := startTraffic(ctx, o.Rate, func(ctx context.Context) error {
		city := cities[(n.Add(1)-1)%uint64(len(cities))]
		_, err := l.App.Gateway.Call(ctx, &hub.Call{Tenant: "default", Name: "weather-a__current_weather", Arguments: map[string]any{"city": city}})
		return err
	})
	defer tr.stop()

	sleep(ctx, o.Warm)
	if _, ok := w.seen(detect); ok {
		return fmt.Errorf("the hub logged %q before the fault", detect)
	}
	cut := time.Now()
	tr.inFault.Store(true)
	p.Cut()
	if _, err := waitFor(ctx, 30*time.Second, func() bool { _, ok := w.seen(detect); return ok }); err != nil {
		return fmt.Errorf("the hub never logged %q: %w", detect, err)
	}
	at, _ := w.seen(detect)
	rep.DetectAfter = at.Sub(cut)
	sleep(ctx, o.Hold)

	restored := time.Now()
	if err := p.Restore(); err != nil {
		return err
	}
	tr.inFault.Store(false)
	if _, err := waitFor(ctx, 30*time.Second, func() bool { _, ok := w.seen(back); return ok }); err != nil {
		return fmt.Errorf("the hub never logged %q after the store came back: %w", back, err)
	}
	at, _ = w.seen(back)
	rep.RecoverAfter = max(at.Sub(restored), 0)
	if drained != nil {
		done, err := waitFor(ctx, 30*time.Second, drained)
		if err != nil {
			return fmt.Errorf("spilled events never replayed: %+v: %w", l.App.Meter.Stats(), err)
		}
		rep.ReplayAfter = done.Sub(restored)
	}
	rep.FallbackLogs = w.times(detect)
	sleep(ctx, 200*time.Millisecond) // healthy again
	tr.stop()

	rep.Calls, rep.ClientErrors, rep.DuringFault, rep.FaultOK = tr.calls.Load(), tr.errs.Load(), tr.during.Load(), tr.duringOK.Load()
	rep.FaultP50, rep.FaultMax = tr.faultLatency()
	if err := tr.err(); err != nil {
		rep.FirstError = err.Error()
	}
	inLedger, err := l.LedgerCalls(ctx)
	if err != nil {
		return err
	}
	if d := rep.Calls - inLedger; d > 0 {
		rep.EventsLost = d
	} else {
		rep.EventsExtra = -d
	}
	return nil
}

// uniqueID returns prefix and 8 random hex digits.
func uniqueID(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// dropRedisPrefix deletes every key under prefix.
func dropRedisPrefix(addr, prefix string) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 500 {
			c.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		c.Unlink(ctx, keys...)
	}
}

// dropSchema drops a PostgreSQL schema and everything in it.
func dropSchema(dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}

// pgTarget returns the host:port a postgres:// URL points at.
func pgTarget(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", fmt.Errorf("drill: postgres %q: want a URL like %s", dsn, DefaultPostgres)
	}
	if u.Port() == "" {
		return u.Host + ":5432", nil
	}
	return u.Host, nil
}

// pgVia returns dsn (checked by pgTarget) pointed at addr instead.
func pgVia(dsn, addr string) string {
	u, _ := url.Parse(dsn)
	u.Host = addr
	return u.String()
}
