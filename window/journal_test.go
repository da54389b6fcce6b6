package window_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/window"
)

func TestSummariesAreJournaledAcrossNodeRuns(t *testing.T) {
	sum := summarizer("journaled summary")
	bs := newBoardStore(t)
	var summaries []string
	g := graph.New("review")
	g.AddNode("agent", func(ctx context.Context, _ graph.State) (graph.Command, error) {
		// A new Builder each run, as after a restart: nothing cached.
		b := window.New(window.Config{Offloader: bs, Summarizer: sum})
		req := agentRequest(conversation(10, 200), window.Budget{MaxInputTokens: 100_000})
		req.Force = true
		res, err := b.Assemble(ctx, req)
		if err != nil {
			return graph.Command{}, err
		}
		summaries = append(summaries, text(res.Compacted["history"][0]))
		_, err = graph.Interrupt(ctx, "continue?")
		return graph.Command{}, err
	})
	g.AddEdge(graph.Start, "agent")
	g.AddEdge("agent", graph.End)
	run, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	res, err := run.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	res, err = run.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume(true))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)

	require.Len(t, summaries, 2)
	assert.Equal(t, summaries[0], summaries[1])
	assert.Contains(t, summaries[0], "journaled summary")
	assert.Len(t, sum.Calls(), 1, "the second run replayed the summary from the journal")
}
