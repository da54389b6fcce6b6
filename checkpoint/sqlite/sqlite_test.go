package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/savertest"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
)

// open opens a Saver on path and closes it when the test ends.
func open(t testing.TB, path string) *sqlite.Saver {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// rawDB opens path directly, to look at or tamper with what a Saver wrote.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	return db
}

func TestSaver(t *testing.T) {
	savertest.Run(t, func(t *testing.T) graph.Saver {
		return open(t, filepath.Join(t.TempDir(), "checkpoints.db"))
	})
}

func TestOpenConfiguresTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	open(t, path)
	db := rawDB(t, path)
	for pragma, want := range map[string]string{"journal_mode": "wal", "page_size": "1024"} {
		var got string
		require.NoError(t, db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got))
		assert.Equal(t, want, got, pragma)
	}
}

func TestOpenRefusesInMemoryDatabases(t *testing.T) {
	for _, path := range []string{":memory:", "", "file::memory:?cache=shared", "file:x?mode=memory"} {
		_, err := sqlite.Open(t.Context(), path)
		assert.ErrorContains(t, err, "checkpoint/memory", "path %q", path)
	}
}

func TestNewRefusesASingleConnectionDB(t *testing.T) {
	db := rawDB(t, filepath.Join(t.TempDir(), "checkpoints.db"))
	db.SetMaxOpenConns(1)
	s := sqlite.New(db)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	_, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	assert.ErrorContains(t, err, "one connection")
}

func TestSaverOnCallerOwnedDB(t *testing.T) {
	savertest.Run(t, func(t *testing.T) graph.Saver {
		path := filepath.Join(t.TempDir(), "checkpoints.db")
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, db.Close()) })
		s := sqlite.New(db)
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		return s
	})
}

func TestNewCreatesSchemaOnFirstUseAndLeavesDBOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	db := rawDB(t, path)
	s := sqlite.New(db)

	var tables int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE type = 'table'`).Scan(&tables))
	assert.Zero(t, tables, "New does no I/O")

	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	assert.Empty(t, threads)
	var version int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT max(version) FROM checkpoint_schema`).Scan(&version))
	assert.Equal(t, 2, version)

	require.NoError(t, s.Close())
	require.NoError(t, db.PingContext(t.Context()), "Close leaves a caller-owned db open")
	_, err = s.Threads(t.Context(), graph.ThreadListOptions{})
	assert.ErrorContains(t, err, "closed")
}

func TestDataSurvivesReopening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	cp := graph.CheckpointRecord{Thread: "t", ID: "c1", Step: 3, Source: graph.SourceLoop, Meta: []byte("meta")}
	blob := graph.Blob{Channel: "messages", Version: "2", Base: "1", Data: []byte("delta")}
	rec := graph.TaskRecord{TaskID: "a", Kind: "result", Key: "k", Data: []byte("done")}
	ref := graph.CheckpointRef{Thread: "t", ID: "c1"}

	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, s.PutCheckpoint(t.Context(), cp, []graph.Blob{blob}))
	require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{rec}))
	require.NoError(t, s.Close())

	s = open(t, path)
	got, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t"})
	require.NoError(t, err)
	got.Created = cp.Created
	assert.Equal(t, cp, got)
	blobs, err := s.Blobs(t.Context(), "t", "", []string{"messages"})
	require.NoError(t, err)
	assert.Equal(t, []graph.Blob{blob}, blobs)
	recs, err := s.TaskRecords(t.Context(), ref)
	require.NoError(t, err)
	assert.Equal(t, []graph.TaskRecord{rec}, recs)
	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, 1)
	assert.Equal(t, 1, threads[0].Checkpoints)
}

func TestCorruptRowIsAnError(t *testing.T) {
	ref := graph.CheckpointRef{Thread: "t", ID: "c1"}
	tests := []struct {
		name   string
		tamper string
		read   func(t *testing.T, s *sqlite.Saver) error
	}{
		{"StepIsText", `UPDATE checkpoints SET step = 'three'`, getCheckpoint(ref)},
		{"CreatedIsText", `UPDATE checkpoints SET created_us = 'yesterday'`, getCheckpoint(graph.CheckpointRef{Thread: "t"})},
		{"MetaIsANumber", `UPDATE checkpoints SET meta = 42`, func(t *testing.T, s *sqlite.Saver) error {
			_, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
			return err
		}},
		{"BlobDataIsANumber", `UPDATE checkpoint_blobs SET data = 7`, func(t *testing.T, s *sqlite.Saver) error {
			_, err := s.Blobs(t.Context(), "t", "", []string{"messages"})
			return err
		}},
		{"TaskDataIsANumber", `UPDATE checkpoint_tasks SET data = 7`, func(t *testing.T, s *sqlite.Saver) error {
			_, err := s.TaskRecords(t.Context(), ref)
			return err
		}},
		{"ThreadCreatedIsText", `UPDATE checkpoint_heads SET created_us = 'long ago'`, func(t *testing.T, s *sqlite.Saver) error {
			_, err := s.Threads(t.Context(), graph.ThreadListOptions{})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints.db")
			s := open(t, path)
			require.NoError(t, s.PutCheckpoint(t.Context(), graph.CheckpointRecord{Thread: "t", ID: "c1", Meta: []byte("m")},
				[]graph.Blob{{Channel: "messages", Version: "1", Data: []byte("d")}}))
			require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{{TaskID: "a", Data: []byte("r")}}))

			_, err := rawDB(t, path).ExecContext(t.Context(), tc.tamper)
			require.NoError(t, err)

			err = tc.read(t, s)
			require.Error(t, err)
			assert.NotErrorIs(t, err, graph.ErrNotFound)
			assert.ErrorContains(t, err, "corrupt")
			assert.Regexp(t, `^sqlite: `, err.Error())
		})
	}
}

// getCheckpoint returns a read that gets ref.
func getCheckpoint(ref graph.CheckpointRef) func(t *testing.T, s *sqlite.Saver) error {
	return func(t *testing.T, s *sqlite.Saver) error {
		_, err := s.GetCheckpoint(t.Context(), ref)
		return err
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = rawDB(t, path).ExecContext(t.Context(), `INSERT INTO checkpoint_schema (version) VALUES (7)`)
	require.NoError(t, err)

	_, err = sqlite.Open(t.Context(), path)
	require.ErrorIs(t, err, sqlite.ErrSchemaTooNew)
	assert.ErrorContains(t, err, "version 7")

	_, err = sqlite.New(rawDB(t, path)).GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t"})
	require.ErrorIs(t, err, sqlite.ErrSchemaTooNew)
}

func TestMissingTableIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = rawDB(t, path).ExecContext(t.Context(), `DROP TABLE checkpoint_blobs`)
	require.NoError(t, err)

	_, err = sqlite.Open(t.Context(), path)
	require.Error(t, err)
	assert.ErrorContains(t, err, "checkpoint_blobs")
}

func TestWritersOfTwoSaversOnOneFileNeverSeeBusy(t *testing.T) {
	// Two Savers on one file stand for two processes: each has its own
	// connections, so only SQLite's lock and the busy timeout keep them
	// apart.
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	savers := []*sqlite.Saver{open(t, path), open(t, path)}
	const goroutines, puts = 8, 20
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			s := savers[g%len(savers)]
			// Each goroutine writes a line of its own namespace.
			thread, ns, parent := fmt.Sprintf("t%d", g%3), fmt.Sprintf("g%d", g), ""
			for i := range puts {
				id := fmt.Sprintf("g%d-%d", g, i)
				blob := graph.Blob{Channel: "messages", Version: id, Data: []byte(id)}
				cp := graph.CheckpointRecord{Thread: thread, NS: ns, ID: id, ParentID: parent}
				if err := s.PutCheckpoint(t.Context(), cp, []graph.Blob{blob}); err != nil {
					errs <- err
					return
				}
				parent = id
				if _, err := s.ListCheckpoints(t.Context(), thread, ns, graph.ListOptions{Limit: 3}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		require.NoError(t, <-errs)
	}
	threads, err := savers[0].Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	total := 0
	for _, th := range threads {
		total += th.Checkpoints
	}
	assert.Equal(t, goroutines*puts, total)
}

func TestTwoSaversOnOneFileLetOneWriterAdvanceAThread(t *testing.T) {
	// Two Savers on one file stand for two processes that continue the
	// same thread from the same checkpoint, with and without blobs.
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	savers := []*sqlite.Saver{open(t, path), open(t, path)}
	require.NoError(t, savers[0].PutCheckpoint(t.Context(), graph.CheckpointRecord{Thread: "t", ID: "c0"}, nil))
	const goroutines = 8
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			id := fmt.Sprintf("g%d", g)
			var blobs []graph.Blob
			if g%4 < 2 {
				blobs = []graph.Blob{{Channel: "messages", Version: id, Data: []byte(id)}}
			}
			cp := graph.CheckpointRecord{Thread: "t", ID: id, ParentID: "c0"}
			errs[g] = savers[g%len(savers)].PutCheckpoint(t.Context(), cp, blobs)
		})
	}
	wg.Wait()

	won := ""
	for g, err := range errs {
		if err == nil {
			require.Empty(t, won, "two writers advanced the thread")
			won = fmt.Sprintf("g%d", g)
		}
	}
	require.NotEmpty(t, won, "no writer advanced the thread: %v", errs)
	for _, err := range errs {
		if err != nil {
			var conflict *graph.CheckpointConflictError
			require.ErrorAs(t, err, &conflict)
			assert.Equal(t, graph.CheckpointConflictError{Thread: "t", Expected: "c0", Newest: won}, *conflict)
		}
	}
	list, err := savers[1].ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{won, "c0"}, []string{list[0].ID, list[1].ID})
	assert.Len(t, list, 2)
	blobs, err := savers[0].Blobs(t.Context(), "t", "", []string{"messages"})
	require.NoError(t, err)
	for _, b := range blobs {
		assert.Equal(t, won, b.Version, "only the winner's blobs are stored")
	}
}

// cancelledAfter is a context whose Err reports cancellation from its
// second call on: a write sees it live when it starts and cancelled before
// it commits.
type cancelledAfter struct {
	context.Context
	calls int
}

func (c *cancelledAfter) Err() error {
	c.calls++
	if c.calls > 1 {
		return context.Canceled
	}
	return nil
}

func TestContextCancelledDuringAWriteLeavesNothing(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "checkpoints.db"))
	require.NoError(t, s.PutCheckpoint(t.Context(), graph.CheckpointRecord{Thread: "t", ID: "c1"}, nil))

	ctx := &cancelledAfter{Context: t.Context()}
	err := s.PutCheckpoint(ctx, graph.CheckpointRecord{Thread: "t", ID: "c2", ParentID: "c1"}, []graph.Blob{{Channel: "messages", Version: "2"}})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 2, ctx.calls, "the write began, then saw the cancellation")

	list, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list, 1)
	blobs, err := s.Blobs(t.Context(), "t", "", []string{"messages"})
	require.NoError(t, err)
	assert.Empty(t, blobs)
	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, 1)
	assert.Equal(t, 1, threads[0].Checkpoints)

	ctx = &cancelledAfter{Context: t.Context()}
	recs := []graph.TaskRecord{{TaskID: "a"}, {TaskID: "b"}}
	require.ErrorIs(t, s.PutTaskRecords(ctx, graph.CheckpointRef{Thread: "t", ID: "c1"}, recs), context.Canceled)
	got, err := s.TaskRecords(t.Context(), graph.CheckpointRef{Thread: "t", ID: "c1"})
	require.NoError(t, err)
	assert.Empty(t, got)
}
