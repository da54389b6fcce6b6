package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/sqlitedb"
)

// Saver is a graph.Saver backed by a SQLite database. Create one with Open
// or New; it is safe for concurrent use.
//
// All of a Saver's writes go through the database's writer connection,
// one at a time, in turns with the other backends on the same *sql.DB
// (store/sqlite, trace/sqlite); reads use the rest of the pool and run in
// parallel, with each other and with the writer.
type Saver struct {
	share *sqlitedb.Share
	db    *sql.DB
	w     writeStatements // prepared on the writer connection
	r     readStatements
	puts  putQueue
}

// errClosed is returned by the methods of a closed Saver.
var errClosed = errors.New("sqlite: saver is closed")

var (
	_ graph.Saver      = (*Saver)(nil)
	_ graph.BlobReader = (*Saver)(nil)
)

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
// directories of mode 0700) and the schema if needed. The returned Saver
// owns the database; Close closes it. In-memory databases are refused:
// each connection would see a database of its own (use checkpoint/memory
// instead).
func Open(ctx context.Context, path string, opts ...Option) (*Saver, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	db, err := sqlitedb.Open(path, sqlitedb.Options{BusyTimeout: o.busyTimeout})
	if errors.Is(err, sqlitedb.ErrNeedFile) {
		return nil, fmt.Errorf("%w; for a Saver in memory use checkpoint/memory", err)
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

// New returns a Saver that uses db, a database opened with the "sqlite"
// driver of modernc.org/sqlite. The caller owns db: Close does not close it. The schema is created on
// first use, or by Migrate.
//
// The Saver writes through db's writer connection, which it shares with
// the store and trace backends given the same db, so db must allow at
// least two open connections. The writer has foreign keys turned on; the
// caller's data source name should set journal_mode(WAL) and
// busy_timeout, as Open does, for reads to proceed while the Saver writes.
func New(db *sql.DB) *Saver {
	s := &Saver{db: db}
	s.share = sqlitedb.NewShare(db, sqlitedb.Backend{Setup: s.setUp, Teardown: s.tearDown, Closed: errClosed})
	return s
}

// Migrate creates or upgrades the schema now rather than on first use. It
// is what Open does before it returns.
func (s *Saver) Migrate(ctx context.Context) error {
	return s.share.Init(ctx)
}

// Close waits for a write in progress, releases the prepared statements
// and the Saver's part of the writer connection and, when the Saver was
// returned by Open, closes the database. Methods called after Close return
// an error.
func (s *Saver) Close() error {
	if err := s.share.Close(); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// SQLiteDatabase returns the Saver's database, for the backends that keep
// their tables beside its (runs/accounts.Of).
func (s *Saver) SQLiteDatabase() *sql.DB { return s.db }

// init sets the Saver up on first use (see sqlitedb.Share.Init).
func (s *Saver) init(ctx context.Context) error {
	return s.share.Init(ctx)
}

// setUp creates or upgrades the schema and prepares the statements.
func (s *Saver) setUp(ctx context.Context, writer *sql.Conn) error {
	if err := migrate(ctx, writer); err != nil {
		return err
	}
	if err := prepare(ctx, writer, s.w.all()); err != nil {
		return err
	}
	return prepare(ctx, s.db, s.r.all())
}

// tearDown closes the prepared statements.
func (s *Saver) tearDown() error {
	return errors.Join(closeAll(s.r.all()), closeAll(s.w.all()))
}

// withWriter runs fn with the writer connection's statements, after the
// writes that came before it on the database.
//
// ctx is honoured until fn starts; fn's statements run under a context
// that is never cancelled. They are few and short, and a cancellable
// context would cost each of them a hand-off to a goroutine that watches
// it, which is much of the cost of a small write.
func (s *Saver) withWriter(ctx context.Context, fn func(ctx context.Context, w *writeStatements) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := s.share.Lock(ctx); err != nil {
		return err
	}
	defer s.share.Unlock()
	return fn(context.WithoutCancel(ctx), &s.w)
}

// writeTx runs fn in a transaction on the writer connection: after an
// error, nothing fn did is kept. ctx is checked again before the commit.
func (s *Saver) writeTx(ctx context.Context, fn func(ctx context.Context, w *writeStatements) error) error {
	return s.withWriter(ctx, func(wctx context.Context, w *writeStatements) error {
		return inTx(ctx, wctx, w, fn)
	})
}

// inTx runs fn in a transaction on the writer connection, which the caller
// holds; fn's statements run under wctx. After an error, nothing fn did is
// kept. ctx is checked again before the commit.
func inTx(ctx, wctx context.Context, w *writeStatements, fn func(ctx context.Context, w *writeStatements) error) error {
	if _, err := w.begin.ExecContext(wctx); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	err := fn(wctx, w)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		if _, err = w.commit.ExecContext(wctx); err != nil {
			err = fmt.Errorf("commit: %w", err)
		}
	}
	if err != nil {
		// SQLite may have rolled back already, and then this fails.
		_, _ = w.rollback.ExecContext(wctx)
	}
	return err
}

var _ graph.ThreadSizer = (*Saver)(nil)

// ThreadBytes is about the bytes the Saver keeps for the threads whose ids
// start with prefix: the lengths of their checkpoints' ids, parents,
// namespaces and metadata, of their blobs and of their task records.
func (s *Saver) ThreadBytes(ctx context.Context, prefix string) (int64, error) {
	if err := s.init(ctx); err != nil {
		return 0, err
	}
	end := graph.PrefixEnd(prefix)
	if end == "" {
		end = "\xff\xff\xff\xff" // beyond every thread id the engine makes
	}
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT coalesce(sum(octet_length(checkpoint_id) + octet_length(parent_id) + octet_length(ns) + octet_length(meta)), 0)
			FROM checkpoints WHERE thread_id >= ?1 AND thread_id < ?2)
		+ (SELECT coalesce(sum(octet_length(channel) + octet_length(version) + octet_length(base) + octet_length(data)), 0)
			FROM checkpoint_blobs WHERE thread_id >= ?1 AND thread_id < ?2)
		+ (SELECT coalesce(sum(octet_length(task_id) + octet_length(kind) + octet_length(key) + octet_length(data)), 0)
			FROM checkpoint_tasks WHERE thread_id >= ?1 AND thread_id < ?2)`, prefix, end).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlite: bytes of threads %q...: %w", prefix, err)
	}
	return n, nil
}
