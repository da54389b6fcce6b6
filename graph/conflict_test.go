package graph_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// In async durability, a run learns that another writer overtook it only
// when a later write waits for the refused one: here node b's journaled
// call. The conflict ends the run at once: b is not retried and its error
// handler does not turn the conflict into a result.
func TestAConflictInANodeIsNeitherRetriedNorHandled(t *testing.T) {
	s := memory.New()
	other := durableChain(t, s, &counter{})
	var overtaken, attempts, handled int
	g := graph.New("durable", logKey, countKey, textKey)
	g.AddNode("a", func(ctx context.Context, st graph.State) (graph.Command, error) {
		// The input is stored once a journaled call is; then another
		// writer updates the thread while this step runs.
		if _, err := graph.Do(ctx, "flush", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return graph.Command{}, err
		}
		id, err := other.UpdateState(ctx, "t", "", []graph.Write{graph.AppendTo(logKey, "other")})
		if err != nil {
			return graph.Command{}, err
		}
		overtaken++
		return graph.Update(graph.AppendTo(logKey, "a:"+id)), nil
	})
	g.AddNode("b", func(ctx context.Context, st graph.State) (graph.Command, error) {
		attempts++
		_, err := graph.Do(ctx, "call", func(context.Context) (int, error) { return 2, nil })
		return graph.Update(graph.AppendTo(logKey, "b")), err
	},
		graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}),
		graph.OnError(func(ctx context.Context, st graph.State, err error) (graph.Command, error) {
			handled++
			return graph.Update(graph.AppendTo(logKey, "handled")), nil
		}))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.End)
	r, err := g.Compile(graph.WithSaver(s), graph.WithDurability(graph.DurabilityAsync))
	require.NoError(t, err)

	_, runErr := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.ErrorIs(t, runErr, graph.ErrCheckpointConflict)
	assert.Equal(t, 1, overtaken)
	assert.Equal(t, 1, attempts, "a conflict is not retried")
	assert.Equal(t, 0, handled, "a conflict is not handled")

	hist, err := r.History(t.Context(), "t")
	require.NoError(t, err)
	require.Len(t, hist, 2, "the input and the other writer's update")
	update, input := hist[0], hist[1]
	assert.Equal(t, graph.SourceUpdate, update.Source)
	assert.Equal(t, []string{"other"}, logKey.Get(update.State))
	assert.EqualError(t, runErr, fmt.Sprintf(`graph: step 0 was not saved: graph: thread "t" was advanced by another writer: its newest checkpoint is %q, not %q as this write expected; read the thread's state again and retry`,
		update.Checkpoint, input.Checkpoint))
}

// A run that starts from an older checkpoint declares the newest one it
// read, also when it brings input: its branch is stored.
func TestNewInputOnAnOlderCheckpointStartsABranch(t *testing.T) {
	var c counter
	r := durableChain(t, memory.New(), &c)
	first, err := r.Invoke(t.Context(), graph.Input(countKey.Set(1)), graph.Thread("t"))
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), graph.Input(countKey.Set(10)), graph.Thread("t"))
	require.NoError(t, err)

	res, err := r.Invoke(t.Context(), graph.Input(countKey.Set(100)), graph.Thread("t"), graph.FromCheckpoint(first.Checkpoint))
	require.NoError(t, err)
	assert.Equal(t, 101, countKey.Get(res.State))
	hist, err := r.History(t.Context(), "t")
	require.NoError(t, err)
	require.Len(t, hist, 12, "two runs of input and three steps, and the branch")
	assert.Equal(t, first.Checkpoint, hist[3].Parent, "the branch starts at the first run's end")
	assert.Equal(t, graph.SourceInput, hist[3].Source)
}
