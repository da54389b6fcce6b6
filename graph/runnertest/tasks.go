package runnertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// The cases of tasks inside a node (graph.Schedule): a node starts work
// at run time, and the runner keeps each task's value across the node's
// runs (resume, retry, continue after a cancel) without running it again.

// taskNode returns a node that schedules tasks and appends their values,
// in task order, to the log; a task that did not finish fails the node
// with Schedule's error, or with its own.
func taskNode(opts graph.TaskOptions, tasks func() []graph.Task[string]) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := graph.Schedule(ctx, opts, tasks())
		if err != nil {
			return graph.Command{}, err
		}
		var errs []error
		var out []string
		for _, r := range res {
			if r.Status != graph.TaskDone {
				errs = append(errs, fmt.Errorf("task %s: %s: %w", r.Key, r.Status, r.Err))
				continue
			}
			out = append(out, r.Value)
		}
		if err := errors.Join(errs...); err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, out...)), nil
	}
}

func taskFanOut(t *testing.T, e *env) {
	const width, limit = 6, 2
	var inFlight, most atomic.Int32
	name := e.name("tasks-fan")
	g := graph.New(name, logKey)
	g.AddNode("team", taskNode(graph.TaskOptions{Limit: limit}, func() []graph.Task[string] {
		// What the node's Done hooks gather, per run of the node (a
		// runner may run it again to run one task apart, see
		// graph.RunScheduled).
		var mu sync.Mutex
		var doneOrder []string
		var tasks []graph.Task[string]
		var all []string
		for i := range width {
			key := fmt.Sprintf("t%d", i)
			all = append(all, key)
			tasks = append(tasks, graph.Task[string]{Key: key, Run: func(ctx context.Context) (string, error) {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				return key + "@" + graph.PathOf(ctx), nil
			}, Done: func(string) {
				mu.Lock()
				doneOrder = append(doneOrder, key)
				mu.Unlock()
			}})
		}
		tasks = append(tasks, graph.Task[string]{Key: "sum", Deps: all, Run: func(ctx context.Context) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprintf("sum after %d", len(doneOrder)), nil
		}})
		return tasks
	}), graph.StartsTasks())
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(), o...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	logs := logKey.Get(res.State)
	require.Len(t, logs, width+1)
	for i := range width {
		assert.Equal(t, fmt.Sprintf("t%d@%s/team/t%d", i, name, i), logs[i], "values in task order; each task runs under its own path")
	}
	assert.Equal(t, fmt.Sprintf("sum after %d", width), logs[width], "a task starts once its dependencies are done")
	assert.LessOrEqual(t, most.Load(), int32(limit), "never more tasks in flight than the limit")
}

func taskInterrupt(t *testing.T, e *env) {
	var askRuns, otherRuns atomic.Int32
	name := e.name("tasks-ask")
	g := graph.New(name, logKey)
	g.AddNode("team", taskNode(graph.TaskOptions{}, func() []graph.Task[string] {
		ask := func(key string) graph.Task[string] {
			return graph.Task[string]{Key: key, Run: func(ctx context.Context) (string, error) {
				askRuns.Add(1)
				v, err := graph.InterruptAs[string](ctx, "question from "+key)
				return key + "=" + v, err
			}}
		}
		return []graph.Task[string]{ask("p"), ask("q"),
			{Key: "other", Run: func(ctx context.Context) (string, error) { otherRuns.Add(1); return "other", nil }},
			{Key: "after-p", Deps: []string{"p"}, Run: func(ctx context.Context) (string, error) { return "after-p", nil }},
		}
	}), graph.StartsTasks())
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(), o...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2, "both tasks' questions pause the node together")
	paths := []string{res.Interrupts[0].Path, res.Interrupts[1].Path}
	assert.Equal(t, []string{name + "/team/p", name + "/team/q"}, paths, "in task order, each at its task's path")

	res, err = run.Invoke(t.Context(), nil, opts(o, graph.ResumeAt("team/q", "no"))...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status, "p is still waiting")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, name+"/team/p", res.Interrupts[0].Path)

	res, err = run.Invoke(t.Context(), nil, opts(o, graph.ResumeAt("team/p", "yes"))...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"p=yes", "q=no", "other", "after-p"}, logKey.Get(res.State))
	assert.Equal(t, int32(1), otherRuns.Load(), "a done task does not run again when its node resumes")
	assert.Equal(t, int32(5), askRuns.Load(), "p ran three times, q twice: once more for each answer it waited on")
}

func taskRetries(t *testing.T, e *env) {
	var okRuns, flakyRuns, brokenRuns atomic.Int32
	retry := graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Nanosecond}
	name := e.name("tasks-retry")
	g := graph.New(name, logKey)
	g.AddNode("team", taskNode(graph.TaskOptions{Retry: retry}, func() []graph.Task[string] {
		return []graph.Task[string]{
			{Key: "ok", Run: func(ctx context.Context) (string, error) { okRuns.Add(1); return "ok", nil }},
			{Key: "flaky", Run: func(ctx context.Context) (string, error) {
				if n := flakyRuns.Add(1); n < 3 {
					return "", fmt.Errorf("flaky attempt %d", n)
				}
				return "flaky", nil
			}},
			{Key: "broken", Run: func(ctx context.Context) (string, error) {
				if brokenRuns.Add(1) == 1 {
					return "", graph.Permanent(errors.New("disk full"))
				}
				return "broken", nil
			}},
		}
	}), graph.StartsTasks())
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	run, o := e.compile(g)
	_, err := run.Invoke(t.Context(), graph.Input(), o...)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "team", ne.Node)
	assert.Contains(t, ne.Error(), "disk full")
	assert.Equal(t, int32(3), flakyRuns.Load(), "a failed task runs again under its retry policy")
	assert.Equal(t, int32(1), brokenRuns.Load(), "a Permanent error is not retried")

	res, err := run.Invoke(t.Context(), nil, o...)
	require.NoError(t, err, "the thread continues: the node runs again")
	assert.Equal(t, []string{"ok", "flaky", "broken"}, logKey.Get(res.State))
	assert.Equal(t, int32(1), okRuns.Load(), "done tasks were journaled, so they did not run again")
	assert.Equal(t, int32(3), flakyRuns.Load())
	assert.Equal(t, int32(2), brokenRuns.Load())
}

func taskJournal(t *testing.T, e *env) {
	var calls, runs atomic.Int32
	name := e.name("tasks-journal")
	g := graph.New(name, logKey)
	g.AddNode("team", taskNode(graph.TaskOptions{}, func() []graph.Task[string] {
		agent := func(key string) graph.Task[string] {
			return graph.Task[string]{Key: key, Run: func(ctx context.Context) (string, error) {
				runs.Add(1)
				reply, err := graph.Do(ctx, "model", func(ctx context.Context) (string, error) {
					return fmt.Sprintf("reply %d", calls.Add(1)), nil
				})
				if err != nil {
					return "", err
				}
				if key == "b" {
					ok, err := graph.InterruptAs[bool](ctx, "send "+reply+"?")
					if err != nil {
						return "", err
					}
					return fmt.Sprintf("%s: %s sent=%v", key, reply, ok), nil
				}
				return key + ": " + reply, nil
			}}
		}
		return []graph.Task[string]{agent("a"), agent("b")}
	}), graph.StartsTasks())
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(), o...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, name+"/team/b", res.Interrupts[0].Path)
	res, err = run.Invoke(t.Context(), nil, opts(o, graph.Resume(true))...)
	require.NoError(t, err)
	logs := logKey.Get(res.State)
	require.Len(t, logs, 2)
	assert.True(t, strings.HasPrefix(logs[0], "a: reply "), logs[0])
	assert.True(t, strings.HasPrefix(logs[1], "b: reply ") && strings.HasSuffix(logs[1], " sent=true"), logs[1])
	assert.Equal(t, int32(3), runs.Load(), "a ran once; b ran again on resume")
	assert.Equal(t, int32(2), calls.Load(), "each task's journaled call was made once")
}

func taskCancellation(t *testing.T, e *env) {
	started := make(chan struct{}, 1)
	var blocked atomic.Bool
	blocked.Store(true)
	var quickRuns atomic.Int32
	g := graph.New(e.name("tasks-cancel"), logKey)
	g.AddNode("team", taskNode(graph.TaskOptions{}, func() []graph.Task[string] {
		return []graph.Task[string]{
			{Key: "quick", Run: func(ctx context.Context) (string, error) { quickRuns.Add(1); return "quick", nil }},
			{Key: "slow", Deps: []string{"quick"}, Run: func(ctx context.Context) (string, error) {
				if blocked.Load() {
					started <- struct{}{}
					<-ctx.Done()
					return "", ctx.Err()
				}
				return "slow", nil
			}},
		}
	}), graph.StartsTasks())
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	run, o := e.compile(g)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		select {
		case <-started:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err := run.Invoke(ctx, graph.Input(), o...)
	require.ErrorIs(t, err, context.Canceled)

	blocked.Store(false)
	res, err := run.Invoke(t.Context(), nil, o...)
	require.NoError(t, err, "the thread continues from its last checkpoint")
	assert.Equal(t, []string{"quick", "slow"}, logKey.Get(res.State))
	assert.Equal(t, int32(1), quickRuns.Load(), "the task done before the cancel was journaled")
}
