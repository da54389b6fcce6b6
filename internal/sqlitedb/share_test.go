package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/sqlitedb"
)

var errClosed = errors.New("test: closed")

// share returns a Share on db whose Setup creates table and counts its
// calls in *setups.
func share(db *sql.DB, table string, setups *int) *sqlitedb.Share {
	return sqlitedb.NewShare(db, sqlitedb.Backend{
		Setup: func(ctx context.Context, conn *sql.Conn) error {
			*setups++
			_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (x)`)
			return err
		},
		Closed: errClosed,
	})
}

func TestSharesOfOneDatabaseTakeTurnsOnOneWriter(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "x.db"), sqlitedb.Options{})
	var n int
	a, b := share(db, "a", &n), share(db, "b", &n)
	defer a.Close()
	defer b.Close()

	conn, err := a.Lock(t.Context())
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = b.Lock(cancelled)
	require.ErrorIs(t, err, context.Canceled, "b waits while a holds the writer")
	a.Unlock()

	connB, err := b.Lock(t.Context())
	require.NoError(t, err)
	assert.Same(t, conn, connB, "one writer connection")
	b.Unlock()
	assert.Equal(t, 2, n, "each backend set itself up")
}

func TestSharesOfTwoHandlesHaveTheirOwnWriters(t *testing.T) {
	// Two handles on one file stand for two processes: they meet in
	// SQLite's lock, not in the Share's.
	path := filepath.Join(t.TempDir(), "x.db")
	var n int
	a := share(open(t, path, sqlitedb.Options{}), "a", &n)
	b := share(open(t, path, sqlitedb.Options{}), "b", &n)
	defer a.Close()
	defer b.Close()
	connA, err := a.Lock(t.Context())
	require.NoError(t, err)
	defer a.Unlock()
	connB, err := b.Lock(t.Context())
	require.NoError(t, err)
	defer b.Unlock()
	assert.NotSame(t, connA, connB)
}

func TestTheLastShareToCloseGivesTheWriterBack(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "x.db"), sqlitedb.Options{})
	var n int
	a, b := share(db, "a", &n), share(db, "b", &n)
	require.NoError(t, a.Init(t.Context()))
	require.NoError(t, b.Init(t.Context()))
	assert.Equal(t, 1, db.Stats().InUse, "one writer for both")

	require.NoError(t, a.Close())
	assert.Equal(t, 1, db.Stats().InUse, "b still writes")
	_, err := b.Lock(t.Context())
	require.NoError(t, err)
	b.Unlock()
	_, err = a.Lock(t.Context())
	require.ErrorIs(t, err, errClosed)

	require.NoError(t, b.Close())
	assert.Zero(t, db.Stats().InUse, "the writer is back in the pool")
	require.NoError(t, db.PingContext(t.Context()), "a Share that does not own the database leaves it open")

	c := share(db, "c", &n)
	defer c.Close()
	_, err = c.Lock(t.Context())
	require.NoError(t, err, "a new Share takes a new writer")
	c.Unlock()
}

func TestAShareThatOwnsTheDatabaseClosesIt(t *testing.T) {
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "x.db"), sqlitedb.Options{})
	require.NoError(t, err)
	var n int
	s := share(db, "a", &n)
	s.Own()
	require.NoError(t, s.Init(t.Context()))
	require.NoError(t, s.Close())
	assert.ErrorContains(t, db.PingContext(t.Context()), "database is closed")
	require.NoError(t, s.Close(), "a second Close does nothing")
	assert.ErrorIs(t, s.Init(t.Context()), errClosed)
}

func TestAFailedSetupIsTriedAgain(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "x.db"), sqlitedb.Options{})
	fail := errors.New("setup failed")
	setups, teardowns := 0, 0
	s := sqlitedb.NewShare(db, sqlitedb.Backend{
		Setup: func(context.Context, *sql.Conn) error {
			setups++
			if setups == 1 {
				return fail
			}
			return nil
		},
		Teardown: func() error { teardowns++; return nil },
		Closed:   errClosed,
	})
	_, err := s.Lock(t.Context())
	require.ErrorIs(t, err, fail)
	assert.Equal(t, 1, teardowns, "what the failed setup left is closed")
	assert.Zero(t, db.Stats().InUse, "the writer is given back")

	_, err = s.Lock(t.Context())
	require.NoError(t, err)
	s.Unlock()
	require.NoError(t, s.Close())
	assert.Equal(t, 2, setups)
	assert.Equal(t, 2, teardowns, "Close tears down")
}

func TestADatabaseOfOneConnectionIsRefused(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "x.db"), sqlitedb.Options{})
	db.SetMaxOpenConns(1)
	var n int
	s := share(db, "a", &n)
	defer s.Close()
	err := s.Init(t.Context())
	assert.EqualError(t, err, "sqlite: the database allows one connection; its backends need one for writing and more for reading")
	assert.Zero(t, n)
}

func TestTheWriterHasForeignKeysOn(t *testing.T) {
	// A database the caller opened without them.
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "x.db"))
	require.NoError(t, err)
	defer db.Close()
	var n int
	s := share(db, "a", &n)
	defer s.Close()
	conn, err := s.Lock(t.Context())
	require.NoError(t, err)
	defer s.Unlock()
	var on int
	require.NoError(t, conn.QueryRowContext(t.Context(), `PRAGMA foreign_keys`).Scan(&on))
	assert.Equal(t, 1, on)
}

// TestTheWriterGoesBackToThePoolAsItCame: a database the caller opened
// keeps its connections' WAL checkpoint cadence once the last backend on
// it closed; the writer's, moved to the background, is SQLite's again.
func TestTheWriterGoesBackToThePoolAsItCame(t *testing.T) {
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "db"), sqlitedb.Options{})
	require.NoError(t, err)
	defer db.Close()
	// Two connections: the writer, and one for the background
	// checkpoints and reads. Both stay in the pool when idle.
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	var setups int
	s := share(db, "t", &setups)
	conn, err := s.Lock(t.Context())
	require.NoError(t, err)
	_, err = conn.ExecContext(t.Context(), `INSERT INTO t (x) VALUES (1)`)
	require.NoError(t, err)
	s.Unlock()
	require.NoError(t, s.Close())

	for i := range 2 { // every connection of the pool, the writer's among them
		c, err := db.Conn(t.Context())
		require.NoError(t, err)
		defer c.Close()
		var limit int
		require.NoError(t, c.QueryRowContext(t.Context(), `PRAGMA wal_autocheckpoint`).Scan(&limit))
		assert.Equal(t, 1000, limit, "connection %d checkpoints the log as SQLite does", i)
	}
}
