package graph_test

import (
	"context"
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
