package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// writer is the one connection the backends on a database write through,
// and the lock that makes them take turns on it. The lock is a channel
// rather than a mutex so that a writer waiting for it honours its context.
type writer struct {
	conn *sql.Conn
	lock chan struct{}
	refs int              // guarded by writers.mu
	wal  *walCheckpointer // nil when the database has no write-ahead log
}

// writers holds the writer of each database some Share uses.
var writers = struct {
	mu sync.Mutex
	m  map[*sql.DB]*writer
}{m: map[*sql.DB]*writer{}}

// errOneConn is returned for a database that cannot hold a writer
// connection beside the readers.
var errOneConn = errors.New("sqlite: the database allows one connection; its backends need one for writing and more for reading")

// acquire returns db's writer, taking its connection when no Share holds
// it yet. Each acquire is matched by a release.
func acquire(ctx context.Context, db *sql.DB) (*writer, error) {
	writers.mu.Lock()
	defer writers.mu.Unlock()
	if w := writers.m[db]; w != nil {
		w.refs++
		return w, nil
	}
	if db.Stats().MaxOpenConnections == 1 {
		return nil, errOneConn
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: writer connection: %w", err)
	}
	// For a database the caller opened without it.
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = ON"); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: writer connection: %w", err), conn.Close())
	}
	w := &writer{conn: conn, lock: make(chan struct{}, 1), refs: 1}
	if w.wal, err = walCheckpoints(ctx, db, conn); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: writer connection: %w", err), conn.Close())
	}
	writers.m[db] = w
	return w, nil
}

// walCheckpoints moves the WAL checkpoints of db off conn, its writer, to
// the background (walcheckpoint.go), when db has a write-ahead log.
func walCheckpoints(ctx context.Context, db *sql.DB, conn *sql.Conn) (*walCheckpointer, error) {
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		return nil, err
	}
	var limit int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&limit); err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", walHardLimit)); err != nil {
		return nil, err
	}
	c := startWALCheckpointer(db)
	c.connLimit = limit
	return c, nil
}

// wrote counts a write done through w.
func (w *writer) wrote() {
	if w.wal != nil {
		w.wal.wrote()
	}
}

// release gives back a reference to db's writer; the last one returns its
// connection to db's pool.
func (w *writer) release(db *sql.DB) error {
	writers.mu.Lock()
	defer writers.mu.Unlock()
	w.refs--
	if w.refs > 0 {
		return nil
	}
	delete(writers.m, db)
	var err error
	if w.wal != nil {
		w.wal.close()
		// No background checkpoint follows the writes of the connection
		// any more: it goes back to the pool checkpointing as it did.
		_, err = w.conn.ExecContext(context.Background(), fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", w.wal.connLimit))
	}
	return errors.Join(err, w.conn.Close())
}
