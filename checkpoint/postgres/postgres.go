package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/graph"
)

// Saver is a graph.Saver backed by PostgreSQL. Create one with Open or New;
// it is safe for concurrent use.
type Saver struct {
	pool      *pgxpool.Pool
	ownsPool  bool
	schemaOpt string

	initMu sync.Mutex
	ready  atomic.Bool // q is set
	closed bool        // guarded by initMu
	q      queries
}

// errClosed is returned by the methods of a closed Saver.
var errClosed = errors.New("postgres: saver is closed")

var _ graph.Saver = (*Saver)(nil)

// Option configures Open and New.
type Option func(*Saver)

// WithSchema keeps the tables in the PostgreSQL schema name, created if it
// does not exist, instead of the connection's current schema. Savers with
// different schemas share nothing.
func WithSchema(name string) Option {
	return func(s *Saver) { s.schemaOpt = name }
}

// Open connects to the database at connString (a URL or key=value string,
// as pgxpool.ParseConfig reads it) and creates or upgrades the schema. The
// returned Saver owns the pool; Close closes it.
func Open(ctx context.Context, connString string, opts ...Option) (*Saver, error) {
	pool, err := pgxpool.New(ctx, connString)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s := New(pool, opts...)
	s.ownsPool = true
	if err := s.init(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// New returns a Saver that uses pool, which the caller owns: Close does not
// close it. The schema is created on first use.
func New(pool *pgxpool.Pool, opts ...Option) *Saver {
	s := &Saver{pool: pool}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// Close closes the pool when the Saver was returned by Open. Methods called
// after Close return an error. It always returns nil; the error is there
// so that a Saver is an io.Closer.
func (s *Saver) Close() error {
	s.initMu.Lock()
	defer s.initMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.ready.Store(false)
	if s.ownsPool {
		s.pool.Close()
	}
	return nil
}

// init resolves the schema, creates or upgrades the tables and builds the
// queries, once; after a failure the next call tries again.
func (s *Saver) init(ctx context.Context) error {
	if s.ready.Load() {
		return nil
	}
	s.initMu.Lock()
	defer s.initMu.Unlock()
	if s.closed {
		return errClosed
	}
	if s.ready.Load() {
		return nil
	}
	schema := s.schemaOpt
	if schema == "" {
		var current *string
		if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&current); err != nil {
			return fmt.Errorf("postgres: current schema: %w", err)
		}
		if current == nil {
			return errors.New("postgres: the connection has no current schema (search_path); name one with WithSchema")
		}
		schema = *current
	}
	if err := migrate(ctx, s.pool, schema); err != nil {
		return err
	}
	s.q = newQueries(schema)
	s.ready.Store(true)
	return nil
}

// queries are the Saver's statements, with their tables qualified by the
// schema. pgx prepares and caches each on every connection that runs it.
type queries struct {
	putAfter      string
	putFirst      string
	newestID      string
	upsertTasks   string
	deleteThread  [4]string
	getCheckpoint string
	getNewest     string
	getSeq        string
	list          string
	blobs         string
	tasks         string
	threads       string
}

// checkpointColumns are the columns scanCheckpoint reads, in order.
const checkpointColumns = `checkpoint_id, parent_id, step, source, created, meta`

// insertBlobs is the common table expression of putAfter and putFirst that
// stores the blobs $9 to $12 (channels, versions, bases, data) of the
// checkpoint cp inserted, if it did.
const insertBlobs = `blobs AS (
			INSERT INTO {schema}.checkpoint_blobs (thread_id, ns, channel, version, base, data)
			SELECT $1, $2, b.channel, b.version, b.base, b.data
			FROM cp, unnest($9::text[], $10::text[], $11::text[], $12::bytea[]) AS b (channel, version, base, data)
			ON CONFLICT DO NOTHING
		)`

func newQueries(schema string) queries {
	quoted := pgx.Identifier{schema}.Sanitize()
	r := strings.NewReplacer("{schema}", quoted)
	q := queries{
		// Insert the checkpoint, its blobs and move its namespace's head in
		// one statement, when $13 is the head: the head's row lock makes
		// concurrent writers of one namespace take turns, and a writer
		// that waited finds the head moved and inserts nothing.
		putAfter: r.Replace(`WITH head AS (
			SELECT h.thread_id FROM {schema}.checkpoint_heads h
			WHERE h.thread_id = $1 AND h.ns = $2 AND h.last_seq =
				(SELECT seq FROM {schema}.checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $13)
			FOR UPDATE
		), cp AS (
			INSERT INTO {schema}.checkpoints (thread_id, ns, checkpoint_id, parent_id, step, source, created, meta)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8 FROM head
			RETURNING seq
		), ` + insertBlobs + `
		UPDATE {schema}.checkpoint_heads h SET
			last_seq    = cp.seq,
			checkpoints = h.checkpoints + 1,
			created     = LEAST(h.created, $7),
			updated     = GREATEST(h.updated, $7)
		FROM cp WHERE h.thread_id = $1 AND h.ns = $2`),
		// The same for the first checkpoint of a namespace: the head's
		// primary key refuses a second first one.
		putFirst: r.Replace(`WITH cp AS (
			INSERT INTO {schema}.checkpoints (thread_id, ns, checkpoint_id, parent_id, step, source, created, meta)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			RETURNING seq
		), ` + insertBlobs + `
		INSERT INTO {schema}.checkpoint_heads (thread_id, ns, last_seq, checkpoints, created, updated)
		SELECT $1, $2, seq, 1, $7, $7 FROM cp`),
		newestID: r.Replace(`SELECT c.checkpoint_id FROM {schema}.checkpoint_heads h JOIN {schema}.checkpoints c ON c.seq = h.last_seq
			WHERE h.thread_id = $1 AND h.ns = $2`),
		// Inserts nothing when the checkpoint does not exist.
		upsertTasks: r.Replace(`INSERT INTO {schema}.checkpoint_tasks (thread_id, ns, checkpoint_id, task_id, kind, key, data)
			SELECT $1, $2, $3, t.task_id, t.kind, t.key, t.data
			FROM unnest($4::text[], $5::text[], $6::text[], $7::bytea[]) AS t (task_id, kind, key, data)
			WHERE EXISTS (SELECT 1 FROM {schema}.checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3)
			ON CONFLICT (thread_id, ns, checkpoint_id, task_id, kind, key) DO UPDATE SET data = excluded.data`),
		getCheckpoint: r.Replace(`SELECT ` + checkpointColumns + ` FROM {schema}.checkpoints
			WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`),
		getNewest: r.Replace(`SELECT ` + checkpointColumns + ` FROM {schema}.checkpoints
			WHERE seq = (SELECT last_seq FROM {schema}.checkpoint_heads WHERE thread_id = $1 AND ns = $2)`),
		getSeq: r.Replace(`SELECT seq FROM {schema}.checkpoints WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3`),
		// A NULL limit is no limit.
		list: r.Replace(`SELECT ` + checkpointColumns + ` FROM {schema}.checkpoints
			WHERE thread_id = $1 AND ns = $2 AND seq < $3 ORDER BY seq DESC LIMIT $4`),
		blobs: r.Replace(`SELECT channel, version, base, data FROM {schema}.checkpoint_blobs
			WHERE thread_id = $1 AND ns = $2 AND channel = ANY($3)`),
		// One row with NULL task columns when the checkpoint has no records,
		// none when the checkpoint does not exist.
		tasks: r.Replace(`SELECT t.task_id, t.kind, t.key, t.data
			FROM {schema}.checkpoints c LEFT JOIN {schema}.checkpoint_tasks t
				ON t.thread_id = c.thread_id AND t.ns = c.ns AND t.checkpoint_id = c.checkpoint_id
			WHERE c.thread_id = $1 AND c.ns = $2 AND c.checkpoint_id = $3
			ORDER BY t.task_id, t.kind, t.key`),
		threads: r.Replace(`SELECT thread_id, sum(checkpoints)::bigint, min(created), max(updated)
			FROM {schema}.checkpoint_heads GROUP BY thread_id ORDER BY max(last_seq) DESC LIMIT $1`),
	}
	// Heads first: their row locks make a concurrent PutCheckpoint of the
	// thread wait for the deletion, or the deletion for it.
	for i, table := range []string{"checkpoint_heads", "checkpoint_tasks", "checkpoint_blobs", "checkpoints"} {
		q.deleteThread[i] = `DELETE FROM ` + quoted + `.` + table + ` WHERE thread_id = $1`
	}
	return q
}
