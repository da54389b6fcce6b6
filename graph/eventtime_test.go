package graph_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

func TestEventTimesFollowTheRunAndANodesDurationLiesWithinIt(t *testing.T) {
	g := graph.New("chain")
	g.AddNode("a", noop)
	g.AddNode("b", noop)
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	evs := collect(t, r, nil)
	starts := map[string]time.Time{}
	for i, ev := range evs {
		if i > 0 {
			assert.False(t, ev.Time.Before(evs[i-1].Time), "%s %s comes before %s", ev.Name(), ev.Path, evs[i-1].Name())
		}
		switch ev.Kind {
		case graph.EventNodeStart:
			starts[ev.Node] = ev.Time
		case graph.EventNodeEnd:
			require.Contains(t, starts, ev.Node)
			assert.GreaterOrEqual(t, ev.Duration, time.Duration(0))
			assert.False(t, ev.Time.Add(-ev.Duration).Before(starts[ev.Node]), "node %s ran before its start event", ev.Node)
		}
	}
	assert.Len(t, starts, 2)
}

func TestAStepAndTheTasksItStartsAtOnceShareOneStartTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []graph.Option
		same int // node starts timed as the step's start
	}{
		{"all at once", nil, 2},
		{"one at a time", []graph.Option{graph.MaxConcurrency(1)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New("wide")
			g.AddNode("a", noop)
			g.AddNode("b", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge(graph.Start, "b")
			g.AddEdge("a", graph.End)
			g.AddEdge("b", graph.End)
			r, err := g.Compile()
			require.NoError(t, err)

			var stepStart time.Time
			same, later := 0, 0
			for _, ev := range collect(t, r, nil, tc.opts...) {
				switch ev.Kind {
				case graph.EventStepStart:
					stepStart = ev.Time
				case graph.EventNodeStart:
					if ev.Time.Equal(stepStart) {
						same++
					} else {
						assert.True(t, ev.Time.After(stepStart), "a task started later reads the clock then")
						later++
					}
				}
			}
			assert.Equal(t, tc.same, same)
			assert.Equal(t, 2-tc.same, later)
		})
	}
}

func TestTheEndOfANodeThatEndedItsGoroutineIsTimedWhenTheLoopHearsOfIt(t *testing.T) {
	g := graph.New("exit")
	g.AddNode("a", func(context.Context, graph.State) (graph.Command, error) {
		runtime.Goexit()
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	var start, end time.Time
	for ev := range r.Stream(t.Context(), nil) {
		switch ev.Kind {
		case graph.EventNodeStart:
			start = ev.Time
		case graph.EventNodeEnd:
			end = ev.Time
			assert.Error(t, ev.Err)
		}
	}
	require.False(t, start.IsZero())
	assert.False(t, end.Before(start), "node end %v before its start %v", end, start)
}

// TestEventTimesNeverGoBackInAParallelStep: in a parallel step, a reads
// the clock for its custom event before b does, but its event reaches the
// loop after b's has been yielded. Along the stream, times still never go
// back.
func TestEventTimesNeverGoBackInAParallelStep(t *testing.T) {
	aTimed, bYielded := make(chan struct{}), make(chan struct{})
	g := graph.New("wide")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(doneHook{ctx, new(sync.Once), func() { // a's event has its time
			close(aTimed)
			<-bYielded
		}}, "a")
		return graph.Command{}, nil
	})
	g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
		<-aTimed
		graph.Emit(ctx, "b")
		return graph.Command{}, nil
	})
	for _, n := range []string{"a", "b"} {
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	r, err := g.Compile()
	require.NoError(t, err)

	var evs []graph.Event
	var customs []any
	for ev, err := range r.Stream(t.Context(), nil) {
		require.NoError(t, err)
		evs = append(evs, ev)
		if ev.Kind == graph.EventCustom {
			customs = append(customs, ev.Data)
			if ev.Data == "b" {
				close(bYielded)
			}
		}
	}
	assert.Equal(t, []any{"b", "a"}, customs)
	for i := 1; i < len(evs); i++ {
		assert.False(t, evs[i].Time.Before(evs[i-1].Time), "%s %s at %v comes after %s %s at %v",
			evs[i].Name(), evs[i].Path, evs[i].Time, evs[i-1].Name(), evs[i-1].Path, evs[i-1].Time)
	}
}
