package temporalrun_test

import (
	"testing"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/graph/runnertest"
	"github.com/coorflow/coorflow/temporalrun"
)

// TestSemanticsWithTaskActivities runs the suite with each task a node
// starts run as an activity of its own (Config.TaskActivities).
func TestSemanticsWithTaskActivities(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	tasks := func(c *temporalrun.Config) { c.TaskActivities = true }
	runnertest.Run(t, runnertest.Harness{
		Saver:  e.saver,
		Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return e.runner(r, tasks) },
	})
}
