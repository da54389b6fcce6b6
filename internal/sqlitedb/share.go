package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
)

// Backend says how a backend sets itself up on a database and what it
// returns once closed.
type Backend struct {
	// Setup creates or upgrades the backend's tables and prepares the
	// statements it runs on conn, the writer connection. It runs once,
	// holding the writer.
	Setup func(ctx context.Context, conn *sql.Conn) error
	// Teardown closes what Setup left open: after a failed Setup, and at
	// Close, holding the writer. It may be nil.
	Teardown func() error
	// Closed is what Init and Lock return after Close.
	Closed error
}

// Share is one backend's use of a database: the database, whether the
// backend owns it, and its part of the database's writer. A Share is set
// up on first use (Init), and safe for concurrent use.
type Share struct {
	db   *sql.DB
	owns bool
	b    Backend

	mu    sync.Mutex
	ready atomic.Bool // set up and not closed; w is set
	done  bool        // closed; guarded by mu
	w     *writer
}

// NewShare returns the Share of a backend b on db. It does no I/O.
func NewShare(db *sql.DB, b Backend) *Share {
	return &Share{db: db, b: b}
}

// Own makes Close close the database too: for a backend that opened it.
func (s *Share) Own() { s.owns = true }

// DB returns the database, for reads.
func (s *Share) DB() *sql.DB { return s.db }

// Init takes the database's writer and runs the backend's Setup, once;
// after a failure the next call tries again.
func (s *Share) Init(ctx context.Context) error {
	if s.ready.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return s.b.Closed
	}
	if s.ready.Load() {
		return nil
	}
	w, err := acquire(ctx, s.db)
	if err != nil {
		return err
	}
	select {
	case w.lock <- struct{}{}:
	case <-ctx.Done():
		return errors.Join(ctx.Err(), w.release(s.db))
	}
	err = s.b.Setup(ctx, w.conn)
	if err != nil && s.b.Teardown != nil {
		_ = s.b.Teardown()
	}
	<-w.lock
	if err != nil {
		return errors.Join(err, w.release(s.db))
	}
	s.w = w
	s.ready.Store(true)
	return nil
}

// Lock sets the backend up if needed, waits for the writer and returns its
// connection; Unlock gives it back. It honours ctx while it waits, and
// returns Backend.Closed when the Share was closed meanwhile. Between Lock
// and Unlock the caller is the only one writing to the database through
// this handle.
func (s *Share) Lock(ctx context.Context) (*sql.Conn, error) {
	conn, _, err := s.LockOr(ctx, nil)
	return conn, err
}

// LockOr is Lock that stops waiting when done is closed first, and then
// reports false without the writer: for a caller whose write another
// writer may do for it (group commit). A nil done is never closed.
func (s *Share) LockOr(ctx context.Context, done <-chan struct{}) (*sql.Conn, bool, error) {
	if err := s.Init(ctx); err != nil {
		return nil, false, err
	}
	w := s.w
	select {
	case w.lock <- struct{}{}:
	case <-done:
		return nil, false, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	if !s.ready.Load() {
		<-w.lock
		return nil, false, s.b.Closed // closed while this writer waited
	}
	return w.conn, true, nil
}

// Unlock gives back the writer a successful Lock took, after a write.
func (s *Share) Unlock() {
	s.w.wrote()
	<-s.w.lock
}

// Close waits for a write in progress, runs the backend's Teardown, gives
// back its part of the writer and, when the Share owns the database,
// closes it. Init and Lock return Backend.Closed afterwards; a second
// Close does nothing.
func (s *Share) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil
	}
	s.done = true
	var errs []error
	if s.ready.Load() {
		w := s.w
		w.lock <- struct{}{}
		s.ready.Store(false)
		if s.b.Teardown != nil {
			errs = append(errs, s.b.Teardown())
		}
		<-w.lock
		errs = append(errs, w.release(s.db))
	}
	if s.owns {
		errs = append(errs, s.db.Close())
	}
	return errors.Join(errs...)
}
