package enginetest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

var trail = graph.NewKey("trail", graph.Append[string]())

// newRelay compiles the graph start -> {a, b} -> c. Each node appends
// "writer:node" to the trail; hook, when set, runs inside a and b before
// they return, so a test can hold a run in the middle of a step.
func newRelay(s graph.Saver, writer string, hook func(ctx context.Context, node string), opts ...graph.Option) (*graph.Runnable, error) {
	g := graph.New("relay", trail)
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, st graph.State) (graph.Command, error) {
			if hook != nil && n != "c" {
				hook(ctx, n)
			}
			return graph.Update(graph.AppendTo(trail, writer+":"+n)), nil
		})
	}
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge("a", "c")
	g.AddEdge("b", "c")
	g.AddEdge("c", graph.End)
	return g.Compile(append([]graph.Option{graph.WithSaver(s)}, opts...)...)
}

func relayGraph(t testing.TB, s graph.Saver, writer string, hook func(ctx context.Context, node string), opts ...graph.Option) *graph.Runnable {
	t.Helper()
	r, err := newRelay(s, writer, hook, opts...)
	require.NoError(t, err)
	return r
}

// pausedThread starts thread and pauses it before its first step, as an
// interrupted run leaves it; it returns the checkpoint it stopped at.
func pausedThread(t testing.TB, s graph.Saver, thread string) string {
	t.Helper()
	r := relayGraph(t, s, "setup", nil)
	res, err := r.Invoke(t.Context(), graph.Input(graph.AppendTo(trail, "input")), graph.Thread(thread), graph.InterruptBefore("a"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	return res.Checkpoint
}

// wait blocks until ch is closed or ctx ends.
func wait(ctx context.Context, ch <-chan struct{}) {
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

type outcome struct {
	res graph.Result
	err error
}

// assertOneLine checks that the thread's history is a single line ending at
// newest, that every stored channel version belongs to it, and that its
// state is the winner's.
func assertOneLine(t *testing.T, s graph.Saver, r *graph.Runnable, thread, newest string, want []string) {
	t.Helper()
	hist, err := r.History(t.Context(), thread)
	require.NoError(t, err)
	require.NotEmpty(t, hist)
	assert.Equal(t, newest, hist[0].Checkpoint, "the winner's checkpoint is the newest")
	ids := make([]string, len(hist))
	for i, h := range hist {
		ids[i] = h.Checkpoint
		parent := ""
		if i+1 < len(hist) {
			parent = hist[i+1].Checkpoint
		}
		assert.Equal(t, parent, h.Parent, "the parent of checkpoint %d of %d", i, len(hist))
	}
	blobs, err := s.Blobs(t.Context(), thread, "", []string{"trail"})
	require.NoError(t, err)
	for _, b := range blobs {
		assert.Contains(t, ids, b.Version, "a value stored by the loser")
	}
	snap, err := r.State(t.Context(), thread)
	require.NoError(t, err)
	assert.Equal(t, want, trail.Get(snap.State))
	assert.Empty(t, snap.Next)
}

// assertConflict checks err against the conflict the engine reports when
// what was not saved because another writer moved the thread from
// expected to newest.
func assertConflict(t *testing.T, err error, what, thread, expected, newest string) {
	t.Helper()
	require.ErrorIs(t, err, graph.ErrCheckpointConflict)
	var conflict *graph.CheckpointConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, graph.CheckpointConflictError{Thread: thread, Expected: expected, Newest: newest}, *conflict)
	assert.EqualError(t, err, conflictMessage(what, thread, expected, newest))
}

// conflictMessage is the error a run or an update stopped by a conflict
// returns.
func conflictMessage(what, thread, expected, newest string) string {
	var cause string
	if expected == "" {
		cause = fmt.Sprintf("was started by another writer (its newest checkpoint is %q)", newest)
	} else {
		cause = fmt.Sprintf("was advanced by another writer: its newest checkpoint is %q, not %q as this write expected", newest, expected)
	}
	return fmt.Sprintf("graph: %s was not saved: graph: thread %q %s; read the thread's state again and retry", what, thread, cause)
}

// Two processes resume one paused thread at once. Both have read its
// checkpoint when the first finishes; the second's next checkpoint is
// refused, and the thread keeps one line of history, the first's.
func TestTwoProcessesResumingOneThreadOneWins(t *testing.T) {
	for _, b := range backends(t) {
		for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
			name := b.name + "/sync"
			if mode == graph.DurabilityAsync {
				name = b.name + "/async"
			}
			t.Run(name, func(t *testing.T) {
				thread := "resume-" + name
				paused := pausedThread(t, b.open(t), thread)

				bIn, bEnded, aDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
				var once sync.Once
				first := relayGraph(t, b.open(t), "A", func(ctx context.Context, node string) {
					// Until the second process has read the thread and its
					// task records too (or failed to).
					select {
					case <-bIn:
					case <-bEnded:
					}
				}, graph.WithDurability(mode))
				second := relayGraph(t, b.open(t), "B", func(ctx context.Context, node string) {
					once.Do(func() { close(bIn) })
					wait(ctx, aDone)
				}, graph.WithDurability(mode))

				var lost outcome
				go func() {
					defer close(bEnded)
					lost.res, lost.err = second.Invoke(t.Context(), nil, graph.Thread(thread))
				}()
				res, err := first.Invoke(t.Context(), nil, graph.Thread(thread))
				close(aDone)
				<-bEnded
				require.NoError(t, err)
				require.Equal(t, graph.StatusDone, res.Status)

				assertConflict(t, lost.err, "step 0", thread, paused, res.Checkpoint)
				want := []string{"input", "A:a", "A:b", "A:c"}
				assertOneLine(t, b.open(t), first, thread, res.Checkpoint, want)

				// The loser's finished tasks stay recorded on the checkpoint
				// it continued.
				recs, err := b.open(t).TaskRecords(t.Context(), graph.CheckpointRef{Thread: thread, ID: paused})
				require.NoError(t, err)
				var results []string
				for _, r := range recs {
					if r.Kind == "result" {
						results = append(results, r.TaskID+"="+string(r.Data))
					}
				}
				assert.Equal(t, []string{
					`a={"writes":[{"channel":"trail","value":["B:a"]}]}`,
					`b={"writes":[{"channel":"trail","value":["B:b"]}]}`,
				}, results)
			})
		}
	}
}

// gated holds its first PutCheckpoint until released, so that two writers
// can be made to read a thread before either writes.
type gated struct {
	graph.Saver
	once    sync.Once
	arrived chan struct{}
	release chan struct{}
}

func gate(s graph.Saver) *gated {
	return &gated{Saver: s, arrived: make(chan struct{}), release: make(chan struct{})}
}

func (g *gated) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.arrived)
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Saver.PutCheckpoint(ctx, cp, blobs)
}

// race runs winner and loser, each on its own gated saver, until both are
// about to write their first checkpoint; then winner to its end, then
// loser. It returns the winner's newest checkpoint and the loser's error.
func race(t *testing.T, ga, gb *gated, winner, loser func() (string, error)) (string, error) {
	t.Helper()
	type result struct {
		id  string
		err error
	}
	won, lost := make(chan result, 1), make(chan result, 1)
	go func() {
		id, err := winner()
		won <- result{id, err}
	}()
	go func() {
		id, err := loser()
		lost <- result{id, err}
	}()
	for _, g := range []*gated{ga, gb} {
		select {
		case <-g.arrived:
		case w := <-won:
			close(gb.release)
			t.Fatalf("the winner ended before it wrote: %v (the loser: %v)", w.err, (<-lost).err)
		case l := <-lost:
			close(ga.release)
			t.Fatalf("the loser ended before it wrote: %v (the winner: %v)", l.err, (<-won).err)
		}
	}
	close(ga.release)
	w := <-won
	close(gb.release)
	l := <-lost
	require.NoError(t, w.err)
	return w.id, l.err
}

func TestTwoProcessesStartingOneThreadOneWins(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			thread := "start-" + b.name
			ga, gb := gate(b.open(t)), gate(b.open(t))
			first, second := relayGraph(t, ga, "A", nil), relayGraph(t, gb, "B", nil)
			won, lost := race(t, ga, gb, func() (string, error) {
				res, err := first.Invoke(t.Context(), graph.Input(graph.AppendTo(trail, "A")), graph.Thread(thread))
				return res.Checkpoint, err
			}, func() (string, error) {
				res, err := second.Invoke(t.Context(), graph.Input(graph.AppendTo(trail, "B")), graph.Thread(thread))
				return res.Checkpoint, err
			})
			assertConflict(t, lost, "the run's input", thread, "", won)
			assertOneLine(t, b.open(t), first, thread, won, []string{"A", "A:a", "A:b", "A:c"})
		})
	}
}

func TestAnUpdateOvertakenByARunIsRefused(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			thread := "update-" + b.name
			paused := pausedThread(t, b.open(t), thread)
			ga, gb := gate(b.open(t)), gate(b.open(t))
			run, update := relayGraph(t, ga, "A", nil), relayGraph(t, gb, "B", nil)
			won, lost := race(t, ga, gb, func() (string, error) {
				res, err := run.Invoke(t.Context(), nil, graph.Thread(thread))
				return res.Checkpoint, err
			}, func() (string, error) {
				return update.UpdateState(t.Context(), thread, "", []graph.Write{graph.AppendTo(trail, "B:edit")})
			})
			assertConflict(t, lost, "the update", thread, paused, won)
			assertOneLine(t, b.open(t), run, thread, won, []string{"input", "A:a", "A:b", "A:c"})
		})
	}
}

func TestAReplayOvertakenByAnotherReplayIsRefused(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			thread := "replay-" + b.name
			paused := pausedThread(t, b.open(t), thread)
			done, err := relayGraph(t, b.open(t), "A", nil).Invoke(t.Context(), nil, graph.Thread(thread))
			require.NoError(t, err)

			// B replays from the paused checkpoint after A's run; C, which
			// read the thread before B wrote, replays it too.
			ga, gb := gate(b.open(t)), gate(b.open(t))
			replay, late := relayGraph(t, ga, "B", nil), relayGraph(t, gb, "C", nil)
			won, lost := race(t, ga, gb, func() (string, error) {
				res, err := replay.Invoke(t.Context(), nil, graph.Thread(thread), graph.FromCheckpoint(paused))
				return res.Checkpoint, err
			}, func() (string, error) {
				res, err := late.Invoke(t.Context(), nil, graph.Thread(thread), graph.FromCheckpoint(paused))
				return res.Checkpoint, err
			})
			// C's copy of the paused checkpoint, which would head its
			// branch, was refused.
			assertConflict(t, lost, "the replay's start", thread, done.Checkpoint, won)
			hist, err := replay.History(t.Context(), thread)
			require.NoError(t, err)

			// The replay's branch is the newest; A's is kept beside it.
			var branches []string
			for _, h := range hist {
				if h.Parent == paused {
					branches = append(branches, string(h.Source)+": "+strings.Join(trail.Get(h.State), " "))
				}
			}
			assert.Equal(t, []string{"replay: input", "loop: input A:a A:b"}, branches)
			snap, err := replay.State(t.Context(), thread)
			require.NoError(t, err)
			assert.Equal(t, won, snap.Checkpoint)
			assert.Equal(t, []string{"input", "B:a", "B:b", "B:c"}, trail.Get(snap.State))
		})
	}
}
