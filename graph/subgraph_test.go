package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// splitGraph builds a -> (plain, sub) -> z, where sub is a subgraph whose
// one node runs inner. Every node appends to logKey and counts its runs.
func splitGraph(t *testing.T, c *counter, s graph.Saver, inner graph.NodeFunc) *graph.Runnable {
	t.Helper()
	in := graph.New("inner", logKey)
	in.AddNode("inner", inner)
	in.AddEdge(graph.Start, "inner")
	in.AddEdge("inner", graph.End)
	sub, err := in.Compile()
	require.NoError(t, err)

	g := graph.New("split", logKey)
	g.AddNode("a", logger(c, "a"))
	g.AddNode("plain", logger(c, "plain"))
	g.AddSubgraph("sub", sub)
	g.AddNode("z", logger(c, "z"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "plain")
	g.AddEdge("a", "sub")
	g.AddJoin([]string{"plain", "sub"}, "z")
	g.AddEdge("z", graph.End)
	r, err := g.Compile(graph.WithSaver(s))
	require.NoError(t, err)
	return r
}

// checkpointOfStep finds the checkpoint step produced, by hand.
func checkpointOfStep(t *testing.T, r *graph.Runnable, thread string, step int) string {
	t.Helper()
	hist, err := r.History(t.Context(), thread)
	require.NoError(t, err)
	for _, h := range hist {
		if h.Step == step && h.Source == graph.SourceLoop {
			return h.Checkpoint
		}
	}
	t.Fatalf("thread %q has no checkpoint of step %d", thread, step)
	return ""
}

func TestReplayAcrossASubgraphRunsTheSubgraphsNodesAgain(t *testing.T) {
	var c counter
	version := "v1"
	r := splitGraph(t, &c, memory.New(), func(ctx context.Context, s graph.State) (graph.Command, error) {
		c.inc("inner")
		return graph.Update(graph.AppendTo(logKey, "inner "+version)), nil
	})
	_, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)

	version = "v2" // fix the code, then replay from the step after a
	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"), graph.FromCheckpoint(checkpointOfStep(t, r, "t", 0)))
	require.NoError(t, err)
	assert.Equal(t, 2, c.get("plain"), "the plain node ran again")
	assert.Equal(t, 2, c.get("inner"), "the subgraph's node ran again")
	assert.Equal(t, []string{"a", "plain", "inner v2", "z"}, logKey.Get(res.State), "the replay has the new output of the subgraph")
}

func TestReplayAcrossASubgraphAsksItsQuestionAgain(t *testing.T) {
	var c counter
	r := splitGraph(t, &c, memory.New(), func(ctx context.Context, s graph.State) (graph.Command, error) {
		c.inc("inner")
		a, err := graph.InterruptAs[string](ctx, "which?")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, "answer "+a)), nil
	})
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("first"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "plain", "answer first", "z"}, logKey.Get(res.State))

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.FromCheckpoint(checkpointOfStep(t, r, "t", 0)))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status, "the replay asks again instead of reusing the old answer")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "which?", res.Interrupts[0].Payload)
	assert.Equal(t, "split/sub/inner", res.Interrupts[0].Path)

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("second"))
	require.NoError(t, err, "the paused replay is the thread's head, so it can be answered")
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"a", "plain", "answer second", "z"}, logKey.Get(res.State))
	assert.Equal(t, 4, c.get("inner"), "asked, answered, asked again on replay, answered")
	assert.Equal(t, 2, c.get("plain"))
}

func TestASubgraphsCheckpointsAreReadThroughItsTask(t *testing.T) {
	var c counter
	// The subgraph's node asks first, then writes: it pauses once inside.
	r := splitGraph(t, &c, memory.New(), func(ctx context.Context, s graph.State) (graph.Command, error) {
		a, err := graph.InterruptAs[string](ctx, "which?")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, "answer "+a)), nil
	})
	_, err := r.Invoke(t.Context(), graph.Input(graph.AppendTo(logKey, "in")), graph.Thread("t"))
	require.NoError(t, err)

	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	require.Equal(t, 0, snap.Step)
	require.Len(t, snap.Tasks, 2)
	task := snap.Tasks[1]
	assert.Equal(t, "sub", task.Node)
	assert.Equal(t, graph.TaskInterrupted, task.Status)
	require.NotEmpty(t, task.Subgraph)
	assert.Empty(t, snap.Tasks[0].Subgraph, "plain is no subgraph")

	inner, err := r.State(t.Context(), "t", graph.InSubgraph(task.Subgraph))
	require.NoError(t, err)
	assert.Equal(t, []string{"in", "a"}, logKey.Get(inner.State), "the subgraph started from the parent's values")
	assert.Equal(t, []string{"inner"}, inner.Next)
	require.Len(t, inner.Tasks, 1)
	assert.Equal(t, graph.StepTask{Node: "inner", Path: "split/sub/inner", Status: graph.TaskInterrupted, Interrupts: inner.Interrupts}, inner.Tasks[0])

	_, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("yes"))
	require.NoError(t, err)
	hist, err := r.History(t.Context(), "t", graph.InSubgraph(task.Subgraph))
	require.NoError(t, err)
	require.Len(t, hist, 2, "the subgraph's input and its one step")
	assert.Equal(t, []string{"in", "a", "answer yes"}, logKey.Get(hist[0].State))
	assert.Equal(t, []string{"inner"}, hist[0].Writers)

	step0, err := r.StateAt(t.Context(), "t", 0, graph.InSubgraph(task.Subgraph))
	require.NoError(t, err)
	assert.Equal(t, hist[0].Checkpoint, step0.Checkpoint)

	again, err := r.StateAt(t.Context(), "t", 0)
	require.NoError(t, err)
	assert.Equal(t, task.Subgraph, again.Tasks[1].Subgraph, "the same step names the same run of the subgraph")
	assert.Equal(t, graph.TaskDone, again.Tasks[1].Status)
}

func TestStateAtFindsTheCheckpointOfAStepOnTheCurrentBranch(t *testing.T) {
	var c counter
	r := durableChain(t, memory.New(), &c)
	first, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	afterA, err := r.StateAt(t.Context(), "t", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, afterA.Writers)
	assert.Equal(t, []string{"a"}, logKey.Get(afterA.State))

	replay, err := r.Invoke(t.Context(), nil, graph.Thread("t"), graph.FromCheckpoint(afterA.Checkpoint))
	require.NoError(t, err)
	newB, err := r.StateAt(t.Context(), "t", 1)
	require.NoError(t, err)
	oldB, err := r.StateAt(t.Context(), "t", 1, graph.FromCheckpoint(first.Checkpoint))
	require.NoError(t, err)
	assert.NotEqual(t, oldB.Checkpoint, newB.Checkpoint, "each branch has its own step 1")
	last, err := r.StateAt(t.Context(), "t", 2)
	require.NoError(t, err)
	assert.Equal(t, replay.Checkpoint, last.Checkpoint)

	_, err = r.StateAt(t.Context(), "t", 7)
	require.ErrorIs(t, err, graph.ErrNotFound)
	assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t" has no checkpoint of step 7 on the branch of checkpoint %q (its head is step 2): graph: not found`, replay.Checkpoint))
}

func TestInSubgraphErrors(t *testing.T) {
	var c counter
	r := splitGraph(t, &c, memory.New(), logger(&c, "inner"))
	_, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	cases := []struct {
		name string
		do   func() error
		want string
	}{
		{"not a namespace", func() error {
			_, err := r.State(t.Context(), "t", graph.InSubgraph("sub"))
			return err
		}, `graph: "sub" is not a subgraph namespace: take one from StepTask.Subgraph`},
		{"a node that is no subgraph", func() error {
			_, err := r.History(t.Context(), "t", graph.InSubgraph("plain@123"))
			return err
		}, `graph: subgraph namespace "plain@123": node "plain" of graph "split" is not a subgraph`},
		{"an unknown node", func() error {
			_, err := r.History(t.Context(), "t", graph.InSubgraph("ghost@123"))
			return err
		}, `graph: subgraph namespace "ghost@123": graph "split" has no node "ghost": graph: unknown node`},
		{"a run of a subgraph that never ran", func() error {
			_, err := r.State(t.Context(), "t", graph.InSubgraph("sub@123"))
			return err
		}, `graph: thread "t" has no checkpoint of the subgraph run "sub@123" (it has not started, or the thread does not exist): graph: not found`},
		{"the history of a subgraph that never ran", func() error {
			_, err := r.History(t.Context(), "t", graph.InSubgraph("sub@123"))
			return err
		}, `graph: thread "t" has no checkpoint of the subgraph run "sub@123" (it has not started, or the thread does not exist): graph: not found`},
		{"a run", func() error {
			_, err := r.Invoke(t.Context(), nil, graph.Thread("t"), graph.InSubgraph("sub@123"))
			return err
		}, `graph: a run starts at the root graph: graph.InSubgraph is for State, StateAt and History`},
		{"an update", func() error {
			_, err := r.UpdateState(t.Context(), "t", "", nil, graph.InSubgraph("sub@123"))
			return err
		}, `graph: update thread "t": UpdateState writes to the root graph; a subgraph's state changes through the runs of its node, not InSubgraph`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.EqualError(t, c.do(), c.want)
		})
	}
}
