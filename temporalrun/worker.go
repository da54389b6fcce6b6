package temporalrun

import (
	"errors"
	"time"

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
	// Two have other defaults here than the SDK's, for a fast recovery
	// from a dead worker: StickyScheduleToStartTimeout (DefaultStickyTimeout
	// instead of 5 seconds: how long the next workflow task of a run whose
	// workflow code ran on a dead worker waits for it before any worker
	// takes it) and MaxHeartbeatThrottleInterval (one second instead of
	// 60: a step's heartbeats reach the server every third of its
	// heartbeat timeout, not at 80% of it, so a busy machine does not
	// make a live step look dead).
	Options worker.Options
}

// DefaultStickyTimeout is the default sticky schedule-to-start timeout of
// a worker (WorkerConfig.Options).
const DefaultStickyTimeout = 2 * time.Second

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
	if opts.StickyScheduleToStartTimeout <= 0 {
		opts.StickyScheduleToStartTimeout = DefaultStickyTimeout
	}
	if opts.MaxHeartbeatThrottleInterval <= 0 {
		opts.MaxHeartbeatThrottleInterval = time.Second
	}
	w := worker.New(c, cfg.TaskQueue, opts)
	g := cfg.Graphs
	if !opts.DisableWorkflowWorker {
		w.RegisterWorkflowWithOptions(g.workflowFn, workflow.RegisterOptions{Name: WorkflowName})
	}
	w.RegisterActivityWithOptions(g.step, activity.RegisterOptions{Name: StepActivityName})
	w.RegisterActivityWithOptions(g.head, activity.RegisterOptions{Name: HeadActivityName})
	w.RegisterActivityWithOptions(g.task, activity.RegisterOptions{Name: TaskActivityName})
	w.RegisterActivityWithOptions(g.scheduledTask, activity.RegisterOptions{Name: ScheduledTaskActivityName})
	return w, nil
}

// RegisterReplay registers the run workflow with a replayer, to check that
// histories recorded by an older build replay on this one (a change to
// the workflow code that would not must be guarded with
// workflow.GetVersion).
func RegisterReplay(r worker.WorkflowReplayer, g *Graphs) {
	r.RegisterWorkflowWithOptions(g.workflowFn, workflow.RegisterOptions{Name: WorkflowName})
}
