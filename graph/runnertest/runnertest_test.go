package runnertest_test

import (
	"testing"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/graph/runnertest"
)

// TestInProcess runs the suite on the engine itself.
func TestInProcess(t *testing.T) {
	runnertest.Run(t, runnertest.Harness{
		Saver:  memory.New(),
		Runner: func(t *testing.T, r *graph.Runnable) runnertest.Invoker { return r },
	})
}
