package temporalrun_test

import (
	"testing"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/graph/runnertest"
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
