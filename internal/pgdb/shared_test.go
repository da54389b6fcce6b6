package pgdb_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cpostgres "github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/store"
	spostgres "github.com/coorflow/coorflow/store/postgres"
	"github.com/coorflow/coorflow/trace"
	tpostgres "github.com/coorflow/coorflow/trace/postgres"
)

// TestTheThreeBackendsShareOnePool writes checkpoints, store items and
// recorded runs at once through one pool of two connections, as the CLI
// and serve do with one pool per database: no backend holds a connection
// while it waits for another, so none waits forever, and every write
// succeeds.
func TestTheThreeBackendsShareOnePool(t *testing.T) {
	schema := pgtest.Schema(t, pgtest.Pool(t), "coorflow_pgdb_test_")
	pool, err := pgdb.Open(t.Context(), withParam(pgtest.URL(), "pool_max_conns=2"))
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	ctx := t.Context()
	saver := cpostgres.New(pool, cpostgres.WithSchema(schema))
	st := spostgres.New(pool, spostgres.WithSchema(schema))
	traces := tpostgres.New(pool, tpostgres.WithSchema(schema))
	t.Cleanup(func() { assert.NoError(t, traces.Close()) }) // before the pool's
	for _, b := range []interface{ Migrate(context.Context) error }{saver, st, traces} {
		require.NoError(t, b.Migrate(ctx))
	}
	_, err = st.Add(ctx, "alice", "mission/r1/progress", "", store.Attrs{})
	require.NoError(t, err)

	const each, steps = 3, 10
	start := make(chan struct{})
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for g := range each {
		for name, write := range map[string]func() error{
			"checkpoint": func() error { return writeCheckpoints(ctx, saver, g, steps) },
			"store":      func() error { return appendToItem(ctx, st, steps) },
			"trace":      func() error { return recordRun(ctx, traces, g, steps) },
		} {
			wg.Go(func() {
				<-start
				if err := write(); err != nil {
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
	progress, err := st.Get(ctx, "alice", "mission/r1/progress")
	require.NoError(t, err)
	assert.Len(t, progress.Content, each*steps, "every read-modify-write of the shared item was kept")
	runs, err := traces.Runs(ctx, trace.RunQuery{Status: trace.StatusDone})
	require.NoError(t, err)
	assert.Len(t, runs, each)

	for _, b := range []interface{ Close() error }{traces, st, saver} {
		require.NoError(t, b.Close())
	}
	require.NoError(t, pool.Ping(ctx), "backends given the pool leave it open")
}

// writeCheckpoints stores a line of checkpoints, each with a blob and two
// task records, in a thread of its own.
func writeCheckpoints(ctx context.Context, s graph.Saver, g, steps int) error {
	thread, parent := fmt.Sprintf("t%d", g), ""
	for i := range steps {
		id := fmt.Sprintf("%s-c%02d", thread, i)
		cp := graph.CheckpointRecord{Thread: thread, ID: id, ParentID: parent, Step: i}
		if err := s.PutCheckpoint(ctx, cp, []graph.Blob{{Channel: "messages", Version: id, Data: []byte(id)}}); err != nil {
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

// appendToItem appends to the item every writer edits, retrying on a
// conflict.
func appendToItem(ctx context.Context, s store.Store, steps int) error {
	for range steps {
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

// recordRun records a run of steps events, one batch per event.
func recordRun(ctx context.Context, s trace.Store, g, steps int) error {
	at := time.Date(2026, 5, 1, 12, 0, g, 0, time.UTC)
	run := trace.RunInfo{ID: fmt.Sprintf("r%d", g), Status: trace.StatusRunning, Start: trace.StartInput, StartedAt: at}
	if err := s.CreateRun(ctx, run); err != nil {
		return err
	}
	for i := range steps {
		e := trace.Event{RunID: run.ID, Seq: int64(i + 1), Kind: "node_end", Path: "g/n", Step: i, Time: at}
		if err := s.AppendEvents(ctx, []trace.Event{e}); err != nil {
			return err
		}
	}
	run.Status, run.Events, run.EndedAt = trace.StatusDone, int64(steps), &at
	return s.FinishRun(ctx, run)
}
