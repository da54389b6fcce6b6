package temporalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/coorflow/coorflow/graph"
)

// This file runs the tasks a node starts at run time (graph.Schedule) as
// activities of their own (the default; Config.TasksInNode keeps them in
// the node's activity): the node's activity asks its run's workflow, by
// the update "task", to run each task; the
// update's handler (workflow code) schedules the task's activity, on the
// task's queue, with its own heartbeat and timeout, and answers with how
// the task ended once the activity has. The task's activity runs it with
// graph.Runnable.RunScheduled, on any worker, and journals its value in
// the saver; the node's activity only waits.

// Names of the task activity, its update and the signal that withdraws
// one; part of the wire contract, like those of workflow.go.
const (
	ScheduledTaskActivityName = "coorflow.ScheduledTask"
	UpdateTask                = "task"
	SignalCancelTask          = "cancel-task"
)

// taskRequest is the argument of the "task" update: one attempt of a
// task, by the id of its update.
type taskRequest struct {
	ID   string         `json:"id"`
	Call graph.TaskCall `json:"call"`
}

// scheduledTaskInput is the argument of the task activity.
type scheduledTaskInput struct {
	Graph   string            `json:"graph"`
	Thread  string            `json:"thread"`
	Call    graph.TaskCall    `json:"call"`
	Events  *graph.EventSpec  `json:"events,omitempty"`
	Runtime map[string]string `json:"runtime,omitempty"`
	Budget  *Budget           `json:"budget,omitempty"`
}

// taskOutput is how a task ended, as the task activity and the update
// report it: its value (JSON), or its questions, or its error.
type taskOutput struct {
	Value      json.RawMessage       `json:"value,omitempty"`
	Interrupts []graph.InterruptInfo `json:"interrupts,omitempty"`
	Error      *errorInfo            `json:"error,omitempty"`
	// Permanent: the error was marked graph.Permanent.
	Permanent bool `json:"permanent,omitempty"`
}

// result is the task's value or error as graph.Schedule expects them
// from a TaskExecutor.
func (o taskOutput) result() (json.RawMessage, error) {
	switch {
	case len(o.Interrupts) > 0:
		return nil, &graph.InterruptError{Interrupts: o.Interrupts}
	case o.Error != nil:
		err := o.Error.rebuild()
		if o.Permanent {
			err = graph.Permanent(err)
		}
		return nil, err
	}
	return o.Value, nil
}

// scheduledTask is the task activity: it runs one task of a node with
// RunScheduled (the node runs again up to it, its journal answering the
// rest) and reports how the task ended. The task's own failure is its
// output, not the activity's: the node's Schedule decides on retries
// (TaskOptions.Retry); Temporal retries the activity only when its worker
// or the saver failed it.
func (g *Graphs) scheduledTask(ctx context.Context, in scheduledTaskInput) (taskOutput, error) {
	r, err := g.lookup(in.Graph)
	if err != nil {
		return taskOutput{}, err
	}
	stop := heartbeat(ctx)
	defer stop()
	if ctx, err = g.withMeter(ctx, in.Budget); err != nil {
		return taskOutput{}, err
	}
	sw := g.stream(ctx, r, in.Thread, in.Events)
	opts := append([]graph.Option{graph.WithSaver(g.saver), graph.Thread(in.Thread), runtime(in.Runtime)}, sw.options(in.Events)...)
	raw, err := r.RunScheduled(ctx, in.Call, opts...)
	sw.close() // the task's events are stored before it reports its end
	switch {
	case err != nil && ctx.Err() != nil:
		return taskOutput{}, ctx.Err() // cancelled (or timed out): Temporal's business
	case err != nil:
		if ins := interruptsIn(err); len(ins) > 0 {
			return taskOutput{Interrupts: ins}, checkPayload(in.Thread, ins)
		}
		info := describe(err)
		info.shorten(maxPayload / 4)
		return taskOutput{Error: info, Permanent: graph.IsPermanent(err)}, nil
	case len(raw) > maxPayload:
		msg := fmt.Sprintf("temporalrun: thread %q: the value of task %q of node %q is %d bytes as JSON; it goes through Temporal's history, which refuses payloads over 2 MB: return a reference to the store, not the value",
			in.Thread, in.Call.Key, in.Call.Node, len(raw))
		return taskOutput{Error: &errorInfo{Message: msg}, Permanent: true}, nil
	}
	return taskOutput{Value: raw}, nil
}

// interruptsIn collects the interrupts in err's tree (several questions
// joined included).
func interruptsIn(err error) []graph.InterruptInfo {
	var out []graph.InterruptInfo
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *graph.InterruptError:
			out = append(out, e.Interrupts...)
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// forTask is the queue of a task's activity: the queue of a placement
// label the task carries, as "NAME:VALUE" in Tasks (of several, the
// first by name), else of the longest prefix of its key in Tasks, else
// its node's queue (Nodes), else Default. The choice depends on the map's
// contents alone, not on its order, so it is deterministic in workflow
// code.
func (q Queues) forTask(c graph.TaskCall) string {
	for _, name := range slices.Sorted(maps.Keys(c.Labels)) {
		if tq := q.Tasks[name+":"+c.Labels[name]]; tq != "" {
			return tq
		}
	}
	best, queue := -1, ""
	for prefix, tq := range q.Tasks {
		if strings.HasPrefix(c.Key, prefix) && len(prefix) > best {
			best, queue = len(prefix), tq
		}
	}
	if queue != "" {
		return queue
	}
	return q.forStep([]string{c.Node})
}

// maxTaskUpdates is how many task updates a workflow execution takes
// before it continues as new, at the next superstep boundary: the server
// refuses an execution's updates past 2000 by default (dynamic config
// history.maxTotalUpdates).
const maxTaskUpdates = 1000

// taskRuns is what the workflow keeps of the task updates in flight: how
// to withdraw each (SignalCancelTask), and the ids withdrawn before their
// update came.
type taskRuns struct {
	count     int // task updates this execution took
	root      workflow.Context
	listening bool
	cancels   map[string]workflow.CancelFunc
	withdrawn map[string]bool
}

// registerTasks installs the "task" update. Nothing runs until a node's
// activity sends one, so histories of runs without task activities
// replay unchanged.
func (w *runState) registerTasks(ctx workflow.Context) error {
	w.taskRuns = &taskRuns{root: ctx, cancels: map[string]workflow.CancelFunc{}, withdrawn: map[string]bool{}}
	return workflow.SetUpdateHandler(ctx, UpdateTask, w.runTask)
}

// runTask is the "task" update: it runs one attempt of a task as an
// activity and returns how the task ended. The same update id (a node's
// activity retried after its worker died asks again for the tasks it was
// waiting on) gets the same answer from the server, without a second
// activity.
func (w *runState) runTask(ctx workflow.Context, req taskRequest) (taskOutput, error) {
	tr := w.taskRuns
	tr.count++
	if !tr.listening {
		tr.listening = true
		workflow.Go(tr.root, tr.listen)
	}
	if tr.withdrawn[req.ID] {
		delete(tr.withdrawn, req.ID)
		return taskOutput{}, temporal.NewCanceledError("withdrawn by its node before it started")
	}
	ctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	tr.cancels[req.ID] = cancel
	defer delete(tr.cancels, req.ID)
	in := w.in
	queue := in.Queues.forTask(req.Call)
	timeout := in.TaskTimeout
	if timeout <= 0 {
		timeout = in.StepTimeout
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:             "task/" + req.ID,
		TaskQueue:              queue,
		StartToCloseTimeout:    timeout,
		ScheduleToStartTimeout: in.ScheduleToStartTimeout,
		HeartbeatTimeout:       in.HeartbeatTimeout,
		WaitForCancellation:    true,
		// A task goes to whichever worker of its queue polls first, not
		// back to the worker that ran the node's workflow task.
		DisableEagerExecution: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    100 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
			MaximumAttempts:    int32(in.MaxAttempts),
		},
	})
	var out taskOutput
	err := workflow.ExecuteActivity(actx, ScheduledTaskActivityName, scheduledTaskInput{Graph: in.Graph, Thread: in.Thread,
		Call: req.Call, Events: w.in.Events, Runtime: w.in.Runtime, Budget: w.in.Budget}).Get(ctx, &out)
	return out, err
}

// listen withdraws the task updates their nodes no longer wait for (the
// node's Schedule stopped, or its context ended): their activities see
// their context cancelled.
func (tr *taskRuns) listen(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalCancelTask)
	for {
		var id string
		if !ch.Receive(ctx, &id) {
			return
		}
		if cancel, ok := tr.cancels[id]; ok {
			cancel()
		} else if len(tr.withdrawn) < 10_000 {
			tr.withdrawn[id] = true
		}
	}
}

// taskExecutor returns the option that sends the tasks a node of this
// activity starts to activities of their own, when the run asks for it
// (RunInput.TaskActivities). A local activity runs them itself: its
// workflow task is held open while it runs, so no update would reach the
// workflow before it ends.
func taskExecutor(ctx context.Context, on bool) []graph.Option {
	if !on {
		return nil
	}
	info := activity.GetInfo(ctx)
	if info.IsLocalActivity {
		return nil
	}
	return []graph.Option{graph.WithTaskExecutor(&taskDispatcher{c: activity.GetClient(ctx), activity: ctx,
		workflowID: info.WorkflowExecution.ID, runID: info.WorkflowExecution.RunID, activityID: info.ActivityID})}
}

// taskDispatcher is the TaskExecutor of a node's activity: each attempt
// of a task is an update of the run's workflow, which runs the task as an
// activity. The update id names the node's activity (the same across
// its retries: a retry waits for the tasks in flight instead of starting
// them again), the task and the attempt.
type taskDispatcher struct {
	c client.Client
	// activity is the node activity's context: when it ends (the
	// activity timed out, or was cancelled), the node is not what stopped
	// waiting, and its tasks are not withdrawn — the activity's next
	// attempt asks for them again by the same ids.
	activity                      context.Context
	workflowID, runID, activityID string
}

// ExecuteTask asks the workflow to run the task and waits for its end.
func (d *taskDispatcher) ExecuteTask(ctx context.Context, call graph.TaskCall, _ func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	id := fmt.Sprintf("%s/%s/%d", d.activityID, call.ID, call.Attempt)
	backoff := 100 * time.Millisecond
	for {
		h, err := d.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: d.workflowID, RunID: d.runID, UpdateName: UpdateTask, UpdateID: id,
			Args: []any{taskRequest{ID: id, Call: call}}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		var out taskOutput
		if err == nil {
			err = h.Get(ctx, &out)
		}
		var exhausted *serviceerror.ResourceExhausted
		switch {
		case err == nil:
			return out.result()
		case ctx.Err() != nil:
			d.withdraw(ctx, id)
			return nil, fmt.Errorf("temporalrun: task %q (%s) of node %q: %w", call.Key, call.ID, call.Node, ctx.Err())
		case transient(err) || errors.As(err, &exhausted):
			// The server is restarting, or the workflow has as many
			// updates in flight as it takes (history.maxInFlightUpdates):
			// ask again once some have ended.
			if werr := wait(ctx, backoff); werr != nil {
				d.withdraw(ctx, id)
				return nil, fmt.Errorf("temporalrun: task %q (%s) of node %q: %w", call.Key, call.ID, call.Node, werr)
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		return nil, fmt.Errorf("temporalrun: task %q (%s) of node %q: %w", call.Key, call.ID, call.Node, decodeError(err))
	}
}

// withdraw tells the workflow the node no longer waits for the task; a
// run that has ended, or a server that does not answer, needs no more.
// When the node's activity itself ended, nothing is withdrawn: a retry
// of the activity waits for the task in flight by the same update id (a
// withdrawn one would answer it "canceled").
func (d *taskDispatcher) withdraw(ctx context.Context, id string) {
	if d.activity.Err() != nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = d.c.SignalWorkflow(sctx, d.workflowID, d.runID, SignalCancelTask, id)
}
