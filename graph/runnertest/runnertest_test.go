package runnertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/graph/runnertest"
)

// TestInProcess runs the suite on the engine itself.
func TestInProcess(t *testing.T) {
	runnertest.Run(t, runnertest.Harness{
		Saver:  memory.New(),
		Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return r },
	})
}

// stepper drives a thread with graph.Step and graph.RunTasks, as a runner
// outside the engine does (temporalrun's workflow, without Temporal).
type stepper struct {
	r     *graph.Runnable
	saver graph.Saver
	// cache, when set, keeps the checkpoints the steps store, and each
	// step continues the one the last reported (graph.WithStateCache).
	cache *graph.StateCache
}

// cached returns opts with the state cache, when s has one, for a step
// after checkpoint after.
func (s stepper) cached(opts []graph.Option, after string) []graph.Option {
	if s.cache == nil {
		return opts
	}
	return append(opts[:len(opts):len(opts)], graph.WithStateCache(s.cache, after))
}

func (s stepper) Invoke(ctx context.Context, input []graph.Write, opts ...graph.Option) (graph.Result, error) {
	spec, err := s.r.Spec(opts...)
	if err != nil {
		return graph.Result{}, err
	}
	res, err := s.r.Step(ctx, input, s.cached(opts, "")...)
	// The first step applied the input and answers; the others continue.
	noResume := []graph.Option{graph.WithSaver(s.saver), graph.Thread(spec.Thread)}
	for steps := 1; err == nil && res.More; steps++ {
		if steps >= spec.StepLimit {
			return graph.Result{}, &graph.StepLimitError{Limit: spec.StepLimit, LastNodes: res.Ran}
		}
		if len(res.NextTasks) > 1 {
			errs := make([]error, len(res.NextTasks))
			var wg sync.WaitGroup
			for i, label := range res.NextTasks {
				wg.Go(func() { _, errs[i] = s.r.RunTasks(ctx, res.Checkpoint, []string{label}, noResume...) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				for _, e := range errs {
					if e != nil {
						return graph.Result{}, e // the first in task order
					}
				}
			}
		}
		res, err = s.r.Step(ctx, nil, s.cached(noResume, res.Checkpoint)...)
	}
	return res.Result, err
}

// TestStepper runs the suite on a thread driven step by step from outside
// the engine: the seam temporalrun uses.
func TestStepper(t *testing.T) {
	saver := memory.New()
	runnertest.Run(t, runnertest.Harness{
		Saver:  saver,
		Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return stepper{r: r, saver: saver} },
	})
}

// TestStepperWithAStateCache runs the suite step by step with each step
// continuing from the state the step before kept in a graph.StateCache,
// as temporalrun's workers do.
func TestStepperWithAStateCache(t *testing.T) {
	saver := memory.New()
	cache := graph.NewStateCache(graph.StateCacheConfig{})
	runnertest.Run(t, runnertest.Harness{
		Saver:  saver,
		Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return stepper{r: r, saver: saver, cache: cache} },
	})
}

// TestStreamsInProcess runs the stream checks on the engine against
// itself: they hold for the reference they compare runners with.
func TestStreamsInProcess(t *testing.T) {
	runnertest.RunStreams(t, runnertest.StreamHarness{
		Saver:  memory.New(),
		Runner: func(t *testing.T, r *graph.Runnable) runnertest.Streamer { return r },
	})
}

// TestInProcessByStream runs the suite through the engine's Stream.
func TestInProcessByStream(t *testing.T) {
	runnertest.Run(t, runnertest.Harness{
		Saver:  memory.New(),
		Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return runnertest.ByStream(r) },
	})
}

// apart runs every task a node starts in a run of its own
// (graph.RunScheduled), as a runner that runs each task as an activity on
// any worker does: never through the closure of the node's own run.
type apart struct {
	r     *graph.Runnable
	saver graph.Saver
}

func (a apart) Invoke(ctx context.Context, input []graph.Write, opts ...graph.Option) (graph.Result, error) {
	exec := graph.TaskExecutorFunc(func(ctx context.Context, c graph.TaskCall, _ func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
		return a.r.RunScheduled(ctx, c, graph.WithSaver(a.saver), graph.Thread(c.Thread))
	})
	return a.r.Invoke(ctx, input, append(opts, graph.WithTaskExecutor(exec))...)
}

// TestTasksApart runs the suite with every task of a node run apart from
// the node's run.
func TestTasksApart(t *testing.T) {
	saver := memory.New()
	runnertest.Run(t, runnertest.Harness{
		Saver:  saver,
		Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return apart{r, saver} },
	})
}
