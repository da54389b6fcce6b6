package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coorflow/coorflow/internal/sqlitedb"
	"github.com/coorflow/coorflow/trace"
)

// Store is a trace.Store backed by a SQLite database. Create one with Open
// or New; it is safe for concurrent use. Its writes go through the
// database's writer connection, one at a time, in turns with the other
// backends on the same *sql.DB (checkpoint/sqlite, store/sqlite); reads
// use the rest of the pool.
type Store struct {
	share  *sqlitedb.Share
	db     *sql.DB
	insert *sql.Stmt // an event, on the writer connection
}

var _ trace.Store = (*Store)(nil)

// errClosed is returned by the methods of a closed Store.
var errClosed = fmt.Errorf("sqlite: %w", trace.ErrClosed)

// Option configures Open.
type Option func(*options)

type options struct {
	busyTimeout time.Duration
}

// WithBusyTimeout sets how long a statement waits for a lock another
// process holds on the file before failing with SQLITE_BUSY. The default
// is 10 seconds.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// Open opens the SQLite file at path, creating it (mode 0600, in
// directories of mode 0700) and the tables if needed. The file may be the
// one checkpoint/sqlite uses: the tables are distinct. The returned Store
// owns the database; Close closes it.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	db, err := sqlitedb.Open(path, sqlitedb.Options{BusyTimeout: o.busyTimeout})
	if errors.Is(err, sqlitedb.ErrNeedFile) {
		return nil, fmt.Errorf("%w; for a store in memory use trace/memory", err)
	}
	if err != nil {
		return nil, err
	}
	s := New(db)
	s.share.Own()
	if err := s.Migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("%w (opening %s)", err, path), s.Close())
	}
	return s, nil
}

// New returns a Store that uses db, a database opened with the "sqlite"
// driver of modernc.org/sqlite, which must allow at least two open
// connections. The Store writes through db's writer connection, which it
// shares with the checkpoint and store backends given the same db; the
// caller's data source name should set journal_mode(WAL) and busy_timeout,
// as Open does. The caller owns db: Close does not close it. The tables
// are created on first use, or by Migrate.
func New(db *sql.DB) *Store {
	s := &Store{db: db}
	s.share = sqlitedb.NewShare(db, sqlitedb.Backend{Setup: s.setUp, Teardown: s.tearDown, Closed: errClosed})
	return s
}

// SQLiteDatabase returns the Store's database, for the backends that keep
// their tables beside its (runs/accounts.Of).
func (s *Store) SQLiteDatabase() *sql.DB { return s.db }

// Migrate creates or upgrades the tables now rather than on first use. It
// is what Open does before it returns.
func (s *Store) Migrate(ctx context.Context) error {
	return s.share.Init(ctx)
}

// Close waits for a write in progress, releases the Store's part of the
// writer connection and, when the Store was returned by Open, closes the
// database. Methods called after Close return an error wrapping
// trace.ErrClosed.
func (s *Store) Close() error {
	if err := s.share.Close(); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// setUp creates or upgrades the tables and prepares the insert of an
// event on the writer connection.
func (s *Store) setUp(ctx context.Context, w *sql.Conn) error {
	if err := migrate(ctx, w); err != nil {
		return err
	}
	ins, err := w.PrepareContext(ctx, `INSERT INTO trace_events
		(run_id, seq, kind, path, node, step, attempt, time_us, duration_ns, agent, payload, error, hash, request, response)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, seq) DO NOTHING`)
	if err != nil {
		return fmt.Errorf("sqlite: prepare: %w", err)
	}
	s.insert = ins
	return nil
}

// tearDown closes the prepared insert.
func (s *Store) tearDown() error {
	if s.insert == nil {
		return nil
	}
	err := s.insert.Close()
	s.insert = nil
	return err
}

// write runs fn on the writer connection, in a transaction when tx is set.
func (s *Store) write(ctx context.Context, tx bool, fn func(ctx context.Context, w *sql.Conn) error) (err error) {
	w, err := s.share.Lock(ctx)
	if err != nil {
		return err
	}
	defer s.share.Unlock()
	if !tx {
		return fn(ctx, w)
	}
	if _, err := w.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	if err = fn(ctx, w); err == nil {
		if _, err = w.ExecContext(ctx, `COMMIT`); err != nil {
			err = fmt.Errorf("sqlite: commit: %w", err)
		}
	}
	if err != nil {
		_, _ = w.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
	}
	return err
}

func (s *Store) reader(ctx context.Context) error {
	return s.share.Init(ctx)
}

// CreateRun adds run to the index.
func (s *Store) CreateRun(ctx context.Context, run trace.RunInfo) error {
	runtimeJSON, err := encodeRuntime(run.Runtime)
	if err != nil {
		return err
	}
	return s.write(ctx, false, func(ctx context.Context, w *sql.Conn) error {
		res, err := w.ExecContext(ctx, `INSERT INTO trace_runs
			(run_id, thread_id, graph_thread, workflow, graph, owner, status, start_kind, input, runtime,
			 started_us, ended_us, final_state, error, events)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (run_id) DO NOTHING`,
			run.ID, run.Thread, run.GraphThread, run.Workflow, run.Graph, run.Owner, run.Status, run.Start,
			blob(run.Input), runtimeJSON, run.StartedAt.UnixMicro(), endedMicros(run.EndedAt), blob(run.FinalState),
			run.Error, run.Events)
		if err != nil {
			return fmt.Errorf("sqlite: create run %q: %w", run.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: create run %q: %w", run.ID, trace.ErrRunExists)
		}
		return nil
	})
}

// AppendEvents stores events in one transaction.
func (s *Store) AppendEvents(ctx context.Context, events []trace.Event) error {
	if len(events) == 0 {
		return nil
	}
	return s.write(ctx, true, func(ctx context.Context, w *sql.Conn) error {
		checked := map[string]bool{}
		for _, e := range events {
			if checked[e.RunID] {
				continue
			}
			var one int
			err := w.QueryRowContext(ctx, `SELECT 1 FROM trace_runs WHERE run_id = ?`, e.RunID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("sqlite: append events of run %q: %w", e.RunID, trace.ErrNotFound)
			}
			if err != nil {
				return fmt.Errorf("sqlite: append events of run %q: %w", e.RunID, err)
			}
			checked[e.RunID] = true
		}
		ins := s.insert // prepared on w
		for _, e := range events {
			if _, err := ins.ExecContext(ctx, e.RunID, e.Seq, e.Kind, e.Path, e.Node, e.Step, e.Attempt, e.Time.UnixMicro(),
				int64(e.Duration), e.Agent, blob(e.Payload), e.Error, e.Hash, blob(e.Request), blob(e.Response)); err != nil {
				return fmt.Errorf("sqlite: append event %d of run %q: %w", e.Seq, e.RunID, err)
			}
		}
		return nil
	})
}

// FinishRun records how a run ended.
func (s *Store) FinishRun(ctx context.Context, run trace.RunInfo) error {
	return s.write(ctx, false, func(ctx context.Context, w *sql.Conn) error {
		res, err := w.ExecContext(ctx, `UPDATE trace_runs SET status = ?, ended_us = ?, final_state = ?, error = ?, events = ?
			WHERE run_id = ?`, run.Status, endedMicros(run.EndedAt), blob(run.FinalState), run.Error, run.Events, run.ID)
		if err != nil {
			return fmt.Errorf("sqlite: finish run %q: %w", run.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: finish run %q: %w", run.ID, trace.ErrNotFound)
		}
		return nil
	})
}

// DeleteRun removes a run and its events.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	return s.write(ctx, true, func(ctx context.Context, w *sql.Conn) error {
		res, err := w.ExecContext(ctx, `DELETE FROM trace_runs WHERE run_id = ?`, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete run %q: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: delete run %q: %w", id, trace.ErrNotFound)
		}
		if _, err := w.ExecContext(ctx, `DELETE FROM trace_events WHERE run_id = ?`, id); err != nil {
			return fmt.Errorf("sqlite: delete run %q: %w", id, err)
		}
		return nil
	})
}

// pruneBatch is how many runs one transaction of Prune removes, so that
// recording waits for the writer a short time only.
const pruneBatch = 200

// Prune removes the runs p does not keep, with their events, a batch of
// runs per transaction.
func (s *Store) Prune(ctx context.Context, p trace.RetentionPolicy) (trace.PruneReport, error) {
	if err := s.reader(ctx); err != nil {
		return trace.PruneReport{}, err
	}
	query, args := `SELECT run_id, owner, started_us, ended_us FROM trace_runs`, []any{}
	if p.Owner != "" {
		query, args = query+` WHERE owner = ?`, append(args, p.Owner)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return trace.PruneReport{}, fmt.Errorf("sqlite: prune: %w", err)
	}
	defer rows.Close()
	var runs []trace.RunInfo
	for rows.Next() {
		var r trace.RunInfo
		var startedUS int64
		var endedUS sql.NullInt64
		if err := rows.Scan(&r.ID, &r.Owner, &startedUS, &endedUS); err != nil {
			return trace.PruneReport{}, fmt.Errorf("sqlite: prune: %w", err)
		}
		r.StartedAt = time.UnixMicro(startedUS).UTC()
		if endedUS.Valid {
			t := time.UnixMicro(endedUS.Int64).UTC()
			r.EndedAt = &t
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return trace.PruneReport{}, fmt.Errorf("sqlite: prune: %w", err)
	}
	rows.Close()
	rep := p.Expired(runs)
	if p.DryRun {
		return rep, nil
	}
	for ids := range slices.Chunk(rep.PrunedIDs(), pruneBatch) {
		if err := s.deleteRuns(ctx, ids); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// deleteRuns removes runs and their events in one transaction.
func (s *Store) deleteRuns(ctx context.Context, ids []string) error {
	in := `(?` + strings.Repeat(`, ?`, len(ids)-1) + `)`
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return s.write(ctx, true, func(ctx context.Context, w *sql.Conn) error {
		if _, err := w.ExecContext(ctx, `DELETE FROM trace_events WHERE run_id IN `+in, args...); err != nil {
			return fmt.Errorf("sqlite: prune: %w", err)
		}
		if _, err := w.ExecContext(ctx, `DELETE FROM trace_runs WHERE run_id IN `+in, args...); err != nil {
			return fmt.Errorf("sqlite: prune: %w", err)
		}
		return nil
	})
}

const runColumns = `run_id, thread_id, graph_thread, workflow, graph, owner, status, start_kind, input, runtime,
	started_us, ended_us, final_state, error, events`

// briefRunColumns are runColumns without the large ones (input, runtime,
// final_state), for a RunQuery's Brief.
const briefRunColumns = `run_id, thread_id, graph_thread, workflow, graph, owner, status, start_kind, NULL, NULL,
	started_us, ended_us, NULL, error, events`

// Run returns a run of the index.
func (s *Store) Run(ctx context.Context, id string) (trace.RunInfo, error) {
	if err := s.reader(ctx); err != nil {
		return trace.RunInfo{}, err
	}
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM trace_runs WHERE run_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return trace.RunInfo{}, fmt.Errorf("sqlite: run %q: %w", id, trace.ErrNotFound)
	}
	if err != nil {
		return trace.RunInfo{}, fmt.Errorf("sqlite: run %q: %w", id, err)
	}
	return r, nil
}

// Runs returns the runs q selects, the most recently started first.
func (s *Store) Runs(ctx context.Context, q trace.RunQuery) ([]trace.RunInfo, error) {
	if err := s.reader(ctx); err != nil {
		return nil, err
	}
	var where []string
	var args []any
	for _, f := range []struct{ col, v string }{
		{"owner", q.Owner}, {"thread_id", q.Thread}, {"workflow", q.Workflow}, {"status", q.Status},
	} {
		if f.v != "" {
			where = append(where, f.col+" = ?")
			args = append(args, f.v)
		}
	}
	switch {
	case !q.Before.IsZero() && q.BeforeID != "":
		// A row value: the index on (started_us, run_id) gives its range.
		where = append(where, "(started_us, run_id) < (?, ?)")
		args = append(args, q.Before.UnixMicro(), q.BeforeID)
	case !q.Before.IsZero():
		where = append(where, "started_us < ?")
		args = append(args, q.Before.UnixMicro())
	}
	columns := runColumns
	if q.Brief {
		columns = briefRunColumns
	}
	query := `SELECT ` + columns + ` FROM trace_runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY started_us DESC, run_id DESC LIMIT ?`
	args = append(args, q.EffectiveLimit())
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: runs: %w", err)
	}
	defer rows.Close()
	out := []trace.RunInfo{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: runs: %w", err)
	}
	return out, nil
}

// Events returns the events of run id that q selects.
func (s *Store) Events(ctx context.Context, id string, q trace.EventQuery) ([]trace.Event, error) {
	if err := s.reader(ctx); err != nil {
		return nil, err
	}
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM trace_runs WHERE run_id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: events of run %q: %w", id, trace.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of run %q: %w", id, err)
	}
	bodies := `NULL, NULL`
	if q.Bodies {
		bodies = `request, response`
	}
	query := `SELECT seq, kind, path, node, step, attempt, time_us, duration_ns, agent, payload, error, hash, ` + bodies +
		` FROM trace_events WHERE run_id = ? AND seq > ?`
	args := []any{id, q.After}
	if q.Until > 0 {
		query += ` AND seq <= ?`
		args = append(args, q.Until)
	}
	if len(q.Kinds) > 0 {
		query += ` AND kind IN (?` + strings.Repeat(`, ?`, len(q.Kinds)-1) + `)`
		for _, k := range q.Kinds {
			args = append(args, k)
		}
	}
	if q.Path != "" {
		// substr, not LIKE: a path may hold '%' and '_'. It counts
		// characters.
		query += ` AND (path = ? OR substr(path, 1, ?) = ?)`
		args = append(args, q.Path, utf8.RuneCountInString(q.Path)+1, q.Path+"/")
	}
	query += ` ORDER BY seq LIMIT ?`
	args = append(args, q.EffectiveLimit())
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of run %q: %w", id, err)
	}
	defer rows.Close()
	// A page ends where its bytes would pass q's (rows not stepped
	// through are not read).
	var out []trace.Event
	var used int64
	for rows.Next() {
		e := trace.Event{RunID: id}
		var timeUS, durNS int64
		var payload, request, response []byte
		if err := rows.Scan(&e.Seq, &e.Kind, &e.Path, &e.Node, &e.Step, &e.Attempt, &timeUS, &durNS, &e.Agent,
			&payload, &e.Error, &e.Hash, &request, &response); err != nil {
			return nil, fmt.Errorf("sqlite: events of run %q: %w", id, err)
		}
		e.Time, e.Duration = time.UnixMicro(timeUS).UTC(), time.Duration(durNS)
		e.Payload, e.Request, e.Response = raw(payload), raw(request), raw(response)
		size := e.Size()
		if !q.Fits(len(out), used, size) {
			break
		}
		out = append(out, e)
		used += size
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: events of run %q: %w", id, err)
	}
	return out, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (trace.RunInfo, error) {
	var r trace.RunInfo
	var input, runtimeJSON, final []byte
	var startedUS int64
	var endedUS sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Thread, &r.GraphThread, &r.Workflow, &r.Graph, &r.Owner, &r.Status, &r.Start,
		&input, &runtimeJSON, &startedUS, &endedUS, &final, &r.Error, &r.Events); err != nil {
		return r, err
	}
	r.Input, r.FinalState = raw(input), raw(final)
	r.StartedAt = time.UnixMicro(startedUS).UTC()
	if endedUS.Valid {
		t := time.UnixMicro(endedUS.Int64).UTC()
		r.EndedAt = &t
	}
	if len(runtimeJSON) > 0 {
		if err := json.Unmarshal(runtimeJSON, &r.Runtime); err != nil {
			return r, fmt.Errorf("corrupt runtime of run %q: %w", r.ID, err)
		}
	}
	return r, nil
}

func encodeRuntime(m map[string]string) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode runtime values: %w", err)
	}
	return b, nil
}

// blob passes nil as NULL and anything else as a BLOB.
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	return []byte(b)
}

// raw returns a column's bytes as JSON, nil for NULL.
func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

func endedMicros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

var _ trace.Sizer = (*Store)(nil)

// OwnerBytes is about the bytes the store keeps for the owner's runs, as
// trace.RunInfo.Size and trace.Event.Size count them.
func (s *Store) OwnerBytes(ctx context.Context, owner string) (int64, error) {
	if err := s.reader(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.QueryRowContext(ctx, ownerBytesQuery, owner, owner).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlite: bytes of owner %q: %w", owner, err)
	}
	return n, nil
}

// ownerBytesQuery sums the sizes of an owner's runs and of their events.
const ownerBytesQuery = `SELECT
	(SELECT coalesce(sum(octet_length(run_id) + octet_length(thread_id) + octet_length(graph_thread) + octet_length(workflow)
		+ octet_length(graph) + octet_length(owner) + octet_length(status) + octet_length(start_kind)
		+ coalesce(octet_length(input), 0) + coalesce(octet_length(runtime), 0) + coalesce(octet_length(final_state), 0)
		+ octet_length(error) + 32), 0) FROM trace_runs WHERE owner = ?)
	+ (SELECT coalesce(sum(octet_length(e.run_id) + octet_length(e.kind) + octet_length(e.path) + octet_length(e.node)
		+ octet_length(e.agent) + coalesce(octet_length(e.payload), 0) + octet_length(e.error) + octet_length(e.hash)
		+ coalesce(octet_length(e.request), 0) + coalesce(octet_length(e.response), 0) + 40), 0)
		FROM trace_events e JOIN trace_runs r ON r.run_id = e.run_id WHERE r.owner = ?)`
