// Package sqlitejobs is the embedded [jobs.Store] and [jobs.WebhookStore]:
// one SQLite file (data/jobs.db) in WAL mode, opened by sqlitedb.Open.
// It passes the contract suite hub/jobs/jobstest.
//
//	store, err := sqlitejobs.Open(ctx, filepath.Join(data, "jobs.db"), nil)
//	q := jobs.NewQueue(store, nil)
package sqlitejobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/internal/jobrow"

	"github.com/toolhub/toolhub/internal/x/sqlitedb"
)

// Options configure [Open]. Nil means the defaults.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store is the embedded [jobs.Store]: one database file in WAL mode. Claims are
// one UPDATE … WHERE (status='queued' AND next_at<=now) OR (status='running'
// AND lease_until<now), so a dead worker's job is claimed again once its
// lease has expired.
type Store struct {
	db    *sql.DB
	now   func() time.Time
	stmts map[string]*sql.Stmt // sqlitePrepared, prepared at open
}

var _ jobs.Store = (*Store)(nil)

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS jobs (
	id          TEXT PRIMARY KEY,
	tenant      TEXT NOT NULL,
	tool        TEXT NOT NULL,
	arguments   TEXT NOT NULL DEFAULT '',
	meta        TEXT NOT NULL DEFAULT '',
	priority    INTEGER NOT NULL DEFAULT 0,
	status      TEXT NOT NULL,
	attempts    INTEGER NOT NULL DEFAULT 0,
	next_at     INTEGER NOT NULL DEFAULT 0,
	last_error  TEXT NOT NULL DEFAULT '',
	result      TEXT NOT NULL DEFAULT '',
	owner       TEXT NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	created     INTEGER NOT NULL,
	updated     INTEGER NOT NULL,
	keep_until  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_due ON jobs (status, priority, next_at);
CREATE INDEX IF NOT EXISTS jobs_lease ON jobs (status, lease_until);
CREATE INDEX IF NOT EXISTS jobs_keep ON jobs (keep_until) WHERE keep_until > 0;
CREATE TABLE IF NOT EXISTS job_events (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	job_id   TEXT NOT NULL,
	tenant   TEXT NOT NULL,
	tool     TEXT NOT NULL,
	status   TEXT NOT NULL,
	attempts INTEGER NOT NULL,
	error    TEXT NOT NULL DEFAULT '',
	result   TEXT NOT NULL DEFAULT '',
	at       INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS job_events_tenant ON job_events (tenant, id);
CREATE INDEX IF NOT EXISTS job_events_job ON job_events (job_id);
`

// Open opens (creating if needed) the job database at path.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	// One connection: writes serialize anyway, and event ids then become
	// visible in order.
	db, err := sqlitedb.Open(path, &sqlitedb.Options{MaxOpenConns: 1})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	if _, err := db.ExecContext(ctx, sqliteSchema+sqliteHookSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("jobs: sqlite schema in %q: %w", path, err)
	}
	s := &Store{db: db, now: time.Now, stmts: map[string]*sql.Stmt{}}
	if opts != nil && opts.Now != nil {
		s.now = opts.Now
	}
	for _, q := range sqlitePrepared {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("jobs: sqlite %q: prepare: %w", path, err)
		}
		s.stmts[q] = st
	}
	return s, nil
}

// The statements a job's life runs (add, claim, renew, finish, get, its
// events), prepared once: parsing them took a third of the store's CPU
// per job.
const (
	sqlAdd          = `INSERT INTO jobs (` + jobCols + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	sqlInsertEvent  = `INSERT INTO job_events (job_id, tenant, tool, status, attempts, error, result, at) VALUES (?,?,?,?,?,?,?,?)`
	sqlGet          = `SELECT ` + jobCols + ` FROM jobs WHERE id = ?`
	sqlClaimExpired = `SELECT id FROM jobs WHERE status = 'running' AND lease_until < ? ORDER BY lease_until LIMIT 1`
	sqlClaim        = `UPDATE jobs SET status = 'running', owner = ?, lease_until = ?, attempts = attempts + 1, updated = ?
			WHERE id = ? RETURNING ` + jobCols
	sqlRenew  = `UPDATE jobs SET lease_until = ? WHERE id = ? AND owner = ? AND status = 'running'`
	sqlFinish = `UPDATE jobs SET status = ?, result = ?, last_error = ?, next_at = ?, keep_until = ?, owner = '', lease_until = 0, updated = ?,
			attempts = max(attempts - ?, 0)
			WHERE id = ? AND owner = ? AND status = 'running'
			RETURNING ` + jobCols
	sqlEvents       = `SELECT id, job_id, tenant, tool, status, attempts, error, result, at FROM job_events WHERE id > ? ORDER BY id LIMIT ?`
	sqlTenantEvents = `SELECT id, job_id, tenant, tool, status, attempts, error, result, at FROM job_events WHERE id > ? AND tenant = ? ORDER BY id LIMIT ?`
)

var sqlitePrepared = []string{sqlAdd, sqlInsertEvent, sqlGet, sqlClaimExpired, sqliteDue, sqlClaim, sqlRenew, sqlFinish, sqlEvents, sqlTenantEvents, sqlGetWebhook}

// in returns the prepared statement q, in tx.
func (s *Store) in(ctx context.Context, tx *sql.Tx, q string) *sql.Stmt {
	return tx.StmtContext(ctx, s.stmts[q])
}

func (s *Store) Close() error { return s.db.Close() }

// DB is the job database's handle, for stores that keep their tables next
// to the jobs' (toolhub's A2A tasks). Close closes it.
func (s *Store) DB() *sql.DB { return s.db }

const jobCols = `id, tenant, tool, arguments, meta, priority, status, attempts, next_at, last_error, result, owner, lease_until, created, updated, keep_until`

type scanner interface{ Scan(dest ...any) error }

func scanJob(r scanner) (*jobs.Job, error) {
	var j jobs.Job
	var args, meta, result, status string
	var next, lease, created, updated, keep int64
	if err := r.Scan(&j.ID, &j.Tenant, &j.Tool, &args, &meta, &j.Priority, &status, &j.Attempts, &next,
		&j.LastError, &result, &j.Owner, &lease, &created, &updated, &keep); err != nil {
		return nil, err
	}
	j.Arguments, j.Meta, j.Result = jobrow.RawOrNil(args), jobrow.RawOrNil(meta), jobrow.RawOrNil(result)
	j.Status = jobs.Status(status)
	j.NextAt, j.LeaseTil, j.Created, j.Updated, j.KeepUntil = jobrow.FromMS(next), jobrow.FromMS(lease), jobrow.FromMS(created), jobrow.FromMS(updated), jobrow.FromMS(keep)
	return &j, nil
}

func (s *Store) insertEvent(ctx context.Context, tx *sql.Tx, j *jobs.Job, result string, at int64) error {
	_, err := s.in(ctx, tx, sqlInsertEvent).ExecContext(ctx,
		j.ID, j.Tenant, j.Tool, string(j.Status), j.Attempts, j.LastError, result, at)
	return err
}

func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("jobs: sqlite: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("jobs: sqlite commit: %w", err)
	}
	return nil
}

func (s *Store) Add(ctx context.Context, j *jobs.Job) error {
	now := s.now()
	if err := jobrow.Added(j, now); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.in(ctx, tx, sqlAdd).ExecContext(ctx,
			j.ID, j.Tenant, j.Tool, jobrow.NullJSON(j.Arguments), jobrow.NullJSON(j.Meta), j.Priority, string(j.Status), j.Attempts,
			jobrow.MS(j.NextAt), j.LastError, jobrow.NullJSON(j.Result), "", 0, jobrow.MS(j.Created), jobrow.MS(j.Updated), jobrow.MS(j.KeepUntil))
		if err != nil {
			return fmt.Errorf("jobs: add %s: %w", j.ID, err)
		}
		return s.insertEvent(ctx, tx, j, "", jobrow.MS(now))
	})
}

func (s *Store) Get(ctx context.Context, id string) (*jobs.Job, error) {
	j, err := scanJob(s.stmts[sqlGet].QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", jobs.ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: get %s: %w", id, err)
	}
	return j, nil
}

func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration) (*jobs.Job, error) {
	now := s.now()
	var j *jobs.Job
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// A dead worker's job first, then the most urgent due one; each
		// query walks an index and stops at the first row.
		var id string
		err := s.in(ctx, tx, sqlClaimExpired).QueryRowContext(ctx, jobrow.MS(now)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			err = s.in(ctx, tx, sqliteDue).QueryRowContext(ctx, jobrow.MS(now)).Scan(&id)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("jobs: claim: %w", err)
		}
		j, err = scanJob(s.in(ctx, tx, sqlClaim).QueryRowContext(ctx, owner, jobrow.MS(now.Add(lease)), jobrow.MS(now), id))
		if err != nil {
			return fmt.Errorf("jobs: claim %s: %w", id, err)
		}
		return s.insertEvent(ctx, tx, j, "", jobrow.MS(now))
	})
	return j, err
}

// sqliteDue picks the most urgent due job: the first of each status in
// the jobs_due index's order, then the better of the two. (One query over
// status IN ('queued', 'waiting') sorted every due job on every claim: a
// drain of n jobs cost n².)
const sqliteDue = `SELECT id FROM (
		SELECT * FROM (SELECT id, priority, next_at FROM jobs WHERE status = 'queued' AND next_at <= ?1 ORDER BY priority, next_at LIMIT 1)
		UNION ALL
		SELECT * FROM (SELECT id, priority, next_at FROM jobs WHERE status = 'waiting' AND next_at <= ?1 ORDER BY priority, next_at LIMIT 1)
	) ORDER BY priority, next_at LIMIT 1`

func (s *Store) Renew(ctx context.Context, id, owner string, lease time.Duration) error {
	now := s.now()
	res, err := s.stmts[sqlRenew].ExecContext(ctx, jobrow.MS(now.Add(lease)), id, owner)
	if err != nil {
		return fmt.Errorf("jobs: renew %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return jobs.ErrLeaseLost
	}
	return nil
}

func (s *Store) Finish(ctx context.Context, id, owner string, out jobs.Outcome) error {
	if err := out.Check(id); err != nil {
		return err
	}
	now := s.now()
	refund := 0
	if out.Status == jobs.Waiting {
		refund = 1
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		j, err := scanJob(s.in(ctx, tx, sqlFinish).QueryRowContext(ctx, string(out.Status), jobrow.NullJSON(out.Result), out.Error, jobrow.MS(out.NextAt), jobrow.MS(out.KeepUntil), jobrow.MS(now), refund, id, owner))
		if errors.Is(err, sql.ErrNoRows) {
			return jobs.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("jobs: finish %s: %w", id, err)
		}
		return s.insertEvent(ctx, tx, j, jobrow.NullJSON(out.Result), jobrow.MS(now))
	})
}

func (s *Store) Wake(ctx context.Context) (int, error) {
	now := s.now()
	n := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET status = 'queued', next_at = ?, updated = ? WHERE status = 'waiting' RETURNING `+jobCols, jobrow.MS(now), jobrow.MS(now))
		if err != nil {
			return fmt.Errorf("jobs: wake: %w", err)
		}
		var woken []*jobs.Job
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("jobs: wake: %w", err)
			}
			woken = append(woken, j)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("jobs: wake: %w", err)
		}
		for _, j := range woken {
			if err := s.insertEvent(ctx, tx, j, "", jobrow.MS(now)); err != nil {
				return fmt.Errorf("jobs: wake %s: %w", j.ID, err)
			}
		}
		// Jobs between retries try again now too (their status is unchanged: no event).
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET next_at = ?, updated = ? WHERE status = 'queued' AND next_at > ?`, jobrow.MS(now), jobrow.MS(now), jobrow.MS(now))
		if err != nil {
			return fmt.Errorf("jobs: wake: %w", err)
		}
		retries, _ := res.RowsAffected()
		n = len(woken) + int(retries)
		return nil
	})
	return n, err
}

func (s *Store) Transition(ctx context.Context, id string, from, to jobs.Status, reason string, keepUntil time.Time) (*jobs.Job, error) {
	now := s.now()
	var j *jobs.Job
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		j, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET status = ?, last_error = ?, next_at = ?, keep_until = ?, updated = ?
			WHERE id = ? AND status = ?
			RETURNING `+jobCols, string(to), reason, jobrow.MS(now), jobrow.MS(keepUntil), jobrow.MS(now), id, string(from)))
		if errors.Is(err, sql.ErrNoRows) {
			var st string
			if err := tx.QueryRowContext(ctx, `SELECT status FROM jobs WHERE id = ?`, id).Scan(&st); errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: %s", jobs.ErrNotFound, id)
			}
			return fmt.Errorf("%w: job %s is %s, not %s", jobs.ErrConflict, id, st, from)
		}
		if err != nil {
			return fmt.Errorf("jobs: %s→%s %s: %w", from, to, id, err)
		}
		return s.insertEvent(ctx, tx, j, "", jobrow.MS(now))
	})
	return j, err
}

func (s *Store) Events(ctx context.Context, tenant string, after int64, limit int) ([]jobs.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	st, args := s.stmts[sqlEvents], []any{after, limit}
	if tenant != "" {
		st, args = s.stmts[sqlTenantEvents], []any{after, tenant, limit}
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("jobs: events: %w", err)
	}
	defer rows.Close()
	var evs []jobs.Event
	for rows.Next() {
		var e jobs.Event
		var st, result string
		var at int64
		if err := rows.Scan(&e.ID, &e.JobID, &e.Tenant, &e.Tool, &st, &e.Attempts, &e.Error, &result, &at); err != nil {
			return nil, fmt.Errorf("jobs: events: %w", err)
		}
		e.Status, e.Result, e.At = jobs.Status(st), jobrow.RawOrNil(result), jobrow.FromMS(at)
		evs = append(evs, e)
	}
	return evs, rows.Err()
}

func (s *Store) Purge(ctx context.Context) (int, error) {
	now := jobrow.MS(s.now())
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM job_events WHERE job_id IN (SELECT id FROM jobs WHERE keep_until > 0 AND keep_until <= ? AND status IN ('succeeded','failed','rejected','canceled'))`, now); err != nil {
			return fmt.Errorf("jobs: purge events: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE keep_until > 0 AND keep_until <= ? AND status IN ('succeeded','failed','rejected','canceled')`, now)
		if err != nil {
			return fmt.Errorf("jobs: purge: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}
