package temporalrun_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/temporalrun"
)

// TestAStepOnAnotherWorkerReadsTheSaver: each worker keeps the state of
// the checkpoints its steps stored; a step that continues one of them on
// that worker starts from it, a step on another worker, or after a
// checkpoint another worker stored, reads the thread from the saver.
func TestAStepOnAnotherWorkerReadsTheSaver(t *testing.T) {
	e := newEnv(t)
	mine := graph.NewStateCache(graph.StateCacheConfig{})
	e.graphs.CacheStates(mine)
	e.startWorker(e.queue, false)
	r := chain("cache-"+randomHex(), 5)
	other := "other-" + randomHex()
	theirs := graph.NewStateCache(graph.StateCacheConfig{})
	graphs := temporalrun.NewGraphs(e.saver, r).StreamTo(e.events).CacheStates(theirs)
	w, err := temporalrun.NewWorker(e.client, temporalrun.WorkerConfig{TaskQueue: other, Graphs: graphs, StepsOnly: true, Options: workerOptions()})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run := e.runner(r, func(c *temporalrun.Config) { c.NodeQueues = map[string]string{"n02": other} })
	res, err := run.Invoke(t.Context(), graph.Input(), graph.Thread("cache-"+randomHex()))
	require.NoError(t, err)
	assert.Equal(t, []string{"n00@" + e.queue, "n01@" + e.queue, "n02@" + other, "n03@" + e.queue, "n04@" + e.queue},
		callLog.Get(res.State))
	// n00 applies the input and names no checkpoint; n01 and n04 continue
	// one this worker stored; n03 continues n02's, stored by the other
	// worker, which had not seen n01's.
	got := mine.Stats()
	assert.Equal(t, [2]int64{2, 1}, [2]int64{got.Hits, got.Misses}, "this worker's hits and misses")
	got = theirs.Stats()
	assert.Equal(t, [2]int64{0, 1}, [2]int64{got.Hits, got.Misses}, "the other worker's hits and misses")
}

// TestALocalStepLongerThanTheWorkflowTaskTimeout: a local step runs
// inside its workflow task, whose timeout is the heartbeat timeout; a
// node that runs several times as long (held until the history shows the
// worker kept its workflow task alive twice) ends normally, once, and
// the run goes on.
func TestALocalStepLongerThanTheWorkflowTaskTimeout(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	entered, gate := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	g := graph.New("long-"+randomHex(), callLog)
	for _, node := range []string{"first", "long", "last"} {
		g.AddNode(node, func(ctx context.Context, s graph.State) (graph.Command, error) {
			if node == "long" {
				runs.Add(1)
				close(entered)
				select {
				case <-gate:
				case <-ctx.Done():
					return graph.Command{}, ctx.Err()
				}
			}
			return graph.Update(graph.AppendTo(callLog, node)), nil
		})
	}
	g.AddEdge(graph.Start, "first")
	g.AddEdge("first", "long")
	g.AddEdge("long", "last")
	g.AddEdge("last", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	const timeout = 2 * time.Second
	run := e.runner(r, func(c *temporalrun.Config) { c.HeartbeatTimeout = timeout })
	thread := "long-" + randomHex()
	done := make(chan error, 1)
	var res graph.Result
	go func() {
		var err error
		res, err = run.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
		done <- err
	}()
	<-entered
	held := time.Now()
	// The SDK completes the workflow task at 80% of its timeout, to keep
	// it alive while the local step runs: two of those since the node
	// started, and it has outlived the timeout.
	base := count(history(t, e.client, thread), enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
	require.Eventually(t, func() bool {
		return count(history(t, e.client, thread), enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) >= base+2
	}, time.Minute, 100*time.Millisecond, "the worker keeps the workflow task alive")
	assert.Greater(t, time.Since(held), timeout, "the step has run longer than the workflow task timeout")
	close(gate)
	require.NoError(t, <-done)
	assert.Equal(t, []string{"first", "long", "last"}, callLog.Get(res.State))
	assert.EqualValues(t, 1, runs.Load(), "the long step ran once")
	events := history(t, e.client, thread)
	assert.Zero(t, count(events, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT), "no workflow task timed out")
	assert.Zero(t, count(events, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED))
	// Markers: the version of the head read, the head read, then long and
	// last as local steps.
	assert.Equal(t, 4, count(events, enumspb.EVENT_TYPE_MARKER_RECORDED), "long and last ran as local steps: %v", events)
	assert.Equal(t, 1, count(events, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED), "only the step with the input is an activity")
	t.Logf("the long step ran %s against a workflow task timeout of %s", time.Since(held).Round(time.Millisecond), timeout)
}

// failingPut refuses one PutCheckpoint: the n-th.
type failingPut struct {
	graph.Saver
	puts, failAt atomic.Int32
}

func (s *failingPut) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if s.puts.Add(1) == s.failAt.Load() {
		return errors.New("the saver is away")
	}
	return s.Saver.PutCheckpoint(ctx, cp, blobs)
}

// TestAStepRetriedAfterItsSaveFailedReadsTheSaver: a step that started
// from the worker's cached state, ran its node and failed to store its
// checkpoint is retried on the same worker; the retry reads the thread
// from the saver (not the state the failed attempt worked on), and the
// run ends as it would have without the failure — as a local step and
// as an activity.
func TestAStepRetriedAfterItsSaveFailedReadsTheSaver(t *testing.T) {
	e := newEnv(t)
	for _, activities := range []bool{false, true} {
		t.Run(fmt.Sprintf("activities=%v", activities), func(t *testing.T) {
			saver := &failingPut{Saver: e.saver}
			saver.failAt.Store(3) // the input, n00, then n01's
			cache := graph.NewStateCache(graph.StateCacheConfig{})
			r := chain("retry-"+randomHex(), 4)
			queue := "retry-" + randomHex()
			graphs := temporalrun.NewGraphs(saver, r).StreamTo(e.events).CacheStates(cache)
			w, err := temporalrun.NewWorker(e.client, temporalrun.WorkerConfig{TaskQueue: queue, Graphs: graphs, Options: workerOptions()})
			require.NoError(t, err)
			require.NoError(t, w.Start())
			t.Cleanup(w.Stop)
			run := e.runner(r, func(c *temporalrun.Config) { c.TaskQueue, c.ActivitySteps = queue, activities })
			res, err := run.Invoke(t.Context(), graph.Input(), graph.Thread("retry-"+randomHex()))
			require.NoError(t, err)
			assert.Equal(t, []string{"n00@" + queue, "n01@" + queue, "n02@" + queue, "n03@" + queue}, callLog.Get(res.State))
			assert.EqualValues(t, 6, saver.puts.Load(), "n01 stored on its second attempt")
			// n01's first attempt, n02 and n03 started from the cache; the
			// retry of n01 named no checkpoint: it read the saver.
			got := cache.Stats()
			assert.Equal(t, [2]int64{3, 0}, [2]int64{got.Hits, got.Misses}, "hits and misses")
		})
	}
}
