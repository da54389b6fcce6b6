package temporalrun

import (
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// WorkerConfig configures a worker.
type WorkerConfig struct {
	// TaskQueue is the queue the worker polls.
	TaskQueue string
	// Graphs are the graphs it runs and the saver of their threads.
	Graphs *Graphs
	// StepsOnly makes a worker of steps alone, for a queue of one kind of
	// node (model, tool, code): it runs no workflow code.
	StepsOnly bool
	// Options are the SDK's worker options (concurrency, sticky cache).
	Options worker.Options
}

// NewWorker returns a worker (not started) that runs the run workflow and
// the step activities of cfg.Graphs on cfg.TaskQueue. Start it with Run or
// Start; stop it with Stop.
func NewWorker(c client.Client, cfg WorkerConfig) (worker.Worker, error) {
	switch {
	case c == nil:
		return nil, errors.New("temporalrun: NewWorker: client is nil")
	case cfg.TaskQueue == "":
		return nil, errors.New("temporalrun: NewWorker: TaskQueue is empty")
	case cfg.Graphs == nil:
		return nil, errors.New("temporalrun: NewWorker: Graphs is nil")
	}
	opts := cfg.Options
	opts.DisableWorkflowWorker = opts.DisableWorkflowWorker || cfg.StepsOnly
	w := worker.New(c, cfg.TaskQueue, opts)
	g := cfg.Graphs
	if !opts.DisableWorkflowWorker {
		w.RegisterWorkflowWithOptions(g.workflowFn, workflow.RegisterOptions{Name: WorkflowName})
	}
	w.RegisterActivityWithOptions(g.step, activity.RegisterOptions{Name: StepActivityName})
	w.RegisterActivityWithOptions(g.head, activity.RegisterOptions{Name: HeadActivityName})
	w.RegisterActivityWithOptions(g.task, activity.RegisterOptions{Name: TaskActivityName})
	return w, nil
}

// RegisterReplay registers the run workflow with a replayer, to check that
// histories recorded by an older build replay on this one (a change to
// the workflow code that would not must be guarded with
// workflow.GetVersion).
func RegisterReplay(r worker.WorkflowReplayer, g *Graphs) {
	r.RegisterWorkflowWithOptions(g.workflowFn, workflow.RegisterOptions{Name: WorkflowName})
}
