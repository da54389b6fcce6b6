package replicas_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// aliceRun is a run of alice's on thread key.
func aliceRun(id, key string) server.SharedRun {
	return server.SharedRun{ID: id, Thread: key, Key: key, Owner: "alice", Workflow: "gate", Request: json.RawMessage(`{}`), CreatedAt: time.Now()}
}

// enqueueAt enqueues n runs on thread key at once, the i-th on
// reps[i%len(reps)], and returns their errors.
func enqueueAt(t *testing.T, reps []*replicas.Replicas, key string, n int) []error {
	t.Helper()
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = reps[i%len(reps)].Enqueue(t.Context(), aliceRun(fmt.Sprintf("late-%d", i), key), runs.Refuse, runs.NoLimits)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// TestAThreadBeingDeletedRefusesRunsOnEveryReplica: CloseThread refuses
// a thread with an open run, and while it deletes one, every replica
// refuses its runs (100 at once) and another deletion, in the step that
// admits them; the thread takes runs again once the deletion returned,
// also when it failed.
func TestAThreadBeingDeletedRefusesRunsOnEveryReplica(t *testing.T) {
	reps, saver := threeReplicas(t)
	const key = "alice/t"
	recordThreads(t, saver, key)
	ctx := t.Context()
	require.NoError(t, reps[0].Enqueue(ctx, aliceRun("open", key), runs.Refuse, runs.NoLimits))
	called := false
	err := reps[1].CloseThread(ctx, "alice", key, func(context.Context) error { called = true; return nil })
	var busy *runs.BusyError
	require.ErrorAs(t, err, &busy)
	assert.Equal(t, runs.BusyError{Thread: key, Run: "open"}, *busy)
	assert.False(t, called, "a thread with an open run is not deleted")
	_, err = reps[2].Cancel(ctx, "open")
	require.NoError(t, err)

	var during []error
	var again error
	err = reps[1].CloseThread(ctx, "alice", key, func(ctx context.Context) error {
		during = enqueueAt(t, reps, key, 100)
		again = reps[2].CloseThread(ctx, "alice", key, func(context.Context) error { called = true; return nil })
		return nil
	})
	require.NoError(t, err)
	for i, err := range during {
		assert.ErrorIs(t, err, runs.ErrThreadClosed, "run %d", i)
	}
	assert.ErrorIs(t, again, runs.ErrThreadClosed, "a second deletion")
	assert.False(t, called)

	boom := errors.New("boom")
	err = reps[0].CloseThread(ctx, "alice", key, func(context.Context) error { return boom })
	assert.Same(t, boom, err, "the deletion's error, as it is")
	require.NoError(t, reps[2].Enqueue(ctx, aliceRun("after", key), runs.Refuse, runs.NoLimits), "the thread takes runs again")
}

// TestAThreadWithoutItsRecordTakesNoRun: a run asked for on a thread
// whose record is gone (deleted after the run read it) is refused in the
// step that admits it.
func TestAThreadWithoutItsRecordTakesNoRun(t *testing.T) {
	reps, _ := threeReplicas(t)
	err := reps[0].Enqueue(t.Context(), aliceRun("r", "alice/gone"), runs.Refuse, runs.NoLimits)
	assert.ErrorIs(t, err, graph.ErrNotFound)
	_, err = reps[1].Run(t.Context(), "r")
	assert.ErrorIs(t, err, graph.ErrNotFound, "the run was not stored")
}

// TestTheMarkOfAReplicaThatDiedExpires: a replica that closed a thread to
// delete it and died (its mark, a lease's time long, is never renewed:
// here a microsecond) does not close it for good: once the mark
// expired, the other replicas admit runs on the thread and delete it. The
// stalled deletion is told that its mark expired (its ctx's cause).
func TestTheMarkOfAReplicaThatDiedExpires(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	saver := postgres.New(pool, postgres.WithSchema(schema))
	var reps []*replicas.Replicas
	for i, ttl := range []time.Duration{time.Microsecond, time.Minute, time.Minute} {
		r, err := replicas.New(pool, replicas.Config{Saver: saver, Name: fmt.Sprintf("r%d", i), LeaseTTL: ttl, Schema: schema})
		require.NoError(t, err)
		require.NoError(t, r.Start(t.Context()))
		t.Cleanup(func() { assert.NoError(t, r.Close()) })
		reps = append(reps, r)
	}
	dead := reps[0]
	const key = "alice/t"
	recordThreads(t, saver, key)

	expired := make(chan error, 1)
	resume := make(chan struct{})
	died := make(chan error, 1)
	go func() {
		died <- dead.CloseThread(t.Context(), "alice", key, func(ctx context.Context) error {
			<-ctx.Done() // its mark could not be renewed in time
			expired <- context.Cause(ctx)
			<-resume // and it never goes on while the test runs
			return nil
		})
	}()
	cause := <-expired
	assert.ErrorContains(t, cause, `replicas: thread "alice/t": replicas: the mark that closed the thread expired before its deletion ended`)

	require.NoError(t, reps[1].Enqueue(t.Context(), aliceRun("after", key), runs.Refuse, runs.NoLimits), "a run on the thread")
	_, err := reps[1].Cancel(t.Context(), "after")
	require.NoError(t, err)
	deleted := false
	require.NoError(t, reps[2].CloseThread(t.Context(), "alice", key, func(context.Context) error { deleted = true; return nil }))
	assert.True(t, deleted, "and its deletion")
	close(resume)
	assert.NoError(t, <-died)
}
