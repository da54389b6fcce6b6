package graph_test

import (
	"context"
	"encoding/json"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// TestStepAndRunTasksDriveAThreadFromOutside drives a thread the way a
// runner outside the package does: Step by Step, the tasks of a parallel
// step run separately with RunTasks, and the Step after them applies
// their writes without running them again.
func TestStepAndRunTasksDriveAThreadFromOutside(t *testing.T) {
	var runs [3]atomic.Int32
	out := graph.NewKey("out", graph.Append[string]())
	g := graph.New("outside", out)
	for i, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
			runs[i].Add(1)
			return graph.Update(graph.AppendTo(out, n)), nil
		})
	}
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("a", "c")
	g.AddEdge("b", graph.End)
	g.AddEdge("c", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	opts := []graph.Option{graph.WithSaver(memory.New()), graph.Thread("t")}

	res, err := r.Step(t.Context(), graph.Input(), opts...)
	require.NoError(t, err)
	assert.True(t, res.More)
	assert.Equal(t, 0, res.Step)
	assert.Equal(t, []string{"a"}, res.Ran)
	assert.Equal(t, []string{"b", "c"}, res.Next)
	assert.Equal(t, []string{"b", "c"}, res.NextTasks)

	_, err = r.RunTasks(t.Context(), "not-the-head", []string{"b"}, opts...)
	require.ErrorIs(t, err, graph.ErrStaleStep)
	for _, label := range res.NextTasks {
		outcomes, err := r.RunTasks(t.Context(), res.Checkpoint, []string{label}, opts...)
		require.NoError(t, err)
		assert.Equal(t, []graph.TaskOutcome{{Label: label, Done: true}}, outcomes)
	}
	done, err := r.Step(t.Context(), nil, opts...)
	require.NoError(t, err)
	assert.False(t, done.More)
	assert.Equal(t, graph.StatusDone, done.Status)
	assert.Equal(t, []string{"a", "b", "c"}, out.Get(done.State))
	for i := range runs {
		assert.Equal(t, int32(1), runs[i].Load(), "each node ran once")
	}
}

func TestResolveAnswersChecksThemAsResumeDoes(t *testing.T) {
	g := graph.New("resolve", graph.NewKey[string]("x"))
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	pending := []graph.InterruptInfo{{ID: "i1", Path: "resolve/p"}, {ID: "i2", Path: "resolve/q"}}

	_, err = r.ResolveAnswers("t", pending, false, graph.Answers{One: json.RawMessage(`1`), HasOne: true})
	require.ErrorIs(t, err, graph.ErrAmbiguousResume)
	_, err = r.ResolveAnswers("t", pending, false, graph.Answers{Each: map[string]json.RawMessage{"nope": json.RawMessage(`1`)}})
	require.ErrorIs(t, err, graph.ErrNotInterrupted)
	got, err := r.ResolveAnswers("t", pending, false, graph.Answers{At: map[string]json.RawMessage{"q": json.RawMessage(`"yes"`)}})
	require.NoError(t, err)
	assert.Equal(t, map[string]json.RawMessage{"i2": json.RawMessage(`"yes"`)}, got)

	spec, err := r.Spec(graph.Thread("t"), graph.StepLimit(7), graph.ResumeAt("q", "yes"))
	require.NoError(t, err)
	assert.Equal(t, "t", spec.Thread)
	assert.Equal(t, 7, spec.StepLimit)
	require.NotNil(t, spec.Resume)
	assert.Equal(t, map[string]json.RawMessage{"q": json.RawMessage(`"yes"`)}, spec.Resume.At)
}

// TestRunTasksRunsItsTasksAtOnce: the tasks RunTasks is given run at the
// same time, with a sink or without one: each of b and c waits for the
// other to start.
func TestRunTasksRunsItsTasksAtOnce(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		started := map[string]chan struct{}{"b": make(chan struct{}), "c": make(chan struct{})}
		g := graph.New("together")
		g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
		for n, other := range map[string]string{"b": "c", "c": "b"} {
			g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
				close(started[n])
				select {
				case <-started[other]:
					return graph.Command{}, nil
				case <-ctx.Done():
					return graph.Command{}, ctx.Err()
				}
			})
			g.AddEdge("a", n)
			g.AddEdge(n, graph.End)
		}
		g.AddEdge(graph.Start, "a")
		r, err := g.Compile()
		require.NoError(t, err)
		opts := []graph.Option{graph.WithSaver(memory.New()), graph.Thread("t")}
		if streamed {
			opts = append(opts, graph.StreamTo(func(graph.Event) bool { return true }))
		}
		res, err := r.Step(t.Context(), graph.Input(), opts...)
		require.NoError(t, err)
		outcomes, err := r.RunTasks(t.Context(), res.Checkpoint, res.NextTasks, opts...)
		require.NoError(t, err, "streamed %v", streamed)
		assert.Len(t, outcomes, 2)
	}
}

// TestRunTasksWithASinkFailsATaskEndedByGoexit: a node of a streamed
// RunTasks that ends its goroutine fails its task; RunTasks returns, and
// the sink has its node_end with the failure.
func TestRunTasksWithASinkFailsATaskEndedByGoexit(t *testing.T) {
	g := graph.New("goexit")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
	g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
		runtime.Goexit()
		return graph.Command{}, nil
	})
	g.AddNode("c", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
	g.AddEdge(graph.Start, "a")
	for _, n := range []string{"b", "c"} {
		g.AddEdge("a", n)
		g.AddEdge(n, graph.End)
	}
	r, err := g.Compile()
	require.NoError(t, err)
	var failed []string
	opts := []graph.Option{graph.WithSaver(memory.New()), graph.Thread("t"), graph.StreamTo(func(ev graph.Event) bool {
		if ev.Kind == graph.EventNodeEnd && ev.Err != nil {
			failed = append(failed, ev.Node)
		}
		return true
	})}
	res, err := r.Step(t.Context(), graph.Input(), opts...)
	require.NoError(t, err)
	_, err = r.RunTasks(t.Context(), res.Checkpoint, res.NextTasks, opts...)
	assert.EqualError(t, err, `graph: node "b" (step 1, attempt 1): the node called runtime.Goexit (t.FailNow?) on the goroutine running it`)
	assert.Equal(t, []string{"b"}, failed)
}

// TestRunTasksFailsATaskEndedByGoexit: a node that ends its goroutine
// (runtime.Goexit, as t.FailNow does) in RunTasks fails its task, as in
// Invoke and Stream, with a sink or without one, alone or with a
// sibling: RunTasks returns the *NodeError, the outcome is not done,
// nothing is stored as its result, and the Step after runs it again (and
// not its sibling, which finished).
func TestRunTasksFailsATaskEndedByGoexit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []string
		sink   bool
	}{
		{"alone", []string{"quits"}, false},
		{"with a sibling", []string{"quits", "stays"}, false},
		{"alone, streamed", []string{"quits"}, true},
		{"with a sibling, streamed", []string{"quits", "stays"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var quits, stays atomic.Int32
			g := graph.New("goexit")
			g.AddNode("prep", noop)
			g.AddNode("quits", func(ctx context.Context, s graph.State) (graph.Command, error) {
				if quits.Add(1) == 1 {
					runtime.Goexit()
				}
				return graph.Command{}, nil
			})
			g.AddNode("stays", func(ctx context.Context, s graph.State) (graph.Command, error) {
				stays.Add(1)
				return graph.Command{}, nil
			})
			g.AddEdge(graph.Start, "prep")
			for _, n := range []string{"quits", "stays"} {
				g.AddEdge("prep", n)
				g.AddEdge(n, graph.End)
			}
			r, err := g.Compile()
			require.NoError(t, err)
			opts := []graph.Option{graph.WithSaver(memory.New()), graph.Thread("t")}
			if tc.sink {
				opts = append(opts, graph.StreamTo(func(graph.Event) bool { return true }))
			}
			res, err := r.Step(t.Context(), graph.Input(), opts...)
			require.NoError(t, err)

			var outcomes []graph.TaskOutcome
			returned := false
			ended := make(chan struct{})
			go func() { // RunTasks must return, not end this goroutine
				defer close(ended)
				outcomes, err = r.RunTasks(t.Context(), res.Checkpoint, tc.labels, opts...)
				returned = true
			}()
			<-ended
			require.True(t, returned, "RunTasks ended its caller's goroutine")
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, "quits", ne.Node)
			assert.EqualError(t, err, `graph: node "quits" (step 1, attempt 1): the node called runtime.Goexit (t.FailNow?) on the goroutine running it`)
			want := []graph.TaskOutcome{{Label: "quits"}}
			if len(tc.labels) == 2 {
				want = append(want, graph.TaskOutcome{Label: "stays", Done: true})
			}
			assert.Equal(t, want, outcomes)

			snap, err := r.State(t.Context(), "t", opts...)
			require.NoError(t, err)
			require.Len(t, snap.Tasks, 2)
			assert.Equal(t, graph.TaskFailed, snap.Tasks[0].Status, "quits")
			assert.Contains(t, snap.Tasks[0].Error, "runtime.Goexit")

			done, err := r.Step(t.Context(), nil, opts...)
			require.NoError(t, err)
			assert.False(t, done.More)
			assert.Equal(t, int32(2), quits.Load(), "the Step after runs quits again")
			assert.Equal(t, int32(1), stays.Load(), "and stays once in all")
		})
	}
}

// runWorkersWaiting counts the goroutines waiting for a task in a run's
// worker loop.
func runWorkersWaiting() int {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		panic(err)
	}
	n := 0
	for g := range strings.SplitSeq(b.String(), "\n\n") {
		header, stack, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[chan receive") && strings.HasPrefix(stack, "github.com/coorflow/coorflow/graph.(*run).work(") {
			n++
		}
	}
	return n
}

// TestRunTasksEndsItsWorkers: the goroutines that run RunTasks's tasks
// end before it returns, as a run's do.
func TestRunTasksEndsItsWorkers(t *testing.T) {
	g := graph.New("workers")
	g.AddNode("prep", noop)
	for _, n := range []string{"b", "c"} {
		g.AddNode(n, noop)
		g.AddEdge("prep", n)
		g.AddEdge(n, graph.End)
	}
	g.AddEdge(graph.Start, "prep")
	r, err := g.Compile()
	require.NoError(t, err)
	for _, sink := range []bool{false, true} {
		opts := []graph.Option{graph.WithSaver(memory.New()), graph.Thread("t")}
		if sink {
			opts = append(opts, graph.StreamTo(func(graph.Event) bool { return true }))
		}
		res, err := r.Step(t.Context(), graph.Input(), opts...)
		require.NoError(t, err)
		before := runWorkersWaiting()
		_, err = r.RunTasks(t.Context(), res.Checkpoint, res.NextTasks, opts...)
		require.NoError(t, err)
		assert.Equal(t, before, runWorkersWaiting(), "workers left waiting (sink %v)", sink)
	}
}
