package sqlitedb_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	csqlite "github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/store"
	ssqlite "github.com/coorflow/coorflow/store/sqlite"
	"github.com/coorflow/coorflow/trace"
	tsqlite "github.com/coorflow/coorflow/trace/sqlite"
)

// TestTheThreeBackendsOnOneHandleNeverMeetInSQLitesLock writes
// checkpoints, store items and recorded runs at once through one handle,
// as the CLI and serve do. The handle's busy timeout is 0: had two
// backends their own writer connections, the second to write while the
// first holds SQLite's lock would fail at once with SQLITE_BUSY. Sharing
// the writer, they queue in Go, and every write succeeds.
func TestTheThreeBackendsOnOneHandleNeverMeetInSQLitesLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coorflow.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)&_journal_mode=WAL&_foreign_keys=1")
	require.NoError(t, err)
	db.SetMaxOpenConns(6)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })

	ctx := t.Context()
	saver, st, traces := csqlite.New(db), ssqlite.New(db), tsqlite.New(db)
	for _, b := range []interface{ Migrate(context.Context) error }{saver, st, traces} {
		require.NoError(t, b.Migrate(ctx))
	}
	t.Cleanup(func() {
		assert.NoError(t, traces.Close())
		assert.NoError(t, st.Close())
		assert.NoError(t, saver.Close())
	})
	_, err = st.Add(ctx, "alice", "mission/r1/progress", "", store.Attrs{})
	require.NoError(t, err)

	const each, steps = 4, 15
	writers := map[string]func(ctx context.Context, g int) error{
		"checkpoint": func(ctx context.Context, g int) error { return writeCheckpoints(ctx, saver, g, steps) },
		"store":      func(ctx context.Context, g int) error { return writeItems(ctx, st, g, steps) },
		"trace":      func(ctx context.Context, g int) error { return recordRun(ctx, traces, g, steps) },
	}
	start := make(chan struct{})
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for name, write := range writers {
		for g := range each {
			wg.Go(func() {
				<-start
				if err := write(ctx, g); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s writer %d: %w", name, g, err))
					mu.Unlock()
				}
			})
		}
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	threads, err := saver.Threads(ctx, graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, each)
	for _, th := range threads {
		assert.Equal(t, steps, th.Checkpoints, th.ID)
	}
	page, err := st.List(ctx, "alice", "memory/", store.ListOptions{Limit: store.MaxListLimit})
	require.NoError(t, err)
	assert.Len(t, page.Items, each*steps)
	progress, err := st.Get(ctx, "alice", "mission/r1/progress")
	require.NoError(t, err)
	assert.Len(t, progress.Content, each*steps, "every read-modify-write of the shared item was kept")
	runs, err := traces.Runs(ctx, trace.RunQuery{})
	require.NoError(t, err)
	require.Len(t, runs, each)
	for _, r := range runs {
		assert.Equal(t, trace.StatusDone, r.Status, r.ID)
		events, err := traces.Events(ctx, r.ID, trace.EventQuery{})
		require.NoError(t, err)
		assert.Len(t, events, steps, r.ID)
	}
}

// writeCheckpoints stores a line of checkpoints with a blob and two task
// records each (one transaction each) in a thread of its own.
func writeCheckpoints(ctx context.Context, s graph.Saver, g, steps int) error {
	thread, parent := fmt.Sprintf("t%d", g), ""
	for i := range steps {
		id := fmt.Sprintf("%s-c%02d", thread, i)
		blob := graph.Blob{Channel: "messages", Version: id, Data: []byte(id)}
		cp := graph.CheckpointRecord{Thread: thread, ID: id, ParentID: parent, Step: i}
		if err := s.PutCheckpoint(ctx, cp, []graph.Blob{blob}); err != nil {
			return err
		}
		recs := []graph.TaskRecord{{TaskID: "a", Kind: "result", Data: []byte("1")}, {TaskID: "b", Kind: "result", Data: []byte("2")}}
		if err := s.PutTaskRecords(ctx, graph.CheckpointRef{Thread: thread, ID: id}, recs); err != nil {
			return err
		}
		parent = id
	}
	return nil
}

// writeItems adds items of its own and appends to one item every writer
// edits, retrying on a conflict.
func writeItems(ctx context.Context, s store.Store, g, steps int) error {
	for i := range steps {
		if _, err := s.Add(ctx, "alice", fmt.Sprintf("memory/w%d/%02d", g, i), "x", store.Attrs{}); err != nil {
			return err
		}
		for {
			it, err := s.Get(ctx, "alice", "mission/r1/progress")
			if err != nil {
				return err
			}
			_, err = s.Edit(ctx, "alice", "mission/r1/progress", store.Replace(it.Revision, it.Content+"+"))
			var conflict *store.ConflictError
			if errors.As(err, &conflict) {
				continue
			}
			if err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// recordRun records a run of steps events, appended one batch per event.
func recordRun(ctx context.Context, s trace.Store, g, steps int) error {
	at := time.Date(2026, 5, 1, 12, 0, g, 0, time.UTC)
	run := trace.RunInfo{ID: fmt.Sprintf("r%d", g), Status: trace.StatusRunning, Start: trace.StartInput, StartedAt: at}
	if err := s.CreateRun(ctx, run); err != nil {
		return err
	}
	for i := range steps {
		payload, _ := json.Marshal(map[string]int{"step": i})
		e := trace.Event{RunID: run.ID, Seq: int64(i + 1), Kind: "node_end", Path: "g/n", Node: "n", Step: i, Time: at, Payload: payload}
		if err := s.AppendEvents(ctx, []trace.Event{e}); err != nil {
			return err
		}
	}
	run.Status, run.Events, run.EndedAt = trace.StatusDone, int64(steps), &at
	return s.FinishRun(ctx, run)
}
