package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// Saver is a graph.Saver backed by a SQLite database. Create one with Open
// or New; it is safe for concurrent use.
//
// All of a Saver's writes go through one connection of its own, the
// writer, one at a time; reads use the rest of the pool and run in
// parallel, with each other and with the writer.
type Saver struct {
	db     *sql.DB
	ownsDB bool

	// wlock is held by whoever uses the writer connection. It is a channel
	// rather than a mutex so that a writer waiting for it honours its
	// context.
	wlock chan struct{}

	initMu sync.Mutex
	ready  atomic.Bool // the fields below are set
	closed bool        // guarded by initMu
	writer *sql.Conn
	w      writeStatements
	r      readStatements
}

// errClosed is returned by the methods of a closed Saver.
var errClosed = errors.New("sqlite: saver is closed")

var _ graph.Saver = (*Saver)(nil)

// Option configures Open.
type Option func(*options)

type options struct {
	busyTimeout time.Duration
}

// WithBusyTimeout sets how long a statement waits for a lock another
// process holds on the file before failing with SQLITE_BUSY. The default is
// 5 seconds.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// Open opens the SQLite file at path, creating it and the schema if needed.
// The returned Saver owns the database; Close closes it. In-memory
// databases are refused: each connection would see a database of its own
// (use checkpoint/memory instead).
func Open(ctx context.Context, path string, opts ...Option) (*Saver, error) {
	if path == "" || path == ":memory:" || strings.Contains(path, "mode=memory") || strings.HasPrefix(path, "file::memory:") {
		return nil, fmt.Errorf("sqlite: open %q: need a file; for a Saver in memory use checkpoint/memory", path)
	}
	o := options{busyTimeout: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	db, err := sql.Open("sqlite", dsn(path, o))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// Reopening a connection costs a file open and re-preparing every
	// statement: keep as many idle as may be busy at once.
	n := runtime.GOMAXPROCS(0) + 2
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	s := New(db)
	s.ownsDB = true
	if err := s.init(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("%w (opening %s)", err, path), s.Close())
	}
	return s, nil
}

// dsn returns the modernc.org/sqlite data source name for path.
func dsn(path string, o options) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.busyTimeout.Milliseconds()))
	// Small pages for new files: a commit writes every page it changed to
	// the WAL, and a small step changes four, so 1 KiB pages write a
	// quarter of the bytes 4 KiB pages would, and a quarter is flushed at
	// each WAL checkpoint. Large values take more (overflow) pages, which
	// costs them little.
	q.Add("_pragma", "page_size(1024)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Applied after the _pragma list, so that page_size comes first.
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	// As a URI, the path escapes the characters that would end it.
	escaped := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + escaped + "?" + q.Encode()
}

// New returns a Saver that uses db, a database opened with the "sqlite"
// driver of modernc.org/sqlite. The caller owns db: Close does not close
// it. The schema is created on first use.
//
// From its first use until Close, the Saver keeps one connection of db for
// its writes, so db must allow at least two open connections. The Saver
// turns on foreign keys on that connection; the caller's data source name
// should set journal_mode(WAL) and busy_timeout, as Open does, for reads to
// proceed while the Saver writes.
func New(db *sql.DB) *Saver {
	return &Saver{db: db, wlock: make(chan struct{}, 1)}
}

// Close waits for a write in progress, releases the writer connection and
// the prepared statements and, when the Saver was returned by Open, closes
// the database. Methods called after Close return an error.
func (s *Saver) Close() error {
	s.initMu.Lock()
	defer s.initMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	// Wait for the write in progress; writers that come later find the
	// Saver not ready and return errClosed.
	s.wlock <- struct{}{}
	s.ready.Store(false)
	<-s.wlock

	errs := []error{closeAll(s.r.all()), closeAll(s.w.all())}
	if s.writer != nil {
		errs = append(errs, s.writer.Close())
	}
	if s.ownsDB {
		errs = append(errs, s.db.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// init takes the writer connection, creates or upgrades the schema and
// prepares the statements, once; after a failure the next call tries again.
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
	if err := s.setUp(ctx); err != nil {
		closeAll(s.r.all())
		closeAll(s.w.all())
		if s.writer != nil {
			s.writer.Close()
			s.writer = nil
		}
		return err
	}
	s.ready.Store(true)
	return nil
}

func (s *Saver) setUp(ctx context.Context) error {
	if s.db.Stats().MaxOpenConnections == 1 {
		return errors.New("sqlite: the database allows one connection; the Saver needs one for writing and more for reading")
	}
	var err error
	if s.writer, err = s.db.Conn(ctx); err != nil {
		return fmt.Errorf("sqlite: writer connection: %w", err)
	}
	if _, err := s.writer.ExecContext(ctx, "PRAGMA foreign_keys = ON"); err != nil {
		return fmt.Errorf("sqlite: writer connection: %w", err)
	}
	if err := migrate(ctx, s.writer); err != nil {
		return err
	}
	if err := prepare(ctx, s.writer, s.w.all()); err != nil {
		return err
	}
	return prepare(ctx, s.db, s.r.all())
}

// withWriter runs fn with the writer connection's statements, after the
// writes of this Saver that came before it.
//
// ctx is honoured until fn starts; fn's statements run under a context
// that is never cancelled. They are few and short, and a cancellable
// context would cost each of them a hand-off to a goroutine that watches
// it, which is much of the cost of a small write.
func (s *Saver) withWriter(ctx context.Context, fn func(ctx context.Context, w *writeStatements) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.init(ctx); err != nil {
		return err
	}
	select {
	case s.wlock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.wlock }()
	if !s.ready.Load() {
		return errClosed // closed while this writer waited
	}
	return fn(context.WithoutCancel(ctx), &s.w)
}

// writeTx runs fn in a transaction on the writer connection: after an
// error, nothing fn did is kept. ctx is checked again before the commit.
func (s *Saver) writeTx(ctx context.Context, fn func(ctx context.Context, w *writeStatements) error) error {
	return s.withWriter(ctx, func(wctx context.Context, w *writeStatements) error {
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
	})
}
