package replicas

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/runs/eventlog"
	"github.com/coorflow/coorflow/server"
)

// Config configures New.
type Config struct {
	// Saver keeps the threads and their leases; its writes for a claimed
	// run are fenced by the run's lease. Required.
	Saver *postgres.Saver
	// Name names this replica: the holder of its leases (default
	// host:pid).
	Name string
	// LeaseTTL is how long a lease lasts unless renewed (default
	// server.DefaultLeaseTTL); give the server the same.
	LeaseTTL time.Duration
	// Schema keeps the tables in this PostgreSQL schema, as the Saver's
	// WithSchema; "" is the connection's current schema.
	Schema string
	// EventLog tunes the event log of the runs' streams: its group
	// commits and the memory they take (eventlog.Config; its Schema and
	// Channel are the replicas').
	EventLog eventlog.Config
}

// Replicas implements server.Replicas on PostgreSQL. Create it with New,
// start it with Start and stop it with Close.
type Replicas struct {
	pool  *pgxpool.Pool
	share *pgdb.Share
	saver *postgres.Saver
	name  string
	ttl   time.Duration
	logs  eventlog.Config
	// schema is Config.Schema: "" is the connection's current one.
	schema string

	initMu sync.Mutex
	q      *queries      // set once the schema is ready
	log    *eventlog.Log // the runs' streams; set with q

	// listener wakes the waiters of each notification.
	listener *pgdb.Listener
}

var _ server.Replicas = (*Replicas)(nil)

// errClosed is returned after Close.
var errClosed = errors.New("replicas: closed")

// New returns the Replicas of pool, which the caller owns. It does no I/O.
func New(pool *pgxpool.Pool, cfg Config) (*Replicas, error) {
	if cfg.Saver == nil {
		return nil, errors.New("replicas: Config.Saver is nil: the runs' threads and leases need the PostgreSQL saver")
	}
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = server.DefaultLeaseTTL
	}
	return &Replicas{
		pool: pool, saver: cfg.Saver, name: cfg.Name, ttl: cfg.LeaseTTL, logs: cfg.EventLog, schema: cfg.Schema,
		share:    pgdb.NewShare(pool, pgdb.Backend{Schema: cfg.Schema, Migrations: schemaMigrations, Closed: errClosed}),
		listener: pgdb.NewListener(pool, cfg.LeaseTTL/4),
	}, nil
}

// Name is the replica's name, the holder of its leases.
func (r *Replicas) Name() string { return r.name }

// Start creates or upgrades the tables and starts listening for the
// notifications of the other replicas, until Close.
func (r *Replicas) Start(ctx context.Context) error {
	q, err := r.ready(ctx)
	if err != nil {
		return err
	}
	if err := r.listener.Start(ctx, q.channel); err != nil {
		return fmt.Errorf("replicas: %w", err)
	}
	return nil
}

// Close stores the events published and stops listening. It does not
// close the pool.
func (r *Replicas) Close() error {
	r.listener.Close()
	r.initMu.Lock()
	log := r.log
	r.initMu.Unlock()
	var err error
	if log != nil {
		err = log.Close()
	}
	r.share.Close()
	return err
}

// Changed implements server.Replicas.
func (r *Replicas) Changed(key string) <-chan struct{} { return r.listener.Changed(key) }

// queries are the statements, with their tables qualified.
type queries struct {
	channel                                          string
	usage, insert, candidates, claim, cancel, finish string
	run, runs, cancelled, offer                      string
	remove, prune, activity, nextDue, notify         string
	closing, closeThread, keepClosed, reopen         string
	noticeDue, claimNotice, noticeSent               string
}

// runColumns are what scanRun reads, in order; a run's last event is its
// stream's in the event log.
const runColumns = `r.run_id, r.thread_id, r.thread_key, r.owner, r.workflow, r.request, r.status, r.started, r.base,
	r.checkpoint, r.error, r.created, r.started_at, r.ended_at, r.holder, r.takeovers, r.usage, r.budget, r.final,
	coalesce((SELECT s.last FROM {streams} s WHERE s.stream = r.run_id), 0)`

// channelOf is the replicas' notification channel in schema (quoted).
func channelOf(schema string) string { return "coorflow_runs:" + strings.Trim(schema, `"`) }

func newQueries(schema, leases, heads, streams, frames string) *queries {
	rep := strings.NewReplacer("{schema}", schema, "{leases}", leases, "{heads}", heads, "{streams}", streams, "{frames}", frames,
		"{columns}", strings.NewReplacer("{schema}", schema, "{streams}", streams).Replace(runColumns))
	open := `status IN ('queued', 'running')`
	closed := `EXISTS (SELECT 1 FROM {schema}.server_closed_threads c WHERE c.thread_key = $1 AND c.expires > clock_timestamp())`
	return &queries{
		// One channel per schema: replicas of other schemas share nothing.
		channel: channelOf(schema),
		// The owner's threads with open runs, its open runs, the oldest
		// open run of the thread $2 ("" when it has none), whether the
		// thread is being deleted, and whether it has its record (a
		// checkpoint in namespace $3).
		usage: rep.Replace(`SELECT count(DISTINCT thread_key), count(*),
				coalesce((SELECT run_id FROM {schema}.server_runs WHERE thread_key = $2 AND ` + open + ` ORDER BY seq LIMIT 1), ''),
				` + strings.ReplaceAll(closed, "$1", "$2") + `,
				EXISTS (SELECT 1 FROM {heads} h WHERE h.thread_id = $2 AND h.ns = $3)
			FROM {schema}.server_runs WHERE owner = $1 AND ` + open),
		// The oldest open run of the thread $1 ("" when it has none), and
		// whether it is being deleted.
		closing: rep.Replace(`SELECT coalesce((SELECT run_id FROM {schema}.server_runs WHERE thread_key = $1 AND ` + open + ` ORDER BY seq LIMIT 1), ''),
				` + closed),
		// The mark that closes thread $1 to new runs, in place of one
		// that expired.
		closeThread: rep.Replace(`INSERT INTO {schema}.server_closed_threads AS c (thread_key, holder, token, expires)
				VALUES ($1, $2, $3, clock_timestamp() + $4 * interval '1 microsecond')
			ON CONFLICT (thread_key) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires = excluded.expires`),
		// A mark is renewed only before it expires: once expired, a run
		// may have been admitted.
		keepClosed: rep.Replace(`UPDATE {schema}.server_closed_threads SET expires = clock_timestamp() + $3 * interval '1 microsecond'
			WHERE thread_key = $1 AND token = $2 AND expires > clock_timestamp()`),
		reopen: rep.Replace(`DELETE FROM {schema}.server_closed_threads WHERE thread_key = $1 AND token = $2`),
		// The replica that enqueues a run is its holder until it claims
		// it: the others leave it alone for a lease's time.
		insert: rep.Replace(`INSERT INTO {schema}.server_runs (run_id, thread_key, thread_id, owner, workflow, request, status, created, holder, notice)
			VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8, CASE WHEN $9 THEN 'due' ELSE '' END)`),
		// The oldest open run of each thread, unless a live lease holds
		// the thread or another replica enqueued it a moment ago.
		candidates: rep.Replace(`SELECT r.run_id, r.thread_key FROM {schema}.server_runs r
			LEFT JOIN {leases} l ON l.thread_id = r.thread_key
			WHERE r.` + open + ` AND ($1 = '' OR r.run_id = $1)
				AND NOT EXISTS (SELECT 1 FROM {schema}.server_runs o WHERE o.thread_key = r.thread_key AND o.` + open + ` AND o.seq < r.seq)
				AND (l.expires IS NULL OR l.expires < clock_timestamp())
				AND ($1 <> '' OR r.status = 'running' OR r.holder IN ('', $2) OR r.created < clock_timestamp() - $3 * interval '1 microsecond')
				AND r.workflow = ANY($4::text[])
			ORDER BY r.seq LIMIT 16`),
		claim: rep.Replace(`WITH old AS (
				SELECT run_id, status, started FROM {schema}.server_runs WHERE run_id = $1 AND ` + open + ` FOR UPDATE
			), up AS (
				UPDATE {schema}.server_runs r SET
					takeovers  = r.takeovers + CASE WHEN old.status = 'running' THEN 1 ELSE 0 END,
					status     = 'running', holder = $2, token = $3, started = true,
					base       = CASE WHEN old.started THEN r.base ELSE $4 END,
					started_at = coalesce(r.started_at, clock_timestamp())
				FROM old WHERE r.run_id = old.run_id
				RETURNING r.*
			)
			SELECT {columns}, old.status = 'running', old.started FROM up r JOIN old ON old.run_id = r.run_id`),
		cancel: rep.Replace(`UPDATE {schema}.server_runs SET cancel = true,
				ended_at = CASE WHEN status = 'queued' THEN clock_timestamp() ELSE ended_at END,
				error    = CASE WHEN status = 'queued' THEN $2::jsonb ELSE error END,
				status   = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END
			WHERE run_id = $1 AND ` + open + ` RETURNING status`),
		// The lease goes with the run's end, in one transaction: a
		// client told that the run ended finds its thread free.
		finish: rep.Replace(`WITH up AS (
				UPDATE {schema}.server_runs SET status = $3, checkpoint = $4, error = $5, ended_at = clock_timestamp(),
					usage = $7, budget = $8, final = $9
				WHERE run_id = $1 AND token = $2 RETURNING run_id, thread_key
			), released AS (
				UPDATE {leases} l SET expires = '-infinity' FROM up WHERE l.thread_id = up.thread_key AND l.token = $2
			)
			SELECT count(*) FROM up, LATERAL (SELECT pg_notify($6, run_id), pg_notify($6, '')) x`),
		// A transaction that notifies holds a lock of the whole database
		// from before its commit to after: notifying commits run one at a
		// time, each with its WAL flush, a queue under load. This one
		// stores nothing and needs no flush (a PostgreSQL crash makes
		// the listeners reconnect and look again anyway).
		notify: `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, p) FROM unnest($2::text[]) WITH ORDINALITY AS x(p, n) ORDER BY n`,
		// An ended run goes, with its stream; "" says the run is open.
		remove: rep.Replace(`WITH old AS (SELECT run_id, status FROM {schema}.server_runs WHERE run_id = $1),
				del AS (DELETE FROM {schema}.server_runs r USING old WHERE r.run_id = old.run_id AND NOT old.` + open + ` RETURNING r.run_id),
				f AS (DELETE FROM {frames} f USING del WHERE f.stream = del.run_id),
				s AS (DELETE FROM {streams} s USING del WHERE s.stream = del.run_id)
			SELECT old.status, (SELECT count(*) FROM del) FROM old`),
		// The ended runs beyond the newest $1 go, with their streams, at
		// most $2 of them: a DELETE that replicas may race on. The marks
		// that expired (their replicas died) go too.
		prune: rep.Replace(`WITH del AS (DELETE FROM {schema}.server_runs WHERE run_id IN (
					SELECT run_id FROM {schema}.server_runs WHERE status NOT IN ('queued', 'running') ORDER BY seq DESC OFFSET $1 LIMIT $2)
				RETURNING run_id),
				m AS (DELETE FROM {schema}.server_closed_threads WHERE expires < clock_timestamp()),
				f AS (DELETE FROM {frames} f USING del WHERE f.stream = del.run_id),
				s AS (DELETE FROM {streams} s USING del WHERE s.stream = del.run_id)
			SELECT count(*) FROM del`),
		// The earliest moment a run may become due unannounced: a lease
		// of another replica's running run expires, or another replica's
		// hold on a run it enqueued ends ($2 µs after it did).
		nextDue: rep.Replace(`SELECT extract(epoch FROM min(t) - clock_timestamp())::float8 FROM (
				SELECT l.expires AS t FROM {schema}.server_runs r JOIN {leases} l ON l.thread_id = r.thread_key
				WHERE r.status = 'running' AND l.holder <> $1 AND r.workflow = ANY($3::text[])
				UNION ALL
				SELECT r.created + $2 * interval '1 microsecond' FROM {schema}.server_runs r
				WHERE r.status = 'queued' AND r.holder NOT IN ('', $1) AND r.workflow = ANY($3::text[])
			) x WHERE t > clock_timestamp()`),
		// A run's notice becomes due; the statement says whether the
		// run had ended (its replica's claim of the notice, after its
		// Finish, found none due).
		noticeDue: rep.Replace(`UPDATE {schema}.server_runs SET notice = 'due'
			WHERE run_id = $1 AND notice = '' RETURNING status NOT IN ('queued', 'running')`),
		// The due notice of ended run $1 ('': of any run of the
		// workflows $3 whose notice no live claim holds, and that its
		// own replica had $2 µs to claim after its end), claimed for $2
		// µs: one statement, so that two replicas never both hold it.
		claimNotice: rep.Replace(`WITH n AS (
				SELECT run_id FROM {schema}.server_runs
				WHERE notice = 'due' AND NOT ` + open + ` AND ($1 = '' OR run_id = $1)
					AND (notice_until < clock_timestamp()
						OR notice_until IS NULL AND ($1 <> '' OR ended_at < clock_timestamp() - $2 * interval '1 microsecond'))
					AND ($1 <> '' OR workflow = ANY($3::text[]))
				ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED
			), up AS (
				UPDATE {schema}.server_runs r SET notice_until = clock_timestamp() + $2 * interval '1 microsecond'
				FROM n WHERE r.run_id = n.run_id RETURNING r.*
			)
			SELECT {columns} FROM up r`),
		noticeSent: rep.Replace(`UPDATE {schema}.server_runs SET notice = 'sent' WHERE run_id = $1 AND notice = 'due'`),
		offer:      rep.Replace(`UPDATE {schema}.server_runs SET holder = '' WHERE run_id = $1 AND status = 'queued'`),
		run:        rep.Replace(`SELECT {columns} FROM {schema}.server_runs r WHERE r.run_id = $1`),
		runs:       rep.Replace(`SELECT {columns} FROM {schema}.server_runs r WHERE r.thread_key = $1 ORDER BY r.seq`),
		activity: rep.Replace(`SELECT {columns} FROM {schema}.server_runs r WHERE r.thread_key = $1
				AND (r.` + open + ` OR r.seq = (SELECT max(seq) FROM {schema}.server_runs WHERE thread_key = $1)) ORDER BY r.seq`),
		// A renewal shares what the run spent so far ($3; null: nothing
		// new) and reads whether it was asked to cancel, while the lease
		// is the claim's ($2).
		cancelled: rep.Replace(`UPDATE {schema}.server_runs SET usage = coalesce($3::jsonb, usage)
			WHERE run_id = $1 AND token = $2 RETURNING cancel`),
	}
}

// ready creates or upgrades the tables once and returns the queries.
func (r *Replicas) ready(ctx context.Context) (*queries, error) {
	r.initMu.Lock()
	defer r.initMu.Unlock()
	if r.q != nil {
		return r.q, nil
	}
	leases, err := r.saver.LeasesTable(ctx)
	if err != nil {
		return nil, err
	}
	heads, err := r.saver.HeadsTable(ctx)
	if err != nil {
		return nil, err
	}
	// The runs' streams, in the same schema, notified on the replicas'
	// channel: a stream's reader waits on its run's id. The log's tables
	// are made first: the replicas' migration 4 moves into them what an
	// older version stored in server_run_events.
	name := r.schema
	if name == "" {
		if err := r.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&name); err != nil {
			return nil, fmt.Errorf("current schema: %w", err)
		}
	}
	logs := r.logs
	logs.Schema, logs.Channel = name, channelOf(pgx.Identifier{name}.Sanitize())
	log := eventlog.New(r.pool, logs)
	if err := log.Start(ctx); err != nil {
		return nil, err
	}
	schema, err := r.share.Init(ctx)
	if err != nil {
		_ = log.Close()
		return nil, err
	}
	streams, frames := log.Tables()
	r.q, r.log = newQueries(schema, leases, heads, streams, frames), log
	return r.q, nil
}

// notify sends the payloads on the replicas' channel, in order, in one
// transaction that stores nothing and so waits for no WAL flush (see
// queries.notify).
func (r *Replicas) notify(ctx context.Context, q *queries, payloads ...string) error {
	_, err := r.pool.Exec(ctx, q.notify, q.channel, payloads)
	return err
}

// Enqueue implements server.Replicas: it is the ledger of the replicas'
// runs. The runs of one owner are admitted one at a time, each in one
// transaction under an advisory lock on the owner: the owner's open runs
// are counted, the thread's oldest open run found, runs.Request.Decide
// applied and the run stored before the lock is released. The count is of
// the run rows themselves, whichever replica holds them, so there is no
// counter to drift: a run leaves it when its row ends (Finish, Cancel),
// a run taken over from a replica that died counts once, as it did, and
// pruning deletes only ended rows. An open run whose replica died counts
// until a replica serving its workflow takes it over and ends it. In the
// same transaction, a run on a thread being deleted (CloseThread takes
// its mark under the same lock) or whose record is gone is refused.
func (r *Replicas) Enqueue(ctx context.Context, run server.SharedRun, busy runs.Busy, limits runs.Limits) error {
	q, err := r.ready(ctx)
	if err != nil {
		return fmt.Errorf("replicas: enqueue run %q: %w", run.ID, err)
	}
	req := runs.Request{Owner: run.Owner, Thread: run.Key, Run: run.ID, Busy: busy, Limits: limits}
	var refused error
	// Read committed: each statement sees what the owner's former lock
	// holders committed, the lock taken by the statement before.
	err = pgx.BeginTxFunc(ctx, r.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if err := lockOwner(ctx, tx, q, run.Owner); err != nil {
			return err
		}
		var threads, open int
		var holder string
		var closed, recorded bool
		if err := tx.QueryRow(ctx, q.usage, run.Owner, run.Key, server.ThreadRecordNS).Scan(&threads, &open, &holder, &closed, &recorded); err != nil {
			return err
		}
		switch {
		case closed:
			refused = fmt.Errorf("replicas: thread %q: %w", run.Key, runs.ErrThreadClosed)
			return nil
		case !recorded:
			refused = fmt.Errorf("replicas: thread %q has no record (it was deleted): %w", run.Key, graph.ErrNotFound)
			return nil
		}
		// Each thread with open runs has one active, its oldest; the
		// others are queued behind it.
		if _, refused = req.Decide(runs.Usage{Active: threads, Queued: open - threads}, holder); refused != nil {
			return nil
		}
		// No notification: the replica that enqueues a run claims it
		// itself when it has room; the others find it due when a run
		// ends, or at their next look.
		_, err := tx.Exec(ctx, q.insert, run.ID, run.Key, run.Thread, run.Owner, run.Workflow, []byte(run.Request), run.CreatedAt, r.name, run.Notice)
		return err
	})
	if err != nil {
		return fmt.Errorf("replicas: enqueue run %q: %w", run.ID, err)
	}
	return refused
}

// lockOwner takes the lock of the owner's admissions for the rest of tx:
// its runs are admitted, and its threads closed, one at a time.
func lockOwner(ctx context.Context, tx pgx.Tx, q *queries, owner string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, q.channel+"/owner:"+owner)
	return err
}

// CloseThread implements server.Replicas: the mark is a row of
// server_closed_threads, taken in a transaction under the owner's lock
// of Enqueue once the thread's open runs and marks are read, renewed
// every third of the lease's time while deleting runs, and removed when
// it returns. A replica that dies leaves its mark to expire, a lease's
// time after its last renewal; Prune removes the marks that expired.
func (r *Replicas) CloseThread(ctx context.Context, owner, key string, deleting func(context.Context) error) error {
	q, err := r.ready(ctx)
	if err != nil {
		return fmt.Errorf("replicas: close thread %q: %w", key, err)
	}
	token := rand.Text()
	var refused error
	err = pgx.BeginTxFunc(ctx, r.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if err := lockOwner(ctx, tx, q, owner); err != nil {
			return err
		}
		var oldest string
		var closed bool
		if err := tx.QueryRow(ctx, q.closing, key).Scan(&oldest, &closed); err != nil {
			return err
		}
		switch {
		case closed:
			refused = fmt.Errorf("replicas: thread %q: %w", key, runs.ErrThreadClosed)
			return nil
		case oldest != "":
			refused = &runs.BusyError{Thread: key, Run: oldest}
			return nil
		}
		_, err := tx.Exec(ctx, q.closeThread, key, r.name, token, r.ttl.Microseconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("replicas: close thread %q: %w", key, err)
	}
	if refused != nil {
		return refused
	}
	ctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { r.keepClosed(ctx, q, key, token, done, lost) })
	err = deleting(ctx)
	close(done)
	wg.Wait()
	if _, rerr := r.pool.Exec(context.WithoutCancel(ctx), q.reopen, key, token); rerr != nil {
		err = errors.Join(err, fmt.Errorf("replicas: reopen thread %q (its mark expires): %w", key, rerr))
	}
	return err
}

// errMarkExpired is the cause of a deletion's ctx when its thread's mark
// expired before the deletion ended (its replica stalled longer than a
// lease's time): runs may be admitted on the thread from then on.
var errMarkExpired = errors.New("replicas: the mark that closed the thread expired before its deletion ended")

// keepClosed renews the mark token of thread key every third of the
// lease's time until done is closed; a mark that expired meanwhile is
// lost, and cancels the deletion's ctx.
func (r *Replicas) keepClosed(ctx context.Context, q *queries, key, token string, done <-chan struct{}, lost context.CancelCauseFunc) {
	tick := time.NewTicker(max(r.ttl/3, time.Microsecond))
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		tag, err := r.pool.Exec(ctx, q.keepClosed, key, token, r.ttl.Microseconds())
		if err == nil && tag.RowsAffected() == 0 {
			lost(fmt.Errorf("replicas: thread %q: %w", key, errMarkExpired))
			return
		}
		// An error (ctx's, or the database's) is tried again at the next
		// tick: a mark not renewed in time expires, and says so then.
	}
}

// Offer implements server.Replicas.
func (r *Replicas) Offer(ctx context.Context, id string) error {
	q, err := r.ready(ctx)
	if err == nil {
		_, err = r.pool.Exec(ctx, q.offer, id)
	}
	if err == nil {
		err = r.notify(ctx, q, "")
	}
	if err != nil {
		return fmt.Errorf("replicas: offer run %q: %w", id, err)
	}
	return nil
}

// Claim implements server.Replicas.
func (r *Replicas) Claim(ctx context.Context, id string, workflows []string) (*server.Claim, error) {
	q, err := r.ready(ctx)
	if err != nil {
		return nil, fmt.Errorf("replicas: claim: %w", err)
	}
	rows, err := r.pool.Query(ctx, q.candidates, id, r.name, r.ttl.Microseconds(), workflows)
	if err != nil {
		return nil, fmt.Errorf("replicas: claim: %w", err)
	}
	type candidate struct{ id, key string }
	cands, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (candidate, error) {
		var c candidate
		return c, row.Scan(&c.id, &c.key)
	})
	if err != nil {
		return nil, fmt.Errorf("replicas: claim: %w", err)
	}
	for _, c := range cands {
		claim, err := r.claim(ctx, q, c.id, c.key)
		if err != nil {
			return nil, fmt.Errorf("replicas: claim run %q: %w", c.id, err)
		}
		if claim != nil {
			return claim, nil
		}
	}
	return nil, nil
}

// claim leases the thread key and takes run id, or returns nil when
// another replica was first.
func (r *Replicas) claim(ctx context.Context, q *queries, id, key string) (*server.Claim, error) {
	lease, err := r.saver.Acquire(ctx, key, r.name, r.ttl)
	if errors.Is(err, postgres.ErrLeaseHeld) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	base := ""
	head, err := r.saver.GetCheckpoint(ctx, graph.CheckpointRef{Thread: key})
	switch {
	case err == nil:
		base = head.ID
	case !errors.Is(err, graph.ErrNotFound):
		return nil, errors.Join(err, r.saver.Release(context.WithoutCancel(ctx), lease))
	}
	var c server.Claim
	var started bool
	row := r.pool.QueryRow(ctx, q.claim, id, r.name, lease.Token, base)
	err = scanRun(row, &c.Run, &c.Takeover, &started)
	if errors.Is(err, pgx.ErrNoRows) {
		// It ended meanwhile.
		return nil, r.saver.Release(ctx, lease)
	}
	if err != nil {
		return nil, errors.Join(err, r.saver.Release(context.WithoutCancel(ctx), lease))
	}
	// The stream is this replica's from now on, fenced by the lease's
	// token: an event the former holder was storing meanwhile (under the
	// stream's row lock) is in, and it can store no more. Its events are
	// numbered after the last.
	if c.Run.Events, err = r.log.Open(ctx, id, lease.Token); err != nil {
		return nil, errors.Join(err, r.saver.Release(context.WithoutCancel(ctx), lease))
	}
	c.Run.Started = started
	c.Token = lease.Token
	c.Saver = &flushingSaver{Saver: r.saver.Fenced(lease), flush: func() error { return r.flush(&c) }}
	return &c, nil
}

// lease is the claim's lease.
func (r *Replicas) lease(c *server.Claim) postgres.Lease {
	return postgres.Lease{Thread: c.Run.Key, Holder: r.name, Token: c.Token}
}

// Renew implements server.Replicas.
func (r *Replicas) Renew(ctx context.Context, c *server.Claim) (bool, error) {
	q, err := r.ready(ctx)
	if err != nil {
		return false, fmt.Errorf("replicas: renew: %w", err)
	}
	if _, err := r.saver.Renew(ctx, r.lease(c), r.ttl); err != nil {
		return false, fmt.Errorf("replicas: run %q: %w", c.Run.ID, err)
	}
	var usage []byte
	if c.Spent != nil {
		if usage, err = json.Marshal(c.Spent()); err != nil {
			return false, fmt.Errorf("replicas: run %q: %w", c.Run.ID, err)
		}
	}
	var cancel bool
	err = r.pool.QueryRow(ctx, q.cancelled, c.Run.ID, c.Token, usage).Scan(&cancel)
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("another replica holds it: %w", graph.ErrCheckpointConflict)
	}
	if err != nil {
		return false, fmt.Errorf("replicas: run %q: %w", c.Run.ID, err)
	}
	return cancel, nil
}

// Publish implements server.Replicas: the event is queued for the event
// log's next group commit, which stores the events of every run this
// replica executes in one statement (eventlog). It returns the error of
// an earlier commit of the run's events: once the lease was taken over,
// a *graph.CheckpointConflictError. The run's events are all stored
// before its checkpoints and task records (the claim's Saver flushes
// them first), before Finish and before Release.
func (r *Replicas) Publish(ctx context.Context, c *server.Claim, ev server.SharedEvent) error {
	if _, err := r.ready(ctx); err != nil {
		return fmt.Errorf("replicas: publish: %w", err)
	}
	err := r.log.Append(c.Run.ID, c.Token, eventlog.Frame{ID: ev.ID, Name: ev.Name, Data: ev.Frame})
	return r.streamErr(c, "publish event "+strconv.FormatInt(ev.ID, 10)+" of", err)
}

// flush waits until the claimed run's events published so far are
// stored.
func (r *Replicas) flush(c *server.Claim) error {
	return r.streamErr(c, "store the events of", r.log.Flush(c.Run.ID))
}

// streamErr words an error of the event log about claim c's run; one
// that says the stream was fenced is a *graph.CheckpointConflictError.
func (r *Replicas) streamErr(c *server.Claim, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, eventlog.ErrFenced):
		return fmt.Errorf("replicas: %s run %q: %w", what, c.Run.ID, r.takenOver(c))
	}
	return fmt.Errorf("replicas: %s run %q: %w", what, c.Run.ID, err)
}

// flushingSaver is a claim's fenced Saver that stores the run's events
// published so far before each write: a replica that takes the run over
// from a checkpoint or a task record finds the events that came before
// it, so a stream loses none of them.
type flushingSaver struct {
	graph.Saver
	flush func() error
}

func (f *flushingSaver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if err := f.flush(); errors.Is(err, graph.ErrCheckpointConflict) {
		return err
	}
	return f.Saver.PutCheckpoint(ctx, cp, blobs)
}

func (f *flushingSaver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	if err := f.flush(); errors.Is(err, graph.ErrCheckpointConflict) {
		return err
	}
	return f.Saver.PutTaskRecords(ctx, ref, recs)
}

// BlobsAt passes graph.BlobReader through.
func (f *flushingSaver) BlobsAt(ctx context.Context, thread, ns string, versions map[string]string) ([]graph.Blob, error) {
	return graph.ReadBlobsAt(ctx, f.Saver, thread, ns, versions)
}

// takenOver is the error of a write under a claim whose lease another
// replica took over.
func (r *Replicas) takenOver(c *server.Claim) error {
	return &graph.CheckpointConflictError{Thread: c.Run.Key, Token: c.Token, LeaseToken: c.Token + 1}
}

// Finish implements server.Replicas.
func (r *Replicas) Finish(ctx context.Context, c *server.Claim, run server.SharedRun) error {
	q, err := r.ready(ctx)
	if err != nil {
		return fmt.Errorf("replicas: finish: %w", err)
	}
	var detail []byte
	if run.Error != nil {
		if detail, err = json.Marshal(run.Error); err != nil {
			return fmt.Errorf("replicas: finish run %q: %w", run.ID, err)
		}
	}
	// The run's events before its end: a client told that the run
	// ended has seen them all.
	stored := r.flush(c)
	if errors.Is(stored, graph.ErrCheckpointConflict) {
		return stored
	}
	defer r.log.Forget(c.Run.ID)
	usage, err := json.Marshal(run.Usage)
	if err != nil {
		return fmt.Errorf("replicas: finish run %q: %w", run.ID, err)
	}
	var budget []byte
	if run.Budget != nil {
		if budget, err = json.Marshal(run.Budget); err != nil {
			return fmt.Errorf("replicas: finish run %q: %w", run.ID, err)
		}
	}
	var final []byte // null
	if len(run.Final) > 0 {
		final = run.Final
	}
	var n int
	if err := r.pool.QueryRow(ctx, q.finish, run.ID, c.Token, run.Status, run.Checkpoint, detail, q.channel, usage, budget, final).Scan(&n); err != nil {
		return fmt.Errorf("replicas: finish run %q: %w", run.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("replicas: finish run %q: %w", run.ID, r.takenOver(c))
	}
	// The next run of the thread is due: the statement said so ("").
	return stored
}

// Release implements server.Replicas.
func (r *Replicas) Release(ctx context.Context, c *server.Claim) error {
	q, err := r.ready(ctx)
	if err != nil {
		return fmt.Errorf("replicas: release: %w", err)
	}
	// The events before the run changes hands.
	stored := r.flush(c)
	r.log.Forget(c.Run.ID)
	if err := r.saver.Release(ctx, r.lease(c)); err != nil {
		return fmt.Errorf("replicas: release run %q: %w", c.Run.ID, err)
	}
	return errors.Join(stored, r.notify(ctx, q, ""))
}

// NextDue implements server.Replicas.
func (r *Replicas) NextDue(ctx context.Context, workflows []string) (time.Duration, bool, error) {
	q, err := r.ready(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("replicas: next due: %w", err)
	}
	var secs *float64
	if err := r.pool.QueryRow(ctx, q.nextDue, r.name, r.ttl.Microseconds(), workflows).Scan(&secs); err != nil {
		return 0, false, fmt.Errorf("replicas: next due: %w", err)
	}
	if secs == nil {
		return 0, false, nil
	}
	return time.Duration(*secs * float64(time.Second)), true, nil
}

// NoticeDue implements server.Replicas.
func (r *Replicas) NoticeDue(ctx context.Context, id string) (bool, error) {
	q, err := r.ready(ctx)
	if err != nil {
		return false, fmt.Errorf("replicas: notice of run %q: %w", id, err)
	}
	var ended bool
	err = r.pool.QueryRow(ctx, q.noticeDue, id).Scan(&ended)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // gone, or due already
	}
	if err != nil {
		return false, fmt.Errorf("replicas: notice of run %q: %w", id, err)
	}
	return ended, nil
}

// ClaimNotice implements server.Replicas.
func (r *Replicas) ClaimNotice(ctx context.Context, id string, workflows []string) (server.SharedRun, bool, error) {
	var sr server.SharedRun
	q, err := r.ready(ctx)
	if err == nil {
		err = scanRun(r.pool.QueryRow(ctx, q.claimNotice, id, r.ttl.Microseconds(), workflows), &sr)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return sr, false, nil
	}
	if err != nil {
		return sr, false, fmt.Errorf("replicas: claim the notice of run %q: %w", id, err)
	}
	return sr, true, nil
}

// NoticeSent implements server.Replicas.
func (r *Replicas) NoticeSent(ctx context.Context, id string) error {
	q, err := r.ready(ctx)
	if err == nil {
		_, err = r.pool.Exec(ctx, q.noticeSent, id)
	}
	if err != nil {
		return fmt.Errorf("replicas: the notice of run %q was sent: %w", id, err)
	}
	return nil
}

// Run implements server.Replicas.
func (r *Replicas) Run(ctx context.Context, id string) (server.SharedRun, error) {
	var sr server.SharedRun
	q, err := r.ready(ctx)
	if err == nil {
		err = scanRun(r.pool.QueryRow(ctx, q.run, id), &sr)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		err = graph.ErrNotFound
	}
	if err != nil {
		return sr, fmt.Errorf("replicas: run %q: %w", id, err)
	}
	return sr, nil
}

// Runs implements server.Replicas.
func (r *Replicas) Runs(ctx context.Context, threadKey string) ([]server.SharedRun, error) {
	q, err := r.ready(ctx)
	if err != nil {
		return nil, fmt.Errorf("replicas: runs: %w", err)
	}
	return r.queryRuns(ctx, "runs", q.runs, threadKey)
}

// Activity implements server.Replicas.
func (r *Replicas) Activity(ctx context.Context, threadKey string) ([]server.SharedRun, error) {
	q, err := r.ready(ctx)
	if err != nil {
		return nil, fmt.Errorf("replicas: activity: %w", err)
	}
	return r.queryRuns(ctx, "activity", q.activity, threadKey)
}

// queryRuns returns the runs that query (of runColumns) finds for the
// thread key; what names it in errors.
func (r *Replicas) queryRuns(ctx context.Context, what, query, threadKey string) ([]server.SharedRun, error) {
	rows, err := r.pool.Query(ctx, query, threadKey)
	if err != nil {
		return nil, fmt.Errorf("replicas: %s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (server.SharedRun, error) {
		var sr server.SharedRun
		return sr, scanRun(row, &sr)
	})
	if err != nil {
		return nil, fmt.Errorf("replicas: %s: %w", what, err)
	}
	return out, nil
}

// maxEventsBytes bounds the events one call of Events returns (but the
// first): what a stream's reader holds at once.
const maxEventsBytes = 1 << 20

// Events implements server.Replicas.
func (r *Replicas) Events(ctx context.Context, run string, after int64, limit int) ([]server.SharedEvent, error) {
	if _, err := r.ready(ctx); err != nil {
		return nil, fmt.Errorf("replicas: events: %w", err)
	}
	frames, err := r.log.Read(ctx, run, after, limit, maxEventsBytes)
	if err != nil {
		return nil, fmt.Errorf("replicas: events of run %q: %w", run, err)
	}
	out := make([]server.SharedEvent, len(frames))
	for i, f := range frames {
		out[i] = server.SharedEvent{ID: f.ID, Name: f.Name, Frame: f.Data}
	}
	return out, nil
}

// Delete implements server.Replicas.
func (r *Replicas) Delete(ctx context.Context, id string) (bool, error) {
	q, err := r.ready(ctx)
	if err != nil {
		return false, fmt.Errorf("replicas: delete: %w", err)
	}
	var status string
	var deleted int
	err = r.pool.QueryRow(ctx, q.remove, id).Scan(&status, &deleted)
	if errors.Is(err, pgx.ErrNoRows) {
		err = graph.ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("replicas: delete run %q: %w", id, err)
	}
	return deleted == 1, nil
}

// Prune implements server.Replicas.
func (r *Replicas) Prune(ctx context.Context, keep, limit int) (int, error) {
	q, err := r.ready(ctx)
	if err != nil {
		return 0, fmt.Errorf("replicas: prune: %w", err)
	}
	var n int
	if err := r.pool.QueryRow(ctx, q.prune, keep, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("replicas: prune: %w", err)
	}
	return n, nil
}

// cancelledQueued is the error of a run cancelled before it started, as
// the server words it.
var cancelledQueued = server.ErrorDetail{Code: server.StatusCancelled, Message: "run cancelled: cancelled by request"}

// Cancel implements server.Replicas.
func (r *Replicas) Cancel(ctx context.Context, id string) (bool, error) {
	q, err := r.ready(ctx)
	if err != nil {
		return false, fmt.Errorf("replicas: cancel: %w", err)
	}
	detail, _ := json.Marshal(cancelledQueued)
	var status string
	err = r.pool.QueryRow(ctx, q.cancel, id, detail).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err == nil {
		err = r.notify(ctx, q, id, "cancel:"+id, "")
	}
	if err != nil {
		return false, fmt.Errorf("replicas: cancel run %q: %w", id, err)
	}
	return true, nil
}

// scanRun reads the runColumns of row into sr, and then extra.
func scanRun(row pgx.Row, sr *server.SharedRun, extra ...any) error {
	var request, detail, usage, budget, final []byte
	var startedAt, endedAt *time.Time
	dest := append([]any{&sr.ID, &sr.Thread, &sr.Key, &sr.Owner, &sr.Workflow, &request, &sr.Status, &sr.Started, &sr.Base,
		&sr.Checkpoint, &detail, &sr.CreatedAt, &startedAt, &endedAt, &sr.Replica, &sr.Takeovers, &usage, &budget, &final, &sr.Events}, extra...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	sr.Request = request
	if len(final) > 0 {
		sr.Final = final
	}
	sr.CreatedAt = sr.CreatedAt.UTC()
	if startedAt != nil {
		sr.StartedAt = startedAt.UTC()
	}
	if endedAt != nil {
		sr.EndedAt = endedAt.UTC()
	}
	if len(usage) > 0 {
		if err := json.Unmarshal(usage, &sr.Usage); err != nil {
			return fmt.Errorf("the run's usage: %w", err)
		}
	}
	if len(budget) > 0 {
		if err := json.Unmarshal(budget, &sr.Budget); err != nil {
			return fmt.Errorf("the run's budget: %w", err)
		}
	}
	if len(detail) > 0 {
		sr.Error = &server.ErrorDetail{}
		if err := json.Unmarshal(detail, sr.Error); err != nil {
			return fmt.Errorf("the run's error: %w", err)
		}
	}
	return nil
}
