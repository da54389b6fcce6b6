package graph_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

func TestReplayFromAPastCheckpointRunsTheLaterStepsAgainOnANewBranch(t *testing.T) {
	var c counter
	r := durableChain(t, memory.New(), &c)
	_, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	hist, err := r.History(t.Context(), "t")
	require.NoError(t, err)
	afterA := hist[2] // step 0: a ran
	require.Equal(t, 0, afterA.Step)

	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"), graph.FromCheckpoint(afterA.Checkpoint))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, logKey.Get(res.State))
	assert.Equal(t, 1, c.get("a"))
	assert.Equal(t, 2, c.get("b"), "b ran again")
	assert.Equal(t, 2, c.get("c"))

	hist, err = r.History(t.Context(), "t")
	require.NoError(t, err)
	require.Len(t, hist, 7, "the old branch's 4 checkpoints, the replay's copy and the 2 steps replayed")
	fork := hist[2]
	assert.Equal(t, graph.SourceReplay, fork.Source)
	assert.Equal(t, afterA.Checkpoint, fork.Parent, "the replay branches off the checkpoint it started from")
	assert.Equal(t, afterA.Step, fork.Step)
	assert.Equal(t, logKey.Get(afterA.State), logKey.Get(fork.State), "the fork is a copy")
	assert.Equal(t, fork.Checkpoint, hist[1].Parent)
}

func TestForkChangesAnOldCheckpointAndKeepsTheOldBranchReadable(t *testing.T) {
	var c counter
	r := durableChain(t, memory.New(), &c)
	done, err := r.Invoke(t.Context(), graph.Input(textKey.Set("original")), graph.Thread("t"))
	require.NoError(t, err)
	hist, err := r.History(t.Context(), "t")
	require.NoError(t, err)
	afterA := hist[2]

	forkID, err := r.UpdateState(t.Context(), "t", "", []graph.Write{textKey.Set("forked")}, graph.FromCheckpoint(afterA.Checkpoint))
	require.NoError(t, err)
	fork, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Equal(t, forkID, fork.Checkpoint)
	assert.Equal(t, graph.SourceFork, fork.Source)
	assert.Equal(t, afterA.Checkpoint, fork.Parent)
	assert.Equal(t, []string{"b"}, fork.Next, "the schedule of the old checkpoint is kept")

	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, "forked", textKey.Get(res.State))
	assert.Equal(t, []string{"a", "b", "c"}, logKey.Get(res.State))

	old, err := r.State(t.Context(), "t", graph.FromCheckpoint(done.Checkpoint))
	require.NoError(t, err)
	assert.Equal(t, "original", textKey.Get(old.State), "the old branch is intact")
	assert.Equal(t, []string{"a", "b", "c"}, logKey.Get(old.State))
}

func TestUpdateStateAsANodeWritesThroughReducersAndFollowsItsEdges(t *testing.T) {
	var c counter
	r := durableChain(t, memory.New(), &c, graph.InterruptBefore("b"))
	_, err := r.Invoke(t.Context(), graph.Input(countKey.Set(1)), graph.Thread("t"))
	require.NoError(t, err)

	id, err := r.UpdateState(t.Context(), "t", "b", []graph.Write{graph.AppendTo(logKey, "human b"), countKey.Set(5)})
	require.NoError(t, err)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Equal(t, id, snap.Checkpoint)
	assert.Equal(t, graph.SourceUpdate, snap.Source)
	assert.Equal(t, []string{"b"}, snap.Writers)
	assert.Equal(t, []string{"c"}, snap.Next, "as if b had run")
	assert.Equal(t, 6, countKey.Get(snap.State))

	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "human b", "c"}, logKey.Get(res.State))
	assert.Equal(t, 0, c.get("b"))
}

func TestHistoryOfForkedAppendChannelsDoesNotMixBranches(t *testing.T) {
	r := durableChain(t, memory.New(), &counter{})
	_, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	hist, err := r.History(t.Context(), "t")
	require.NoError(t, err)
	_, err = r.UpdateState(t.Context(), "t", "", []graph.Write{graph.AppendTo(logKey, "x")}, graph.FromCheckpoint(hist[2].Checkpoint))
	require.NoError(t, err)
	_, err = r.UpdateState(t.Context(), "t", "", []graph.Write{graph.AppendTo(logKey, "y")}, graph.FromCheckpoint(hist[2].Checkpoint))
	require.NoError(t, err)

	hist, err = r.History(t.Context(), "t", graph.HistoryLimit(3))
	require.NoError(t, err)
	require.Len(t, hist, 3)
	assert.Equal(t, []string{"a", "y"}, logKey.Get(hist[0].State))
	assert.Equal(t, []string{"a", "x"}, logKey.Get(hist[1].State))
	assert.Equal(t, []string{"a", "b", "c"}, logKey.Get(hist[2].State))
}

func TestDoKeepsResultsAcrossRetriesAndRunsPlainOutsideANode(t *testing.T) {
	var calls, attempts atomic.Int32
	g := graph.New("journal", textKey)
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) {
		attempts.Add(1)
		v, err := graph.Do(ctx, "charge", func(ctx context.Context) (int, error) {
			calls.Add(1)
			return 42, nil
		})
		if err != nil || v != 42 {
			return graph.Command{}, fmt.Errorf("charge returned %d: %w", v, err)
		}
		if attempts.Load() < 3 {
			return graph.Command{}, errFlaky
		}
		return graph.Update(textKey.Set("charged")), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: 1}))
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, "charged", textKey.Get(res.State))
	assert.Equal(t, int32(3), attempts.Load())
	assert.Equal(t, int32(1), calls.Load(), "the side effect happened once over three attempts")

	v, err := graph.Do(t.Context(), "plain", func(context.Context) (string, error) { return "direct", nil })
	require.NoError(t, err)
	assert.Equal(t, "direct", v)
}

func TestDoDoesNotRecordFailures(t *testing.T) {
	var calls atomic.Int32
	g := graph.New("journal-fail", textKey)
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) {
		v, err := graph.Do(ctx, "flaky", func(ctx context.Context) (string, error) {
			if calls.Add(1) == 1 {
				return "", errFlaky
			}
			return "ok", nil
		})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(textKey.Set(v)), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: 1}))
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, "ok", textKey.Get(res.State))
	assert.Equal(t, int32(2), calls.Load())
}

func TestDoWithAResultThatCannotBeRecordedFails(t *testing.T) {
	g := graph.New("journal-bad")
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) {
		_, err := graph.Do(ctx, "chan", func(ctx context.Context) (chan int, error) { return make(chan int), nil })
		return graph.Command{}, err
	})
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	assert.EqualError(t, err, `graph: node "n" (step 0, attempt 1): graph: journal entry "|chan#0" of node "n": encode chan int: json: unsupported type: chan int`)
}

func TestPacketOverlaysOnAnAppendChannelDoNotShareMemory(t *testing.T) {
	seen := make([][]string, 3)
	g := graph.New("overlay", logKey, itemKey)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Send(
			graph.To("w", itemKey.Set(0), graph.AppendTo(logKey, "p0")),
			graph.To("w", itemKey.Set(1), graph.AppendTo(logKey, "p1")),
			graph.To("w", itemKey.Set(2), graph.AppendTo(logKey, "p2")),
		), nil
	}, graph.Destinations("w"))
	g.AddNode("w", func(ctx context.Context, s graph.State) (graph.Command, error) {
		seen[itemKey.Get(s)] = logKey.Get(s)
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("w", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	// A base list with spare capacity, where in-place appends would collide.
	base := make([]string, 1, 8)
	base[0] = "base"
	_, err = r.Invoke(t.Context(), graph.Input(logKey.Set(base)))
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"base", "p0"}, {"base", "p1"}, {"base", "p2"}}, seen)
}

func TestDiscardUnfinishedLetsAnInputReplaceTheUnfinishedStep(t *testing.T) {
	var c counter
	r := durableChain(t, memory.New(), &c, graph.InterruptBefore("b"))
	_, err := r.Invoke(t.Context(), graph.Input(countKey.Set(1)), graph.Thread("t"))
	require.NoError(t, err)

	// Without the option the input is refused and the thread kept.
	_, err = r.Invoke(t.Context(), graph.Input(countKey.Set(10)), graph.Thread("t"))
	require.ErrorContains(t, err, `graph: thread "t" has an unfinished run (next: b)`)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, snap.Next)
	assert.Equal(t, 1, countKey.Get(snap.State))

	// With it, b's pending step is dropped: the input starts from Start on
	// the thread's state.
	res, err := r.Invoke(t.Context(), graph.Input(countKey.Set(10)), graph.Thread("t"), graph.DiscardUnfinished())
	require.NoError(t, err)
	assert.Equal(t, 11, countKey.Get(res.State))
	assert.Equal(t, []string{"a", "a"}, logKey.Get(res.State), "a ran again; the unfinished b did not")
	assert.Equal(t, 0, c.get("b"))
}
