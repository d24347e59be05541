// Package sqlledger is the embedded [billing.Ledger]: one SQLite file (pure
// Go, modernc.org/sqlite) in WAL mode. Appends run one at a time on one
// writer connection: each is one transaction of multi-row INSERT … ON
// CONFLICT (key) DO NOTHING statements, prepared once and reused, plus
// the upserts of the hourly rollups (see [Ledger.Append]).
//
//	l, err := sqlledger.Open(ctx, filepath.Join(data, "ledger.db"), nil)
//	defer l.Close()
//	err = l.Append(ctx, events)
//
// Durability: synchronous=NORMAL. In WAL mode a commit is then written to
// the WAL file (the OS page cache) but fsynced only at checkpoints, so a
// committed Append survives a crash or kill -9 of the process; a power
// loss or OS crash can roll back the last commits since the previous
// checkpoint. The meter's write-ahead log (billing/wal.go) covers that
// window: before it drops a segment whose events are committed here it
// calls [Ledger.Sync] (a full checkpoint, fsynced), so a machine crash
// loses nothing either, at the cost of one fsync per segment rather than
// one per batch (FULL).
package sqlledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/internal/x/sqlitedb"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/internal/ledgersql"
)

// Options configure Open. A nil *Options means the defaults.
type Options struct {
	// BusyTimeout is how long a write waits for another writer's lock;
	// zero means sqlitedb.DefaultBusyTimeout (10 s).
	BusyTimeout time.Duration
}

// Ledger is a SQLite ledger.
type Ledger struct {
	db   *sql.DB
	path string

	wmu sync.Mutex // serialises Appends (SQLite has one writer anyway)
	w   *writer    // nil once closed

	appended, dups atomic.Int64
	closeOnce      sync.Once
	closeErr       error
}

var _ billing.Ledger = (*Ledger)(nil)

// schema: events is a rowid table with a UNIQUE key: rows (~300 bytes)
// append at the end of the table and only the small (key, rowid) entries
// go into the key index in key order. Files made before this kept events
// WITHOUT ROWID, clustered on key; they work unchanged (ON CONFLICT (key)
// names the primary key there), only slower to append to.
const schema = `
CREATE TABLE IF NOT EXISTS events (
	key TEXT NOT NULL UNIQUE,
	call_id TEXT NOT NULL,
	kind TEXT NOT NULL,
	attempt INTEGER NOT NULL,
	time_us INTEGER NOT NULL,
	ingested_us INTEGER NOT NULL,
	tenant TEXT NOT NULL,
	vendor TEXT NOT NULL,
	tool TEXT NOT NULL,
	capability TEXT NOT NULL,
	outcome TEXT NOT NULL,
	reason TEXT NOT NULL,
	latency_ns INTEGER NOT NULL,
	units TEXT NOT NULL,
	images INTEGER NOT NULL,
	tokens INTEGER NOT NULL,
	seconds INTEGER NOT NULL,
	tenant_unit_price INTEGER NOT NULL,
	tenant_cost INTEGER NOT NULL,
	vendor_unit_price INTEGER NOT NULL,
	vendor_cost INTEGER NOT NULL,
	currency TEXT NOT NULL,
	price_version TEXT NOT NULL,
	adjusts TEXT NOT NULL,
	month_us INTEGER NOT NULL,
	attempt_latency_ns INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_time ON events (time_us);
CREATE TABLE IF NOT EXISTS rollup_hours (
	hour_us INTEGER NOT NULL,
	month_us INTEGER NOT NULL,
	tenant TEXT NOT NULL,
	vendor TEXT NOT NULL,
	tool TEXT NOT NULL,
	currency TEXT NOT NULL,
	calls INTEGER NOT NULL,
	rejected INTEGER NOT NULL,
	failed INTEGER NOT NULL,
	cached INTEGER NOT NULL,
	attempts INTEGER NOT NULL,
	paid INTEGER NOT NULL,
	images INTEGER NOT NULL,
	tokens INTEGER NOT NULL,
	seconds INTEGER NOT NULL,
	tenant_cost INTEGER NOT NULL,
	vendor_cost INTEGER NOT NULL,
	PRIMARY KEY (hour_us, tenant, vendor, tool, currency)
) WITHOUT ROWID;
`

var dialect = ledgersql.Dialect{
	Placeholder: func(int) string { return "?" },
}

// Open opens (creating if needed) the ledger file at path. Its directory
// must exist.
func Open(ctx context.Context, path string, opts *Options) (*Ledger, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	db, err := sqlitedb.Open(path, &sqlitedb.Options{BusyTimeout: o.BusyTimeout})
	if err != nil {
		return nil, fmt.Errorf("sqlledger: %w", err)
	}
	abs, _ := filepath.Abs(path) // sqlitedb.Open made it absolute already
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlledger: open %s: create tables: %w", abs, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlledger: open %s: migrate: %w", abs, err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlledger: open %s: %w", abs, err)
	}
	return &Ledger{db: db, path: abs, w: &writer{conn: conn, stmts: map[stmtKey]driverStmt{}}}, nil
}

// migrate brings a file made by an older toolhub to the current schema:
// events gains attempt_latency_ns (the attempt's latency on a row that
// holds a call and its one attempt, see billing.MergeAttempt), 0 on the
// rows already stored, each of which holds one event as before. Reports
// read old and new rows alike.
func migrate(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('events') WHERE name = 'attempt_latency_ns'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, `ALTER TABLE events ADD COLUMN attempt_latency_ns INTEGER NOT NULL DEFAULT 0`)
	if err != nil && strings.Contains(err.Error(), "duplicate column") {
		return nil // another process migrated it first
	}
	return err
}

// Path is the ledger file's absolute path.
func (l *Ledger) Path() string { return l.path }

// Append stores events in one transaction, ignoring known keys, and adds
// the new ones to the hourly rollups in the same transaction.
//
// Appends run one at a time on the writer connection, whose prepared
// INSERTs are reused. The first try inserts without RETURNING and counts
// rows changed per INSERT: when every row of every INSERT was new (the
// common case) or none was (a replay), that count says which events were
// stored. Otherwise (a batch partly replayed, or a key twice in the batch)
// the try is rolled back and the batch runs again with RETURNING key.
func (l *Ledger) Append(ctx context.Context, events []billing.Event) error {
	if len(events) == 0 {
		return nil
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.w == nil {
		return fmt.Errorf("sqlledger: append: %w", billing.ErrClosed)
	}
	var n int64
	err := l.w.conn.Raw(func(dc any) error {
		c, ok := dc.(driverConn)
		if !ok {
			return fmt.Errorf("driver connection %T lacks BeginTx or PrepareContext", dc)
		}
		var err error
		n, err = l.w.append(ctx, c, events)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlledger: append: %w", err)
	}
	l.appended.Add(n)
	l.dups.Add(int64(len(events)) - n)
	return nil
}

// Sync makes every committed Append survive a power loss: a full
// checkpoint fsyncs SQLite's WAL and copies it into the database file,
// which it fsyncs too. See [billing.Syncer].
func (l *Ledger) Sync(ctx context.Context) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.w == nil {
		return fmt.Errorf("sqlledger: sync: %w", billing.ErrClosed)
	}
	var busy, logFrames, done int
	if err := l.w.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(FULL)").Scan(&busy, &logFrames, &done); err != nil {
		return fmt.Errorf("sqlledger: sync: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("sqlledger: sync: checkpoint blocked by a reader (%d of %d WAL frames written back)", done, logFrames)
	}
	return nil
}

var _ billing.Syncer = (*Ledger)(nil)

// driverConn is what the writer needs of the driver's connection.
type driverConn interface {
	driver.ConnBeginTx
	driver.ConnPrepareContext
}

// driverStmt is what the writer needs of the driver's statements.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// maxRows is the most rows one INSERT carries (25 columns each: well under
// SQLite's 32766 variables). A batch is cut into INSERTs of maxRows and of
// powers of two for the rest, so a handful of prepared statements serve
// every batch size.
const maxRows = 256

// oneCoreRows is maxRows on a hub with one P (GOMAXPROCS=1), where the
// writer pauses after each INSERT (see yieldPause): an INSERT of 256 rows
// is ~2.5ms that calls wait for; of 64, ~0.6ms.
const oneCoreRows = 64

// yieldPause: when the process has one P, the writer pauses after each
// INSERT of a batch until the Go scheduler has polled the network (see
// pauser), for at least yieldPause. A batch of thousands of events is tens
// of milliseconds of CPU; meanwhile, calls whose bytes arrive wait for the
// scheduler to poll the network, which it does only when no goroutine is
// runnable (or every 10ms, from sysmon). runtime.Gosched does not do it:
// the writer is runnable again at once; nor does a short time.Sleep when
// other goroutines (the producer, calls) run longer than the sleep. With
// more than one P, an idle P polls and the writer does not pause. Pinned
// hop bench, c=16: p99 9-13ms (bare proxy: 5-10ms) instead of 19-21ms;
// BenchmarkAppend with one P: 114k events/s (112k without pauses).
const yieldPause = 20 * time.Microsecond

type stmtKey struct {
	rollup    bool
	rows      int
	returning bool
	shared    bool // the rows' shared columns bound once (ledgersql.SameShared)
}

// writer is the connection Appends run on, with its prepared statements.
// Only Append (holding Ledger.wmu, inside conn.Raw) touches it.
type writer struct {
	conn  *sql.Conn
	stmts map[stmtKey]driverStmt
	args  []driver.NamedValue // rollup INSERT arguments
	vals  []any               // the producer's, then the rollups'
	bufs  [2][]driver.NamedValue
	// pauser is made on the first batch written with one P; pauses
	// counts its pauses (one after each INSERT of a batch but the last).
	pauser *pauser
	pauses int
}

func (w *writer) stmt(ctx context.Context, c driverConn, k stmtKey) (driverStmt, error) {
	if s := w.stmts[k]; s != nil {
		return s, nil
	}
	cols := ledgersql.NumColumns
	head := "INSERT INTO events (" + ledgersql.InsertColumns + ") VALUES "
	tail := " ON CONFLICT (key) DO NOTHING"
	if k.returning {
		tail += " RETURNING key"
	}
	if k.rollup {
		cols = ledgersql.NumRollupColumns
		head = "INSERT INTO rollup_hours (" + ledgersql.RollupTableColumns + ") VALUES "
		tail = fmt.Sprintf(ledgersql.RollupUpdate, "rollup_hours")
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	if k.shared {
		// ?1 … ?NumShared in every row; each plain ? after them is
		// numbered one past the largest so far, so the row values follow.
		var b strings.Builder
		b.WriteString("(")
		for i := range ledgersql.NumShared {
			fmt.Fprintf(&b, "?%d,", i+1)
		}
		b.WriteString(strings.Repeat("?,", ledgersql.NumRow))
		row = strings.TrimSuffix(b.String(), ",") + ")"
	}
	ds, err := c.PrepareContext(ctx, head+strings.TrimSuffix(strings.Repeat(row+",", k.rows), ",")+tail)
	if err != nil {
		return nil, err
	}
	s, ok := ds.(driverStmt)
	if !ok {
		ds.Close()
		return nil, fmt.Errorf("driver statement %T lacks ExecContext or QueryContext", ds)
	}
	w.stmts[k] = s
	return s, nil
}

// chunk is the number of rows of the next INSERT when n are left and an
// INSERT carries at most most.
func chunk(n, most int) int {
	if n >= most {
		return most
	}
	c := 1
	for c*2 <= n {
		c *= 2
	}
	return c
}

// chunkArgs are the arguments of one INSERT of rows events.
type chunkArgs struct {
	rows   int
	shared bool
	args   []driver.NamedValue
}

// producer turns events into INSERT arguments on its own goroutine, one
// chunk ahead of the INSERTs (two buffers, passed back and forth), so the
// Go side of a batch overlaps SQLite's.
type producer struct {
	ready chan chunkArgs           // closed when the producer is done
	free  chan []driver.NamedValue // buffers handed back
	quit  chan struct{}
}

func (w *writer) produce(events []billing.Event, most int) *producer {
	p := &producer{ready: make(chan chunkArgs, 1), free: make(chan []driver.NamedValue, 2), quit: make(chan struct{})}
	for i, b := range w.bufs {
		if cap(b) < maxRows*ledgersql.NumColumns { // the most a chunk takes (shared columns not shared)
			w.bufs[i] = make([]driver.NamedValue, 0, maxRows*ledgersql.NumColumns)
		}
	}
	p.free <- w.bufs[0][:0]
	p.free <- w.bufs[1][:0]
	go func() {
		defer close(p.ready)
		for i := 0; i < len(events); {
			rows := chunk(len(events)-i, most)
			var args []driver.NamedValue
			select {
			case args = <-p.free:
			case <-p.quit:
				return
			}
			shared := rows > 1
			for j := i + 1; j < i+rows && shared; j++ {
				shared = ledgersql.SameShared(&events[i], &events[j])
			}
			w.vals = w.vals[:0]
			if shared {
				w.vals = ledgersql.AppendShared(w.vals, &events[i])
			}
			for j := i; j < i+rows; j++ {
				if !shared {
					w.vals = ledgersql.AppendShared(w.vals, &events[j])
				}
				w.vals = ledgersql.AppendRow(w.vals, &events[j])
			}
			args = args[:0]
			for k, v := range w.vals {
				args = append(args, driver.NamedValue{Ordinal: k + 1, Value: v})
			}
			i += rows
			select {
			case p.ready <- chunkArgs{rows, shared, args}:
			case <-p.quit:
				return
			}
		}
	}()
	return p
}

// stop ends the producer and waits for it, so the writer's buffers it
// fills are free for the next try.
func (p *producer) stop() {
	close(p.quit)
	for range p.ready {
	}
}

// bind sets w.args to vals, numbered from 1.
func (w *writer) bind(vals []any) []driver.NamedValue {
	w.args = w.args[:0]
	for i, v := range vals {
		w.args = append(w.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return w.args
}

// append stores events and returns how many were new.
func (w *writer) append(ctx context.Context, c driverConn, events []billing.Event) (int64, error) {
	n, ok, err := w.try(ctx, c, events, false)
	if err != nil || ok {
		return n, err
	}
	n, _, err = w.try(ctx, c, events, true)
	return n, err
}

// try runs one transaction. Without returning, it gives up (ok false,
// rolled back) unless every event is new or every event is known.
func (w *writer) try(ctx context.Context, c driverConn, events []billing.Event, returning bool) (n int64, ok bool, err error) {
	tx, err := c.BeginTx(ctx, driver.TxOptions{})
	if err != nil {
		return 0, false, err
	}
	done := false
	defer func() {
		if !done {
			tx.Rollback()
		}
	}()
	var inserted map[string]bool
	if returning {
		inserted = make(map[string]bool, len(events))
	}
	const (
		unknown = iota
		allNew
		allKnown
	)
	state, sent := unknown, 0
	most, pause := maxRows, false
	if runtime.GOMAXPROCS(0) == 1 {
		most, pause = oneCoreRows, true
		if w.pauser == nil {
			w.pauser = newPauser()
		}
	}
	chunks := w.produce(events, most)
	defer chunks.stop()
	for ch := range chunks.ready {
		s, err := w.stmt(ctx, c, stmtKey{rows: ch.rows, returning: returning, shared: ch.shared})
		if err != nil {
			return 0, false, err
		}
		var res driver.Result
		if returning {
			err = readKeys(ctx, s, ch.args, inserted)
		} else {
			res, err = s.ExecContext(ctx, ch.args)
		}
		chunks.free <- ch.args
		if err != nil {
			return 0, false, err
		}
		if sent += ch.rows; pause && sent < len(events) {
			w.pauser.pause()
			w.pauses++
		}
		if returning {
			continue
		}
		changed, err := res.RowsAffected()
		if err != nil {
			return 0, false, err
		}
		got := unknown
		switch changed {
		case int64(ch.rows):
			got = allNew
		case 0:
			got = allKnown
		}
		if got == unknown || (state != unknown && got != state) {
			return 0, false, nil
		}
		state = got
	}
	if state == allKnown {
		return 0, true, nil // nothing changed: the deferred rollback ends it
	}
	if returning {
		n = int64(len(inserted))
	} else {
		n = int64(len(events))
	}
	hours := ledgersql.Aggregate(events, inserted)
	for i := 0; i < len(hours); {
		rows := chunk(len(hours)-i, maxRows)
		s, err := w.stmt(ctx, c, stmtKey{rollup: true, rows: rows})
		if err != nil {
			return 0, false, err
		}
		w.vals = w.vals[:0]
		for j := i; j < i+rows; j++ {
			w.vals = hours[j].AppendValues(w.vals)
		}
		i += rows
		if _, err := s.ExecContext(ctx, w.bind(w.vals)); err != nil {
			return 0, false, fmt.Errorf("rollups: %w", err)
		}
	}
	done = true
	if err := tx.Commit(); err != nil {
		return 0, false, fmt.Errorf("commit: %w", err)
	}
	return n, true, nil
}

// readKeys runs an INSERT … RETURNING key and marks the keys returned.
func readKeys(ctx context.Context, s driverStmt, args []driver.NamedValue, inserted map[string]bool) error {
	rows, err := s.QueryContext(ctx, args)
	if err != nil {
		return err
	}
	dest := make([]driver.Value, 1)
	for {
		err := rows.Next(dest)
		if err == io.EOF {
			break
		}
		if err != nil {
			rows.Close()
			return err
		}
		k, ok := dest[0].(string)
		if !ok {
			rows.Close()
			return fmt.Errorf("RETURNING key: got %T", dest[0])
		}
		inserted[k] = true
	}
	return rows.Close()
}

// Query calls fn for each matching event, by time then key.
func (l *Ledger) Query(ctx context.Context, f billing.Filter, fn func(billing.Event) error) error {
	q, args := dialect.Select("events", f)
	rows, err := l.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("sqlledger: query: %w", err)
	}
	defer rows.Close()
	return ledgersql.ReadEvents(rows, f.Kind, fn, "sqlledger: query")
}

// Rollup sums events by q.GroupBy.
func (l *Ledger) Rollup(ctx context.Context, q billing.RollupQuery) ([]billing.Row, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	query, args := dialect.RollupOf("events", "rollup_hours", q)
	rows, err := l.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlledger: rollup: %w", err)
	}
	defer rows.Close()
	return ledgersql.ReadRows(rows, "sqlledger: rollup")
}

// Stats counts appended and duplicate events.
func (l *Ledger) Stats() billing.LedgerStats {
	return billing.LedgerStats{Appended: l.appended.Load(), Duplicates: l.dups.Load()}
}

// Close closes the file.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		l.wmu.Lock()
		w := l.w
		l.w = nil
		l.wmu.Unlock()
		w.conn.Raw(func(any) error {
			for _, s := range w.stmts {
				s.Close()
			}
			return nil
		})
		w.conn.Close()
		w.pauser.close()
		l.closeErr = l.db.Close()
	})
	return l.closeErr
}
