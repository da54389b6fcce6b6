package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

func TestStepLimitNamesTheLastNodesRun(t *testing.T) {
	g := graph.New("forever", countKey)
	g.AddNode("ping", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(countKey.Set(1)), nil
	})
	g.AddNode("pong", noop)
	g.AddEdge(graph.Start, "ping")
	g.AddEdge("ping", "pong")
	g.AddConditionalEdges("pong", func(ctx context.Context, s graph.State) (string, error) {
		return "ping", nil // never stops
	}, graph.Paths("ping", graph.End))
	r, err := g.Compile()
	require.NoError(t, err)

	_, err = r.Invoke(t.Context(), nil, graph.StepLimit(7))
	require.ErrorIs(t, err, graph.ErrStepLimit)
	assert.EqualError(t, err, "graph: step limit of 7 reached (last step ran ping); raise it with graph.StepLimit if the loop is intended")

	_, err = r.Invoke(t.Context(), nil)
	var sle *graph.StepLimitError
	require.ErrorAs(t, err, &sle)
	assert.Equal(t, 100, sle.Limit, "the default limit")
	assert.Equal(t, []string{"pong"}, sle.LastNodes)

	_, err = r.Invoke(t.Context(), nil, graph.StepLimit(7), graph.StepLimitSetting("settings.step_limit"))
	assert.EqualError(t, err, "graph: step limit of 7 reached (last step ran ping); raise it with settings.step_limit if the loop is intended",
		"a program names its own setting")
}

func TestCancellationStopsASlowNodeAndReturnsTheContextError(t *testing.T) {
	started := make(chan struct{})
	ranAfter := false
	g := graph.New("slow", countKey)
	g.AddNode("slow", func(ctx context.Context, s graph.State) (graph.Command, error) {
		close(started)
		<-ctx.Done()
		return graph.Command{}, ctx.Err()
	})
	g.AddNode("after", func(ctx context.Context, s graph.State) (graph.Command, error) {
		ranAfter = true
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "slow")
	g.AddEdge("slow", "after")
	g.AddEdge("after", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	_, err = r.Invoke(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.EqualError(t, err, `graph: run "slow" cancelled in step 0: context canceled`)
	assert.False(t, ranAfter, "nothing runs after cancellation")
}

func boom(context.Context, graph.State) (graph.Command, error) {
	var m map[string]int
	//lint:ignore SA5000 the nil map write is the point: a real runtime panic
	m["x"] = 1
	return graph.Command{}, nil
}

func TestPanickingNodeBecomesANodeErrorWithItsStack(t *testing.T) {
	g := graph.New("panics")
	g.AddNode("first", noop)
	g.AddNode("boom", boom, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
	g.AddEdge(graph.Start, "first")
	g.AddEdge("first", "boom")
	g.AddEdge("boom", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)

	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "boom", ne.Node)
	assert.Equal(t, "panics/boom", ne.Path)
	assert.Equal(t, 1, ne.Step)
	assert.Equal(t, 1, ne.Attempt, "panics are not retried by default")
	var pe *graph.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Stack, "graph_test.boom")
	assert.EqualError(t, err, `graph: node "boom" (step 1, attempt 1): panic: assignment to entry in nil map`)
}

var errFlaky = errors.New("flaky service")

func TestRetrySucceedsOnTheThirdAttemptWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var at []time.Time
		g := graph.New("retry", countKey)
		g.AddNode("flaky", func(ctx context.Context, s graph.State) (graph.Command, error) {
			at = append(at, time.Now())
			if len(at) < 3 {
				return graph.Command{}, fmt.Errorf("call %d: %w", len(at), errFlaky)
			}
			return graph.Update(countKey.Set(len(at))), nil
		}, graph.WithRetry(graph.RetryPolicy{
			MaxAttempts:     5,
			InitialInterval: 100 * time.Millisecond,
			BackoffFactor:   3,
			RetryOn:         func(err error) bool { return errors.Is(err, errFlaky) },
		}))
		g.AddEdge(graph.Start, "flaky")
		g.AddEdge("flaky", graph.End)
		r, err := g.Compile()
		require.NoError(t, err)

		var ends []graph.Event
		for ev, err := range r.Stream(t.Context(), nil, graph.Events(graph.EventNodeEnd)) {
			require.NoError(t, err)
			ends = append(ends, ev)
		}
		require.Len(t, at, 3)
		assert.Equal(t, 100*time.Millisecond, at[1].Sub(at[0]), "first backoff")
		assert.Equal(t, 300*time.Millisecond, at[2].Sub(at[1]), "second backoff, times the factor")
		require.Len(t, ends, 1)
		assert.Equal(t, 3, ends[0].Attempt)
		assert.Equal(t, 400*time.Millisecond, ends[0].Duration)
	})
}

func TestRetryStopsAtMaxAttemptsAndSkipsErrorsItShouldNotRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls counter
		g := graph.New("retry-limits")
		g.AddNode("always", func(ctx context.Context, s graph.State) (graph.Command, error) {
			calls.inc("always")
			return graph.Command{}, errFlaky
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, Jitter: true}))
		g.AddNode("permanent", func(ctx context.Context, s graph.State) (graph.Command, error) {
			calls.inc("permanent")
			return graph.Command{}, graph.Permanent(errFlaky)
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
		for _, n := range []string{"always", "permanent"} {
			g.AddEdge(graph.Start, n)
			g.AddEdge(n, graph.End)
		}
		r, err := g.Compile()
		require.NoError(t, err)
		_, err = r.Invoke(t.Context(), nil)
		require.ErrorIs(t, err, errFlaky)
		assert.Equal(t, 3, calls.get("always"))
		assert.Equal(t, 1, calls.get("permanent"))
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Equal(t, "always", ne.Node, "the first failed task in task order is reported")
		assert.Equal(t, 3, ne.Attempt)
	})
}

func TestNodeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		attempts := 0
		g := graph.New("timeout")
		g.AddNode("stuck", func(ctx context.Context, s graph.State) (graph.Command, error) {
			attempts++
			<-ctx.Done()
			return graph.Command{}, ctx.Err()
		}, graph.WithTimeout(2*time.Second), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Second}))
		g.AddEdge(graph.Start, "stuck")
		g.AddEdge("stuck", graph.End)
		r, err := g.Compile()
		require.NoError(t, err)
		start := time.Now()
		_, err = r.Invoke(t.Context(), nil)
		require.ErrorIs(t, err, graph.ErrNodeTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualError(t, err, `graph: node "stuck" (step 0, attempt 2): graph: node timed out after 2s: context deadline exceeded`)
		assert.Equal(t, 2, attempts, "a timeout is retried like any error")
		assert.Equal(t, 5*time.Second, time.Since(start), "two 2s attempts and a 1s backoff")
	})
}

func TestErrorHandlerRoutesToAFallbackNode(t *testing.T) {
	var handled error
	g := graph.New("fallback", logKey)
	g.AddNode("primary", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Command{}, errFlaky
	}, graph.OnError(func(ctx context.Context, s graph.State, err error) (graph.Command, error) {
		handled = err
		return graph.Goto("fallback", graph.AppendTo(logKey, "primary failed")), nil
	}), graph.Destinations("fallback"))
	g.AddNode("next", logger(&counter{}, "next"))
	g.AddNode("fallback", logger(&counter{}, "fallback"))
	g.AddEdge(graph.Start, "primary")
	g.AddEdge("primary", "next")
	g.AddEdge("next", graph.End)
	g.AddEdge("fallback", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"primary failed", "fallback"}, logKey.Get(res.State))
	var ne *graph.NodeError
	require.ErrorAs(t, handled, &ne, "the handler gets the node error")
	assert.ErrorIs(t, handled, errFlaky)
}

func TestFailingErrorHandlerFailsTheRunWithBothErrors(t *testing.T) {
	g := graph.New("fallback-fails")
	g.AddNode("primary", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Command{}, errFlaky
	}, graph.OnError(func(ctx context.Context, s graph.State, err error) (graph.Command, error) {
		return graph.Command{}, errors.New("no fallback today")
	}))
	g.AddEdge(graph.Start, "primary")
	g.AddEdge("primary", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	require.ErrorIs(t, err, errFlaky)
	assert.EqualError(t, err, `graph: node "primary" (step 0, attempt 1): error handler failed: no fallback today (node error: flaky service)`)
}
