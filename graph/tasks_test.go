package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

var tasksLog = graph.NewKey("log", graph.Append[string]())

// oneNode compiles a graph of one node, fn, called "team" in graph "g".
func oneNode(t *testing.T, fn graph.NodeFunc, opts ...graph.Option) *graph.Runnable {
	t.Helper()
	g := graph.New("g", tasksLog)
	g.AddNode("team", fn)
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile(opts...)
	require.NoError(t, err)
	return r
}

func TestStateListsTheTasksOfAnInterruptedNode(t *testing.T) {
	var ids [][]string
	r := oneNode(t, func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := graph.Schedule(ctx, graph.TaskOptions{}, []graph.Task[string]{
			{Key: "a", Run: func(ctx context.Context) (string, error) { return "A", nil }},
			{Key: "b/1", Run: func(ctx context.Context) (string, error) { return graph.InterruptAs[string](ctx, "b?") }},
			{Key: "c", Run: func(ctx context.Context) (string, error) { return "", errors.New("c broke") }},
		})
		var got []string
		for _, r := range res {
			got = append(got, r.ID)
		}
		ids = append(ids, got)
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(tasksLog, res[0].Value, res[1].Value)), nil
	}, graph.WithSaver(memory.New()))
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status, "a failure that does not stop the call leaves the pause to report")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "g/team/b_1", res.Interrupts[0].Path, "a '/' in a key shows as '_' in the path")

	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 1)
	assert.Equal(t, []graph.NodeTask{
		{Key: "a", Path: "g/team/a", Status: graph.TaskDone},
		{Key: "b/1", Path: "g/team/b_1", Status: graph.TaskInterrupted},
		{Key: "c", Path: "g/team/c", Status: graph.TaskFailed, Error: "c broke"},
	}, snap.Tasks[0].Tasks)

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.ResumeAt("team/b_1", "B"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"A", "B"}, tasksLog.Get(res.State))
	require.Len(t, ids, 2)
	assert.Equal(t, ids[0], ids[1], "a task's id is the same on every run of its node's step")
	assert.NotEqual(t, ids[0][0], ids[0][1])
}

func TestEveryAttemptOfATaskGoesThroughTheTaskExecutor(t *testing.T) {
	var mu sync.Mutex
	var calls []graph.TaskCall
	exec := graph.TaskExecutorFunc(func(ctx context.Context, c graph.TaskCall, run func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
		return run(ctx)
	})
	type value struct{ N int }
	var runs atomic.Int32
	var result graph.TaskResult[value]
	r := oneNode(t, func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := graph.Schedule(ctx, graph.TaskOptions{Retry: graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Nanosecond}},
			[]graph.Task[value]{{Key: "k", Labels: map[string]string{"tier": "reasoning"}, Run: func(ctx context.Context) (value, error) {
				if runs.Add(1) == 1 {
					return value{}, errors.New("once")
				}
				return value{N: 7}, nil
			}}})
		result = res[0]
		return graph.Command{}, err
	}, graph.WithSaver(memory.New()))
	_, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"), graph.WithTaskExecutor(exec))
	require.NoError(t, err)
	assert.Equal(t, value{N: 7}, result.Value, "the value came back as JSON and decoded into the task's type")
	assert.Equal(t, 2, result.Attempts)
	require.Len(t, calls, 2)
	for i, c := range calls {
		assert.NotEmpty(t, c.Checkpoint, "the checkpoint the step runs after")
		assert.Equal(t, graph.TaskCall{ID: result.ID, Key: "k", Node: "team", Label: "team", Path: "g/team/k", Checkpoint: c.Checkpoint,
			Step: 0, Thread: "t", Attempt: i + 1, Labels: map[string]string{"tier": "reasoning"}}, c, "with the task's placement labels")
	}
}

func TestATaskStreamsItsEventsUnderItsPath(t *testing.T) {
	r := oneNode(t, func(ctx context.Context, s graph.State) (graph.Command, error) {
		_, err := graph.Schedule(ctx, graph.TaskOptions{}, []graph.Task[int]{
			{Key: "x", Run: func(ctx context.Context) (int, error) { graph.Emit(ctx, "from x"); return 1, nil }},
			{Key: "y", Deps: []string{"x"}, Run: func(ctx context.Context) (int, error) {
				graph.Emit(graph.WithScope(ctx, "tool"), "from y's tool")
				return 2, nil
			}},
		})
		return graph.Command{}, err
	})
	var got []string
	for ev, err := range r.Stream(t.Context(), graph.Input(), graph.Events(graph.EventCustom, graph.EventNodeEnd)) {
		require.NoError(t, err)
		got = append(got, ev.Kind.String()+" "+ev.Path)
	}
	assert.Equal(t, []string{"custom g/team/x", "custom g/team/y/tool", "node_end g/team"}, got,
		"each task's events under its path, before its node's end")
}

func TestAValueThatFailsIsJournaledAndNotRunAgain(t *testing.T) {
	var runs atomic.Int32
	var statuses [][]graph.TaskStatus
	r := oneNode(t, func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := graph.Schedule(ctx, graph.TaskOptions{}, []graph.Task[string]{
			{Key: "agent", Run: func(ctx context.Context) (string, error) { runs.Add(1); return "could not", nil },
				Fails: func(v string) error { return errors.New("the agent " + v) }},
			{Key: "after", Deps: []string{"agent"}, Run: func(ctx context.Context) (string, error) { return "", nil }},
			{Key: "ask", Run: func(ctx context.Context) (string, error) { return graph.InterruptAs[string](ctx, "?") }},
		})
		var st []graph.TaskStatus
		for _, r := range res {
			st = append(st, r.Status)
		}
		statuses = append(statuses, st)
		if err != nil {
			return graph.Command{}, err
		}
		assert.EqualError(t, res[0].Err, "the agent could not")
		assert.Equal(t, "could not", res[0].Value)
		return graph.Command{}, nil
	}, graph.WithSaver(memory.New()))
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("go"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	want := []graph.TaskStatus{graph.TaskFailed, graph.TaskSkipped, graph.TaskInterrupted}
	assert.Equal(t, [][]graph.TaskStatus{want, {graph.TaskFailed, graph.TaskSkipped, graph.TaskDone}}, statuses)
	assert.Equal(t, int32(1), runs.Load(), "the failed value was read back from the journal")
}

func TestScheduleOutsideANodeJournalsNothing(t *testing.T) {
	var runs atomic.Int32
	tasks := []graph.Task[int]{{Key: "a", Run: func(ctx context.Context) (int, error) { return int(runs.Add(1)), nil }}}
	for range 2 {
		res, err := graph.Schedule(t.Context(), graph.TaskOptions{}, tasks)
		require.NoError(t, err)
		assert.Equal(t, "a", res[0].ID, "outside a node, a task's id is its key")
	}
	assert.Equal(t, int32(2), runs.Load())
}

func TestAKeyScheduledTwiceInANodeKeepsItsCallsApart(t *testing.T) {
	var calls atomic.Int32
	var got []string
	r := oneNode(t, func(ctx context.Context, s graph.State) (graph.Command, error) {
		got = got[:0]
		for round := range 2 {
			res, err := graph.Schedule(ctx, graph.TaskOptions{}, []graph.Task[string]{{Key: "k", Run: func(ctx context.Context) (string, error) {
				_, err := graph.Do(ctx, "model", func(context.Context) (int32, error) { return calls.Add(1), nil })
				if err != nil || round == 0 {
					return "", err
				}
				_, err = graph.InterruptAs[string](ctx, "?")
				return "", err
			}}})
			got = append(got, res[0].Value)
			if err != nil {
				return graph.Command{}, err
			}
		}
		return graph.Command{}, nil
	}, graph.WithSaver(memory.New()))
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	_, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("go"))
	require.NoError(t, err)
	assert.Equal(t, int32(2), calls.Load(), "each round's call was made once: the second round's did not replay the first's")
}

// TestATaskRunsApartFromItsNodeWithRunScheduled sends every task to
// RunScheduled, as a runner that runs each task on a worker of its own
// does: the closures the node gave Schedule are never called by the
// node's own run.
func TestATaskRunsApartFromItsNodeWithRunScheduled(t *testing.T) {
	saver := memory.New()
	var mu sync.Mutex
	runs := map[string]int{}
	var nodeCalls atomic.Int32
	var r *graph.Runnable
	var remote []string // the events the tasks' runs streamed
	exec := graph.TaskExecutorFunc(func(ctx context.Context, c graph.TaskCall, _ func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
		return r.RunScheduled(ctx, c, graph.WithSaver(saver), graph.Thread("t"), graph.StreamTo(func(ev graph.Event) bool {
			mu.Lock()
			remote = append(remote, ev.Kind.String()+" "+ev.Path)
			mu.Unlock()
			return true
		}))
	})
	r = oneNode(t, func(ctx context.Context, s graph.State) (graph.Command, error) {
		nodeCalls.Add(1)
		graph.Emit(ctx, "the node's own event")
		run := func(key string) func(ctx context.Context) (string, error) {
			return func(ctx context.Context) (string, error) {
				mu.Lock()
				runs[key]++
				mu.Unlock()
				graph.Emit(ctx, "from "+key)
				if key != "c" {
					return key + "!", nil
				}
				v, err := graph.InterruptAs[string](ctx, "c?")
				return key + "!" + v, err
			}
		}
		var seen []string
		res, err := graph.Schedule(ctx, graph.TaskOptions{}, []graph.Task[string]{
			{Key: "a", Run: run("a"), Done: func(v string) { seen = append(seen, v) }},
			{Key: "b", Deps: []string{"a"}, Run: func(ctx context.Context) (string, error) {
				if len(seen) != 1 {
					return "", errors.New("b ran before a's Done")
				}
				return run("b")(ctx)
			}},
			{Key: "c", Run: run("c")},
		})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(tasksLog, res[0].Value, res[1].Value, res[2].Value)), nil
	}, graph.WithSaver(saver))
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"), graph.WithTaskExecutor(exec))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "g/team/c", res.Interrupts[0].Path)
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, runs)
	assert.Equal(t, int32(4), nodeCalls.Load(), "the node's run, and one run per task")
	assert.ElementsMatch(t, []string{"custom g/team/a", "custom g/team/b", "custom g/team/c"}, remote,
		"a task's run streams the task's events only")

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("yes"), graph.WithTaskExecutor(exec))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"a!", "b!", "c!yes"}, tasksLog.Get(res.State))
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 2}, runs, "done tasks were journaled; c ran again with its answer")
}

func TestRunScheduledMakesNoCallItsNodeDidNotJournal(t *testing.T) {
	saver := memory.New()
	var sideEffects atomic.Int32
	var r *graph.Runnable
	var remoteErr error
	exec := graph.TaskExecutorFunc(func(ctx context.Context, c graph.TaskCall, run func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
		_, remoteErr = r.RunScheduled(ctx, c, graph.WithSaver(saver), graph.Thread(c.Thread))
		return run(ctx)
	})
	r = oneNode(t, func(ctx context.Context, s graph.State) (graph.Command, error) {
		// A node that swallows Schedule's error and makes a call after it.
		_, _ = graph.Schedule(ctx, graph.TaskOptions{}, []graph.Task[int]{{Key: "k", Run: func(context.Context) (int, error) { return 1, nil }}})
		_, err := graph.Do(ctx, "effect", func(context.Context) (int32, error) { return sideEffects.Add(1), nil })
		return graph.Command{}, err
	}, graph.WithSaver(saver))
	_, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"), graph.WithTaskExecutor(exec))
	require.NoError(t, err)
	assert.Equal(t, int32(1), sideEffects.Load(), "only the node's own run made the call")
	require.NoError(t, remoteErr, "the task's run returned its value")
}
