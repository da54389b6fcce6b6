package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgdb"
)

// Saver is a graph.Saver backed by PostgreSQL. Create one with Open or New;
// it is safe for concurrent use.
type Saver struct {
	share  *pgdb.Share
	pool   *pgxpool.Pool
	schema string  // as WithSchema named it; "": the current one
	q      queries // set when share is ready
}

// errClosed is returned by the methods of a closed Saver.
var errClosed = errors.New("postgres: saver is closed")

var (
	_ graph.Saver      = (*Saver)(nil)
	_ graph.BlobReader = (*Saver)(nil)
)

// Option configures Open and New.
type Option func(*options)

type options struct {
	schema string
}

// WithSchema keeps the tables in the PostgreSQL schema name, created if it
// does not exist, instead of the connection's current schema. Savers with
// different schemas share nothing.
func WithSchema(name string) Option {
	return func(o *options) { o.schema = name }
}

// Open connects to the database at connString (a URL or key=value string,
// as pgxpool.ParseConfig reads it) and creates or upgrades the schema. The
// returned Saver owns the pool; Close closes it.
func Open(ctx context.Context, connString string, opts ...Option) (*Saver, error) {
	pool, err := pgdb.Open(ctx, connString)
	if err != nil {
		return nil, err
	}
	s := New(pool, opts...)
	s.share.Own()
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// New returns a Saver that uses pool, which the caller owns: Close does not
// close it. The pool may be shared with the store and trace backends. The
// schema is created on first use, or by Migrate.
func New(pool *pgxpool.Pool, opts ...Option) *Saver {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Saver{pool: pool, schema: o.schema}
	s.share = pgdb.NewShare(pool, pgdb.Backend{
		Schema:     o.schema,
		Migrations: schemaMigrations,
		Setup:      func(schema string) { s.q = newQueries(schema) },
		Closed:     errClosed,
	})
	return s
}

// PostgresDatabase returns the Saver's pool and the schema WithSchema
// named ("": the connection's current schema), for the backends that keep
// their tables beside its (runs/accounts.Of).
func (s *Saver) PostgresDatabase() (*pgxpool.Pool, string) { return s.pool, s.schema }

// Migrate creates or upgrades the schema now rather than on first use. It
// is what Open does before it returns.
func (s *Saver) Migrate(ctx context.Context) error {
	_, err := s.share.Init(ctx)
	return err
}

// Close closes the pool when the Saver was returned by Open. Methods called
// after Close return an error. It always returns nil; the error is there
// so that a Saver is an io.Closer.
func (s *Saver) Close() error {
	s.share.Close()
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
	blobsAt       string
	tasks         string
	threads       string
	threadBytes   string
	lease         leaseQueries
}

// checkpointColumns are the columns scanCheckpoint reads, in order.
const checkpointColumns = `checkpoint_id, parent_id, step, source, created, meta`

// insertBlobs is the common table expression of putFirst that stores the
// blobs $9 to $12 (channels, versions, bases, data) of the
// checkpoint cp inserted, if it did.
const insertBlobs = `blobs AS (
			INSERT INTO {schema}.checkpoint_blobs (thread_id, ns, channel, version, base, data)
			SELECT $1, $2, b.channel, b.version, b.base, b.data
			FROM cp, unnest($9::text[], $10::text[], $11::text[], $12::bytea[]) AS b (channel, version, base, data)
			ON CONFLICT DO NOTHING
		)`

// newQueries returns the queries on the tables of quoted, a quoted schema
// name.
func newQueries(quoted string) queries {
	r := strings.NewReplacer("{schema}", quoted)
	q := queries{
		// Insert the checkpoint, its blobs and move its namespace's head in
		// one statement, when $13 is the head: the head's row lock makes
		// concurrent writers of one namespace take turns, and a writer
		// that waited finds the head moved and inserts nothing. Its one
		// row is 1 when the checkpoint was stored, else 0. (The statement
		// is in a function, put_checkpoint_after, for its plan to be made
		// once: see migration 3.)
		putAfter: r.Replace(`SELECT {schema}.put_checkpoint_after($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`),
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
		// $3 maps channels to versions. Each blob, the first of a chain
		// too, is a lookup of the primary key: LIMIT keeps the planner
		// from turning the lateral lookups into a scan of the thread's
		// blobs. UNION (not ALL) ends a cycle of a corrupt chain.
		blobsAt: r.Replace(`WITH RECURSIVE chain (channel, version, base, data) AS (
				SELECT b.channel, b.version, b.base, b.data FROM jsonb_each_text($3::jsonb) w,
				LATERAL (SELECT * FROM {schema}.checkpoint_blobs b WHERE b.thread_id = $1 AND b.ns = $2
					AND b.channel = w.key AND b.version = w.value LIMIT 1) b
				UNION
				SELECT b.channel, b.version, b.base, b.data FROM chain c,
				LATERAL (SELECT * FROM {schema}.checkpoint_blobs b WHERE b.thread_id = $1 AND b.ns = $2
					AND b.channel = c.channel AND b.version = c.base LIMIT 1) b
				WHERE c.base <> ''
			)
			SELECT channel, version, base, data FROM chain`),
		// One row with NULL task columns when the checkpoint has no records,
		// none when the checkpoint does not exist.
		tasks: r.Replace(`SELECT t.task_id, t.kind, t.key, t.data
			FROM {schema}.checkpoints c LEFT JOIN {schema}.checkpoint_tasks t
				ON t.thread_id = c.thread_id AND t.ns = c.ns AND t.checkpoint_id = c.checkpoint_id
			WHERE c.thread_id = $1 AND c.ns = $2 AND c.checkpoint_id = $3
			ORDER BY t.task_id, t.kind, t.key`),
		threads: r.Replace(`SELECT thread_id, sum(checkpoints)::bigint, min(created), max(updated)
			FROM {schema}.checkpoint_heads GROUP BY thread_id ORDER BY max(last_seq) DESC LIMIT $1`),
		// $2 NULL: no upper bound.
		threadBytes: r.Replace(`SELECT
			(SELECT coalesce(sum(octet_length(checkpoint_id) + octet_length(parent_id) + octet_length(ns) + octet_length(meta)), 0)
				FROM {schema}.checkpoints WHERE thread_id >= $1 AND ($2::text IS NULL OR thread_id < $2))
			+ (SELECT coalesce(sum(octet_length(channel) + octet_length(version) + octet_length(base) + octet_length(data)), 0)
				FROM {schema}.checkpoint_blobs WHERE thread_id >= $1 AND ($2::text IS NULL OR thread_id < $2))
			+ (SELECT coalesce(sum(octet_length(task_id) + octet_length(kind) + octet_length(key) + octet_length(data)), 0)
				FROM {schema}.checkpoint_tasks WHERE thread_id >= $1 AND ($2::text IS NULL OR thread_id < $2))`),
	}
	q.lease = newLeaseQueries(r)
	// Heads first: their row locks make a concurrent PutCheckpoint of the
	// thread wait for the deletion, or the deletion for it.
	for i, table := range []string{"checkpoint_heads", "checkpoint_tasks", "checkpoint_blobs", "checkpoints"} {
		q.deleteThread[i] = `DELETE FROM ` + quoted + `.` + table + ` WHERE thread_id = $1`
	}
	return q
}

var _ graph.ThreadSizer = (*Saver)(nil)

// ThreadBytes is about the bytes the Saver keeps for the threads whose ids
// start with prefix: the lengths of their checkpoints' ids, parents,
// namespaces and metadata, of their blobs and of their task records.
func (s *Saver) ThreadBytes(ctx context.Context, prefix string) (int64, error) {
	if err := s.checkReady(ctx); err != nil {
		return 0, err
	}
	var end *string
	if e := graph.PrefixEnd(prefix); e != "" {
		end = &e
	}
	var n int64
	if err := s.pool.QueryRow(ctx, s.q.threadBytes, prefix, end).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: bytes of threads %q...: %w", prefix, err)
	}
	return n, nil
}
