package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/runs/eventlog"
	"github.com/coorflow/coorflow/trace"
)

// Store is a trace.Store backed by PostgreSQL. Create one with Open or
// New; it is safe for concurrent use.
type Store struct {
	share  *pgdb.Share
	pool   *pgxpool.Pool
	schema string        // as WithSchema named it; "": the current one
	log    *eventlog.Log // the runs' events, in the same schema
}

var _ trace.Store = (*Store)(nil)

// errClosed is returned by the methods of a closed Store.
var errClosed = fmt.Errorf("postgres: %w", trace.ErrClosed)

// Option configures Open and New.
type Option func(*options)

type options struct {
	schema string
}

// WithSchema keeps the tables in the PostgreSQL schema name, created if it
// does not exist, instead of the connection's current schema.
func WithSchema(name string) Option {
	return func(o *options) { o.schema = name }
}

// Open connects to the database at connString (a URL or key=value string,
// as pgxpool.ParseConfig reads it) and creates or upgrades the tables. The
// returned Store owns the pool; Close closes it.
func Open(ctx context.Context, connString string, opts ...Option) (*Store, error) {
	pool, err := pgdb.Open(ctx, connString)
	if err != nil {
		return nil, err
	}
	s := New(pool, opts...)
	s.share.Own()
	if err := s.Migrate(ctx); err != nil {
		_ = s.Close() // and the pool
		return nil, err
	}
	return s, nil
}

// New returns a Store that uses pool, which the caller owns: Close does
// not close it. The pool may be shared with the checkpoint and store
// backends. The tables are created on first use, or by Migrate.
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return &Store{pool: pool, schema: o.schema,
		// Nobody follows a recording as it is written: its commits
		// notify no one.
		log: eventlog.New(pool, eventlog.Config{Schema: o.schema, Quiet: true}),
		share: pgdb.NewShare(pool, pgdb.Backend{
			Schema:     o.schema,
			Migrations: schemaMigrations,
			Closed:     errClosed,
		})}
}

// Migrate creates or upgrades the tables now rather than on first use. It
// is what Open does before it returns.
func (s *Store) Migrate(ctx context.Context) error {
	_, err := s.init(ctx)
	return err
}

// PostgresDatabase returns the Store's pool and the schema WithSchema
// named ("": the connection's current schema), for the backends that keep
// their tables beside its (runs/accounts.Of).
func (s *Store) PostgresDatabase() (*pgxpool.Pool, string) { return s.pool, s.schema }

// Close stores the events appended, and closes the pool when the Store
// was returned by Open. Methods called after Close return an error
// wrapping trace.ErrClosed.
func (s *Store) Close() error {
	err := s.log.Close()
	s.share.Close()
	return err
}

// init sets the Store up on first use and returns the quoted schema name.
// The event log's tables are made first: migration 2 moves the events
// into them.
func (s *Store) init(ctx context.Context) (string, error) {
	if err := s.log.Start(ctx); err != nil {
		if errors.Is(err, eventlog.ErrClosed) {
			return "", errClosed
		}
		return "", fmt.Errorf("postgres: %w", err)
	}
	return s.share.Init(ctx)
}

// tables returns the qualified names of the event log's tables.
func (s *Store) tables() (streams, frames string) { return s.log.Tables() }

// CreateRun adds run to the index.
func (s *Store) CreateRun(ctx context.Context, run trace.RunInfo) error {
	sc, err := s.init(ctx)
	if err != nil {
		return err
	}
	runtimeJSON, err := encodeRuntime(run.Runtime)
	if err != nil {
		return err
	}
	// The run's stream is made with it: its events are stored only while
	// it is there (DeleteRun deletes both).
	streams, _ := s.tables()
	var created int
	err = s.pool.QueryRow(ctx, `WITH r AS (INSERT INTO `+sc+`.trace_runs
		(run_id, thread_id, graph_thread, workflow, graph, owner, status, start_kind, input, runtime,
		 started, ended, final_state, error, events)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (run_id) DO NOTHING RETURNING run_id),
		st AS (INSERT INTO `+streams+` (stream) SELECT $16 FROM r ON CONFLICT (stream) DO NOTHING)
		SELECT count(*) FROM r`,
		run.ID, run.Thread, run.GraphThread, run.Workflow, run.Graph, run.Owner, run.Status, run.Start,
		bytesOrNil(run.Input), runtimeJSON, run.StartedAt, run.EndedAt, bytesOrNil(run.FinalState), run.Error, run.Events,
		streamOf(run.ID)).Scan(&created)
	if err != nil {
		return fmt.Errorf("postgres: create run %q: %w", run.ID, err)
	}
	if created == 0 {
		return fmt.Errorf("postgres: create run %q: %w", run.ID, trace.ErrRunExists)
	}
	return nil
}

// AppendEvents stores events as frames of their runs' streams in the
// event log, in one of its group commits (with the events other
// recorders append meanwhile), and returns once they are committed. An
// event already stored (its run and Seq) is left as it is.
func (s *Store) AppendEvents(ctx context.Context, events []trace.Event) error {
	if len(events) == 0 {
		return nil
	}
	sc, err := s.init(ctx)
	if err != nil {
		return err
	}
	var ids []string
	seen := map[string]bool{}
	entries := make([]eventlog.Entry, len(events))
	for i, e := range events {
		if !seen[e.RunID] {
			seen[e.RunID] = true
			ids = append(ids, e.RunID)
		}
		f, err := toFrame(e)
		if err != nil {
			return err
		}
		entries[i] = eventlog.Entry{Stream: streamOf(e.RunID), Frame: f}
	}
	rows, err := s.pool.Query(ctx, `SELECT run_id FROM `+sc+`.trace_runs WHERE run_id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("postgres: append events: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("postgres: append events: %w", err)
	}
	for _, id := range ids {
		if !slices.Contains(found, id) {
			return fmt.Errorf("postgres: append events of run %q: %w", id, trace.ErrNotFound)
		}
	}
	// A run deleted from here on has no stream: its frames are not
	// stored (the log says its stream is fenced).
	// Each stream's error is taken, so that none is left for a later call.
	err = s.log.AppendAll(entries)
	if err == nil {
		errs := make([]error, len(ids))
		for i, id := range ids {
			errs[i] = s.log.FlushContext(ctx, streamOf(id))
		}
		err = errors.Join(errs...)
	}
	switch {
	case errors.Is(err, eventlog.ErrFenced):
		for _, id := range ids {
			s.log.Forget(streamOf(id))
		}
		return fmt.Errorf("postgres: append events: a run was deleted: %w", trace.ErrNotFound)
	case errors.Is(err, eventlog.ErrClosed):
		return errClosed
	case err != nil:
		return fmt.Errorf("postgres: append events: %w", err)
	}
	return nil
}

// FinishRun records how a run ended.
func (s *Store) FinishRun(ctx context.Context, run trace.RunInfo) error {
	sc, err := s.init(ctx)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE `+sc+`.trace_runs SET status = $1, ended = $2, final_state = $3, error = $4, events = $5
		WHERE run_id = $6`, run.Status, run.EndedAt, bytesOrNil(run.FinalState), run.Error, run.Events, run.ID)
	if err != nil {
		return fmt.Errorf("postgres: finish run %q: %w", run.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: finish run %q: %w", run.ID, trace.ErrNotFound)
	}
	return nil
}

// DeleteRun removes a run and its events.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	sc, err := s.init(ctx)
	if err != nil {
		return err
	}
	n, err := s.deleteRuns(ctx, sc, []string{id})
	if err != nil {
		return fmt.Errorf("postgres: delete run %q: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: delete run %q: %w", id, trace.ErrNotFound)
	}
	return nil
}

// deleteRuns deletes runs of the index with their streams, in one
// transaction, and returns how many runs it deleted. The streams' rows go
// before their frames, in a statement of their own: deleting a row waits
// for the commits writing to it, and the frames' statement, which starts
// after, sees what they stored; a commit after finds no row and stores
// nothing.
func (s *Store) deleteRuns(ctx context.Context, sc string, ids []string) (int64, error) {
	streams, frames := s.tables()
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = streamOf(id)
	}
	b := &pgx.Batch{}
	var n int64
	b.Queue(`DELETE FROM `+sc+`.trace_runs WHERE run_id = ANY($1)`, ids).Exec(func(tag pgconn.CommandTag) error {
		n = tag.RowsAffected()
		return nil
	})
	b.Queue(`DELETE FROM `+streams+` WHERE stream = ANY($1)`, keys)
	b.Queue(`DELETE FROM `+frames+` WHERE stream = ANY($1)`, keys)
	// The statements of a batch are one transaction.
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return 0, err
	}
	return n, nil
}

// pruneBatch is how many runs one statement of Prune removes.
const pruneBatch = 500

// Prune removes the runs p does not keep, with their streams.
func (s *Store) Prune(ctx context.Context, p trace.RetentionPolicy) (trace.PruneReport, error) {
	sc, err := s.init(ctx)
	if err != nil {
		return trace.PruneReport{}, err
	}
	rows, err := s.pool.Query(ctx, `SELECT run_id, owner, started, ended FROM `+sc+`.trace_runs WHERE $1 = '' OR owner = $1`, p.Owner)
	if err != nil {
		return trace.PruneReport{}, fmt.Errorf("postgres: prune: %w", err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (trace.RunInfo, error) {
		var r trace.RunInfo
		err := row.Scan(&r.ID, &r.Owner, &r.StartedAt, &r.EndedAt)
		return r, err
	})
	if err != nil {
		return trace.PruneReport{}, fmt.Errorf("postgres: prune: %w", err)
	}
	rep := p.Expired(runs)
	if p.DryRun {
		return rep, nil
	}
	for ids := range slices.Chunk(rep.PrunedIDs(), pruneBatch) {
		if _, err := s.deleteRuns(ctx, sc, ids); err != nil {
			return rep, fmt.Errorf("postgres: prune: %w", err)
		}
	}
	return rep, nil
}

const runColumns = `run_id, thread_id, graph_thread, workflow, graph, owner, status, start_kind, input, runtime,
	started, ended, final_state, error, events`

// briefRunColumns are runColumns without the large ones (input, runtime,
// final_state), for a RunQuery's Brief.
const briefRunColumns = `run_id, thread_id, graph_thread, workflow, graph, owner, status, start_kind, NULL, NULL,
	started, ended, NULL, error, events`

// Run returns a run of the index.
func (s *Store) Run(ctx context.Context, id string) (trace.RunInfo, error) {
	sc, err := s.init(ctx)
	if err != nil {
		return trace.RunInfo{}, err
	}
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM `+sc+`.trace_runs WHERE run_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return trace.RunInfo{}, fmt.Errorf("postgres: run %q: %w", id, trace.ErrNotFound)
	}
	if err != nil {
		return trace.RunInfo{}, fmt.Errorf("postgres: run %q: %w", id, err)
	}
	return r, nil
}

// Runs returns the runs q selects, the most recently started first.
func (s *Store) Runs(ctx context.Context, q trace.RunQuery) ([]trace.RunInfo, error) {
	sc, err := s.init(ctx)
	if err != nil {
		return nil, err
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	for _, f := range []struct{ col, v string }{
		{"owner", q.Owner}, {"thread_id", q.Thread}, {"workflow", q.Workflow}, {"status", q.Status},
	} {
		if f.v != "" {
			where = append(where, f.col+" = "+arg(f.v))
		}
	}
	switch {
	case !q.Before.IsZero() && q.BeforeID != "":
		// A row comparison: the index on (started, run_id) gives its range.
		where = append(where, "(started, run_id) < ("+arg(q.Before)+", "+arg(q.BeforeID)+")")
	case !q.Before.IsZero():
		where = append(where, "started < "+arg(q.Before))
	}
	columns := runColumns
	if q.Brief {
		columns = briefRunColumns
	}
	query := `SELECT ` + columns + ` FROM ` + sc + `.trace_runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY started DESC, run_id DESC LIMIT ` + arg(q.EffectiveLimit())
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: runs: %w", err)
	}
	defer rows.Close()
	out := []trace.RunInfo{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: runs: %w", err)
	}
	return out, nil
}

// Events returns the events of run id that q selects.
func (s *Store) Events(ctx context.Context, id string, q trace.EventQuery) ([]trace.Event, error) {
	sc, err := s.init(ctx)
	if err != nil {
		return nil, err
	}
	var one int
	err = s.pool.QueryRow(ctx, `SELECT 1 FROM `+sc+`.trace_runs WHERE run_id = $1`, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: events of run %q: %w", id, trace.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: events of run %q: %w", id, err)
	}
	return s.page(ctx, id, q)
}

// firstFrames is how many frames a page asks the database for first: a
// page of larger events ends within them, and the database reads no
// further (it reads a query's Limit of frames to find where their bytes
// end).
const firstFrames = 256

// page reads a page of the events of run id that q selects, asking the
// database for firstFrames frames, then, while they all fit, for as many
// more as the bytes left would hold at the size of the latest (and half
// as many again). The database ends each answer by the bytes it stores (no
// more than the events' sizes); the page is cut where the events' sizes
// pass q's bytes.
func (s *Store) page(ctx context.Context, id string, q trace.EventQuery) ([]trace.Event, error) {
	limit, budget := q.EffectiveLimit(), q.EffectiveMaxBytes()
	var out []trace.Event
	var used int64
	after, ask := q.After, min(limit, firstFrames)
	for {
		frames, err := s.log.Select(ctx, streamOf(id), eventlog.Query{After: after, Until: q.Until, Names: q.Kinds,
			Path: q.Path, Limit: ask, MaxBytes: budget - used, Bodies: q.Bodies})
		if err != nil {
			return nil, fmt.Errorf("postgres: events of run %q: %w", id, err)
		}
		var got int64 // the bytes of this answer
		for _, f := range frames {
			e, err := fromFrame(id, f)
			if err != nil {
				return nil, err
			}
			size := e.Size()
			if !q.Fits(len(out), used, size) {
				return out, nil
			}
			out = append(out, e)
			used, got = used+size, got+size
		}
		// Fewer frames than asked: the stream has no more, or their
		// bytes ended the answer, and so the page.
		if len(frames) < ask || len(out) == limit || used >= budget {
			return out, nil
		}
		after = out[len(out)-1].Seq
		each := max(got/int64(len(frames)), 1) // the size of the latest events
		fit := min((budget-used)/each, int64(limit))
		ask = int(min(int64(limit-len(out)), fit+fit/2+16))
	}
}

func scanRun(row pgx.Row) (trace.RunInfo, error) {
	var r trace.RunInfo
	var input, runtimeJSON, final []byte
	var ended *time.Time
	if err := row.Scan(&r.ID, &r.Thread, &r.GraphThread, &r.Workflow, &r.Graph, &r.Owner, &r.Status, &r.Start,
		&input, &runtimeJSON, &r.StartedAt, &ended, &final, &r.Error, &r.Events); err != nil {
		return r, err
	}
	r.Input, r.FinalState = raw(input), raw(final)
	r.StartedAt = r.StartedAt.UTC()
	if ended != nil {
		t := ended.UTC()
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
		return nil, fmt.Errorf("postgres: encode runtime values: %w", err)
	}
	return b, nil
}

// bytesOrNil passes nil as NULL and anything else as bytea.
func bytesOrNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return []byte(b)
}

func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

var _ trace.Sizer = (*Store)(nil)

// OwnerBytes is about the bytes the store keeps for the owner's runs, as
// trace.RunInfo.Size and trace.Event.Size count them.
func (s *Store) OwnerBytes(ctx context.Context, owner string) (int64, error) {
	sc, err := s.init(ctx)
	if err != nil {
		return 0, err
	}
	_, frames := s.tables()
	var n int64
	err = s.pool.QueryRow(ctx, `SELECT
	(SELECT coalesce(sum(octet_length(run_id) + octet_length(thread_id) + octet_length(graph_thread) + octet_length(workflow)
		+ octet_length(graph) + octet_length(owner) + octet_length(status) + octet_length(start_kind)
		+ coalesce(octet_length(input), 0) + coalesce(octet_length(runtime), 0) + coalesce(octet_length(final_state), 0)
		+ octet_length(error) + 32), 0) FROM `+sc+`.trace_runs WHERE owner = $1)
	+ (SELECT coalesce(sum(octet_length(r.run_id) + octet_length(f.name) + octet_length(f.path)
		+ coalesce(octet_length(f.meta->>'node'), 0) + coalesce(octet_length(f.meta->>'agent'), 0) + octet_length(f.frame)
		+ coalesce(octet_length(f.meta->>'error'), 0) + coalesce(octet_length(f.meta->>'hash'), 0)
		+ coalesce(octet_length(f.body) - 4, 0) + 40), 0)
		FROM `+sc+`.trace_runs r JOIN `+frames+` f ON f.stream = '`+streamPrefix+`' || r.run_id
		WHERE r.owner = $1 AND f.meta IS NOT NULL)`, owner).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: bytes of owner %q: %w", owner, err)
	}
	return n, nil
}
