package temporalrun_test

import (
	"testing"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/graph/runnertest"
	"github.com/coorflow/coorflow/temporalrun"
)

// TestSemantics runs the engine's semantics suite on Temporal: the same
// graphs, the same assertions as in process (graph/runnertest), on the
// real dev server with the PostgreSQL saver.
func TestSemantics(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	runnertest.Run(t, runnertest.Harness{
		Saver:  e.saver,
		Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return e.runner(r) },
	})
}

// TestSemanticsByStream runs the suite through Stream on Temporal: each
// run's result is read from its events.
func TestSemanticsByStream(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	runnertest.Run(t, runnertest.Harness{
		Saver:  e.saver,
		Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return runnertest.ByStream(e.runner(r)) },
	})
}

// TestSemanticsWithActivitySteps runs the suite, and the stream suite,
// with every step as an activity (Config.ActivitySteps): the suites
// above run one-task steps as local activities, the default.
func TestSemanticsWithActivitySteps(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	activities := func(c *temporalrun.Config) { c.ActivitySteps = true }
	t.Run("invoke", func(t *testing.T) {
		runnertest.Run(t, runnertest.Harness{
			Saver:  e.saver,
			Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return e.runner(r, activities) },
		})
	})
	t.Run("stream", func(t *testing.T) {
		runnertest.RunStreams(t, runnertest.StreamHarness{
			Saver:  e.saver,
			Runner: func(t *testing.T, r *graph.Runnable) runnertest.Streamer { return e.runner(r, activities) },
		})
	})
}
