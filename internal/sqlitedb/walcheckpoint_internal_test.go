package sqlitedb

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// checkpointed makes the background checkpoints of the writers started
// in t report to the returned channel, and each wait until release is
// closed when release is not nil.
func checkpointed(t *testing.T, release <-chan struct{}) <-chan error {
	t.Helper()
	ran := make(chan error, 100)
	walCheckpointed = func(err error) {
		ran <- err
		if release != nil {
			<-release
		}
	}
	t.Cleanup(func() { walCheckpointed = nil })
	return ran
}

// writeShare returns a Share of a new database file with a table t, the
// file's path, and a function that inserts a row through the writer.
func writeShare(t *testing.T) (*Share, string, func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wal.db")
	db, err := Open(path, Options{})
	require.NoError(t, err)
	s := NewShare(db, Backend{Setup: func(ctx context.Context, conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `CREATE TABLE t (x BLOB)`)
		return err
	}})
	s.Own()
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	insert := func() {
		conn, err := s.Lock(t.Context())
		require.NoError(t, err)
		defer s.Unlock()
		_, err = conn.ExecContext(t.Context(), `INSERT INTO t (x) VALUES (zeroblob(300))`)
		require.NoError(t, err)
	}
	return s, path, insert
}

func TestTheWALIsCopiedBackInTheBackground(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ran := checkpointed(t, nil)
	s, path, insert := writeShare(t)
	conn, err := s.Lock(t.Context())
	require.NoError(t, err)
	var limit int
	require.NoError(t, conn.QueryRowContext(t.Context(), `PRAGMA wal_autocheckpoint`).Scan(&limit))
	s.Unlock()
	assert.Equal(t, walHardLimit, limit, "the writer checkpoints the log itself only far beyond walFrames")

	before := size(t, path)
	// Writes go on until the first checkpoint has run, which the tenth
	// write wakes.
	for checkpointed := false; !checkpointed; {
		insert()
		select {
		case err := <-ran:
			require.NoError(t, err)
			checkpointed = true
		default:
		}
	}
	assert.Greater(t, size(t, path), before+10*300, "the first ten rows were copied into the database file")
	require.NoError(t, s.Close())
}

func TestWritesDoNotWaitForTheBackgroundCheckpoint(t *testing.T) {
	release := make(chan struct{})
	ran := checkpointed(t, release)
	_, _, insert := writeShare(t)
	for range 10 {
		insert()
	}
	require.NoError(t, <-ran) // and it waits for release
	for range 1000 {
		insert()
	}
	close(release)
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

func TestCloseDoesNotWaitForAConnectionTheBackgroundCheckpointWaitsFor(t *testing.T) {
	ran := checkpointed(t, nil)
	s, _, insert := writeShare(t)
	insert()
	// The pool holds the writer and one connection more, which a reader
	// takes: the checkpoint the tenth write wakes waits for it.
	s.DB().SetMaxOpenConns(2)
	reader, err := s.DB().Conn(t.Context())
	require.NoError(t, err)
	for range 9 {
		insert()
	}
	for s.DB().Stats().WaitCount == 0 {
		runtime.Gosched()
	}
	// A reader may hold its connection until Close returns: a backend's
	// Lock called meanwhile waits for Close.
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
		require.NoError(t, reader.Close())
		assert.Error(t, <-ran, "the checkpoint was given up")
	case <-time.After(time.Minute):
		require.NoError(t, reader.Close())
		<-closed
		t.Fatal("Close waits for the connection the reader holds")
	}
}

func TestACheckpointThatCouldNotReadTheLogLeavesTheCadenceAlone(t *testing.T) {
	var c walCheckpointer
	c.learn(100, 500) // 100 writes added 500 frames: 5 a write
	assert.EqualValues(t, 200, c.every.Load(), "a checkpoint every 1,000 frames")
	c.learn(100, -1) // another checkpoint held the log: (1, -1, -1)
	assert.EqualValues(t, 200, c.every.Load())
	c.learn(100, 1000) // the next one reads 500 frames more
	assert.EqualValues(t, 200, c.every.Load(), "counted from the last size read, not from -1")
}
