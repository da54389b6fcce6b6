package temporalrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/coorflow/coorflow/graph"
)

// Names under which the workflow, its activities, updates and queries are
// registered. They are part of the wire contract between runners and
// workers: renaming one breaks runs in flight.
const (
	WorkflowName     = "coorflow.Run"
	StepActivityName = "coorflow.Step"
	HeadActivityName = "coorflow.Head"
	TaskActivityName = "coorflow.Task"
	UpdateWait       = "wait"
	UpdateResume     = "resume"
	UpdateCaller     = "caller"
	QueryStatus      = "status"
)

// RunInput starts (or continues, after continue-as-new) the workflow of one
// run of a thread.
type RunInput struct {
	Graph  string `json:"graph"`
	Thread string `json:"thread"`
	// Input is the run's input (EncodeWrites); nil continues the thread.
	Input json.RawMessage `json:"input,omitempty"`
	// Answers, by interrupt id, resume a thread whose last run paused and
	// whose workflow has ended since (an update answers a live one).
	Answers   map[string]json.RawMessage `json:"answers,omitempty"`
	StepLimit int                        `json:"step_limit"`
	// Breakpoints.
	InterruptBefore []string `json:"interrupt_before,omitempty"`
	InterruptAfter  []string `json:"interrupt_after,omitempty"`
	// Queues routes steps to task queues (see Queues).
	Queues Queues `json:"queues"`
	// Timeouts of the step activity.
	StepTimeout      time.Duration `json:"step_timeout"`
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout"`
	MaxAttempts      int           `json:"max_attempts"`
	// LocalSteps runs the one-task steps that continue the run on the
	// default queue as local activities (unless Config.ActivitySteps).
	LocalSteps bool `json:"local_steps,omitempty"`
	// TaskNodes are the nodes that start tasks (graph.Runnable.TaskNodes):
	// their steps are never local, so that their tasks reach other workers.
	TaskNodes []string `json:"task_nodes,omitempty"`
	// ScheduleToStartTimeout bounds a step's wait for a worker (0: none).
	ScheduleToStartTimeout time.Duration `json:"schedule_to_start_timeout,omitempty"`
	// StepsPerRun caps the steps one workflow execution takes before it
	// continues as new at a superstep boundary (0: only when the server
	// suggests it).
	StepsPerRun int `json:"steps_per_run,omitempty"`
	// Events selects the events the steps store in the event log for a
	// caller that streams the run (Runner.Stream); nil: none.
	Events *graph.EventSpec `json:"events,omitempty"`
	// Runtime holds the runtime values the steps give the nodes
	// (Config.RuntimeKeys).
	Runtime map[string]string `json:"runtime,omitempty"`
	// Budget is what the steps keep the run's model calls within; nil
	// for no budget.
	Budget *Budget `json:"budget,omitempty"`

	// TaskActivities runs each task a node starts (graph.Schedule) as an
	// activity of its own (unless Config.TasksInNode); TaskTimeout bounds
	// one (0: StepTimeout).
	TaskActivities bool          `json:"task_activities,omitempty"`
	TaskTimeout    time.Duration `json:"task_timeout,omitempty"`

	// Carried over by continue-as-new.
	Cont *continuation `json:"cont,omitempty"`
}

// continuation is what a run carries into its next workflow execution.
type continuation struct {
	After string   `json:"after"`
	Steps int      `json:"steps"`
	Last  []string `json:"last,omitempty"`
	Next  []string `json:"next,omitempty"`
	Tasks []string `json:"tasks,omitempty"`
}

// Queues routes each step to a task queue: the queue of its nodes when
// every node of the step has the same one (Nodes), otherwise Default. So
// a step of model calls goes to the model workers, one of tools to the
// tool workers.
type Queues struct {
	Default string            `json:"default"`
	Nodes   map[string]string `json:"nodes,omitempty"`
	// Tasks sends the activity of a task a node starts to the queue of
	// a label it carries ("NAME:VALUE" here), else of the longest prefix
	// of its key here, else to its node's queue (Config.TaskQueues).
	Tasks map[string]string `json:"tasks,omitempty"`
}

func (q Queues) forStep(nodes []string) string {
	queue := ""
	for _, n := range nodes {
		nq, ok := q.Nodes[n]
		if !ok || (queue != "" && nq != queue) {
			return q.Default
		}
		queue = nq
	}
	if queue == "" {
		return q.Default
	}
	return queue
}

// Output is where a run stands when it pauses or ends: the values stay in
// the saver, at Checkpoint.
type Output struct {
	Status     graph.Status          `json:"status"`
	Thread     string                `json:"thread"`
	Checkpoint string                `json:"checkpoint"`
	Step       int                   `json:"step"`
	Interrupts []graph.InterruptInfo `json:"interrupts,omitempty"`
	// Breakpoint: the run paused at a static breakpoint.
	Breakpoint bool `json:"breakpoint,omitempty"`
	// Continued: this execution continued as new; ask the next one.
	Continued bool `json:"continued,omitempty"`
	// Steps is the number of steps the run has taken.
	Steps int `json:"steps"`
}

// StepInput is the argument of the step activity.
type StepInput struct {
	Graph  string `json:"graph"`
	Thread string `json:"thread"`
	// After is the thread's newest checkpoint as the workflow knows it; a
	// retried step that finds the thread past it does not run again.
	After   string                     `json:"after"`
	Input   json.RawMessage            `json:"input,omitempty"`
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// Breakpoints.
	InterruptBefore []string `json:"interrupt_before,omitempty"`
	InterruptAfter  []string `json:"interrupt_after,omitempty"`
	// Events selects the events the step stores for its caller.
	Events *graph.EventSpec `json:"events,omitempty"`
	// Runtime holds the runtime values of the run's nodes.
	Runtime map[string]string `json:"runtime,omitempty"`
	Budget  *Budget           `json:"budget,omitempty"`
	// TaskActivities: the tasks the step's nodes start run as
	// activities of their own (RunInput.TaskActivities).
	TaskActivities bool `json:"task_activities,omitempty"`
}

// StepOutput is the result of the step activity.
type StepOutput struct {
	Status     graph.Status          `json:"status"`
	More       bool                  `json:"more"`
	Checkpoint string                `json:"checkpoint"`
	Step       int                   `json:"step"`
	Ran        []string              `json:"ran,omitempty"`
	Next       []string              `json:"next,omitempty"`
	NextTasks  []string              `json:"next_tasks,omitempty"`
	Interrupts []graph.InterruptInfo `json:"interrupts,omitempty"`
	Breakpoint bool                  `json:"breakpoint,omitempty"`
}

// HeadOutput is the result of the head activity.
type HeadOutput struct {
	Checkpoint string   `json:"checkpoint"`
	Next       []string `json:"next,omitempty"`
	NextTasks  []string `json:"next_tasks,omitempty"`
}

// TaskInput is the argument of the task activity: tasks of the step after
// checkpoint After to run.
type TaskInput struct {
	Graph  string   `json:"graph"`
	Thread string   `json:"thread"`
	After  string   `json:"after"`
	Labels []string `json:"labels"`
	// Events selects the events the tasks store for their caller.
	Events *graph.EventSpec `json:"events,omitempty"`
	// Runtime holds the runtime values of the run's nodes.
	Runtime map[string]string `json:"runtime,omitempty"`
	Budget  *Budget           `json:"budget,omitempty"`
	// TaskActivities: as StepInput's.
	TaskActivities bool `json:"task_activities,omitempty"`
}

// Caller is the argument of the "caller" update: what the caller that
// resumes or joins a run gives its next steps.
type Caller struct {
	Events  *graph.EventSpec  `json:"events,omitempty"`
	Runtime map[string]string `json:"runtime,omitempty"`
	Budget  *Budget           `json:"budget,omitempty"`
}

// runState is the workflow's view of its run, shared by the main loop and
// the update handlers.
type runState struct {
	g        *Graphs
	in       RunInput
	out      Output
	err      error
	settled  bool // out or err holds where the run stands
	gen      int  // counts settlements
	answers  map[string]json.RawMessage
	resuming bool
	next     []string
	tasks    []string // labels of the next step's tasks
	last     []string
	taskRuns *taskRuns // the task activities in flight (taskactivity.go)
}

// workflowFn runs one run of a thread: steps as activities until the run
// ends, pausing on interrupts until a resume update answers them.
func (g *Graphs) workflowFn(ctx workflow.Context, in RunInput) (Output, error) {
	w := &runState{g: g, in: in, out: Output{Thread: in.Thread}}
	if err := w.register(ctx); err != nil {
		return Output{}, err
	}
	out, err := w.loop(ctx)
	var cont *workflow.ContinueAsNewError
	if errors.As(err, &cont) {
		w.settle(Output{Thread: in.Thread, Continued: true}, nil)
	} else {
		w.settle(out, err)
	}
	// Let the handlers waiting on this run return before it closes.
	if werr := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); werr != nil && err == nil {
		err = werr
	}
	return out, err
}

func (w *runState) settle(out Output, err error) {
	w.out, w.err, w.settled = out, err, true
	w.gen++
}

// register installs the updates and the query.
func (w *runState) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (Output, error) { return w.out, nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateWait, func(ctx workflow.Context) (Output, error) {
		if !w.settled {
			gen := w.gen
			if err := workflow.Await(ctx, func() bool { return w.gen > gen }); err != nil {
				return Output{}, err
			}
		}
		return w.out, w.err
	}); err != nil {
		return err
	}
	// A caller that resumes or joins the run says, first, which events it
	// streams and which runtime values its nodes get; the steps after
	// take them.
	if err := workflow.SetUpdateHandler(ctx, UpdateCaller, func(ctx workflow.Context, c Caller) error {
		w.in.Events, w.in.Runtime = c.Events, c.Runtime
		if c.Budget != nil {
			w.in.Budget = c.Budget
		}
		return nil
	}); err != nil {
		return err
	}
	if err := w.registerTasks(ctx); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateResume, w.resume, workflow.UpdateHandlerOptions{Validator: w.validate})
}

// validate refuses an answer before it is recorded: the run must be
// paused, and the answers must fit its pending interrupts.
func (w *runState) validate(ctx workflow.Context, a graph.Answers) error {
	_, err := w.resolve(a)
	return err
}

func (w *runState) resolve(a graph.Answers) (map[string]json.RawMessage, error) {
	if !w.settled || w.resuming || w.out.Status != graph.StatusInterrupted {
		return nil, encodeError(fmt.Errorf("temporalrun: thread %q is not waiting on an interrupt (it is running or has ended): %w", w.in.Thread, graph.ErrNotInterrupted))
	}
	r, err := w.g.lookup(w.in.Graph)
	if err != nil {
		return nil, err
	}
	answers, err := r.ResolveAnswers(w.in.Thread, w.out.Interrupts, w.out.Breakpoint, a)
	return answers, encodeError(err)
}

// resume records accepted answers and returns where the run stands next.
func (w *runState) resume(ctx workflow.Context, a graph.Answers) (Output, error) {
	answers, err := w.resolve(a)
	if err != nil {
		return Output{}, err
	}
	w.answers, w.resuming, w.settled = answers, true, false
	gen := w.gen
	if err := workflow.Await(ctx, func() bool { return w.gen > gen }); err != nil {
		return Output{}, err
	}
	return w.out, w.err
}

// loop takes steps until the run ends; at an interrupt it settles and
// waits for answers.
func (w *runState) loop(ctx workflow.Context) (Output, error) {
	in := w.in
	steps, after := 0, ""
	if in.Cont != nil {
		steps, after, w.last, w.next, w.tasks = in.Cont.Steps, in.Cont.After, in.Cont.Last, in.Cont.Next, in.Cont.Tasks
	} else {
		head, err := w.head(ctx)
		if err != nil {
			return Output{}, err
		}
		after, w.next, w.tasks = head.Checkpoint, head.Next, head.NextTasks
	}
	step := StepInput{Graph: in.Graph, Thread: in.Thread, Input: in.Input, Answers: in.Answers,
		InterruptBefore: in.InterruptBefore, InterruptAfter: in.InterruptAfter, TaskActivities: in.TaskActivities}
	taken := 0
	for {
		if steps >= in.StepLimit && len(w.next) > 0 && step.Input == nil && step.Answers == nil {
			return Output{}, encodeError(&graph.StepLimitError{Limit: in.StepLimit, LastNodes: w.last})
		}
		if w.continueAsNew(ctx, taken) && step.Input == nil && step.Answers == nil {
			return Output{}, workflow.NewContinueAsNewError(ctx, WorkflowName, w.continued(after, steps))
		}
		step.After, step.Events, step.Runtime, step.Budget = after, w.in.Events, w.in.Runtime, w.in.Budget
		queue := in.Queues.forStep(w.next)
		switch {
		case step.Input != nil:
			queue = in.Queues.Default // Start's edges are not known yet
		case w.spread(step):
			// The step's tasks run as activities of their own, on their
			// nodes' queues; the step activity then applies their writes.
			if err := w.runTasks(ctx, after); err != nil {
				return Output{}, err
			}
			queue = in.Queues.Default
		}
		var out StepOutput
		var fut workflow.Future
		if w.local(step, queue) {
			// A worker that ran local steps past the history's end and
			// died left the thread ahead of what the history says: a step
			// runs the thread's next step, wherever it is, so the run
			// goes on from there (its step count misses the steps the
			// history never saw).
			fut = workflow.ExecuteLocalActivity(w.localContext(ctx), StepActivityName, step)
		} else {
			fut = workflow.ExecuteActivity(w.activityContext(ctx, queue), StepActivityName, step)
		}
		if err := fut.Get(ctx, &out); err != nil {
			return Output{}, err
		}
		step.Input, step.Answers = nil, nil
		after, w.next, w.tasks = out.Checkpoint, out.Next, out.NextTasks
		if len(out.Ran) > 0 && out.Status != graph.StatusInterrupted {
			steps++
			taken++
			w.last = out.Ran
		}
		w.out = Output{Status: out.Status, Thread: in.Thread, Checkpoint: out.Checkpoint, Step: out.Step,
			Interrupts: out.Interrupts, Breakpoint: out.Breakpoint, Steps: steps}
		switch {
		case out.More:
			continue
		case out.Status != graph.StatusInterrupted:
			return w.out, nil
		}
		// Paused: wait for answers (or cancellation).
		w.settle(w.out, nil)
		if err := workflow.Await(ctx, func() bool { return w.resuming }); err != nil {
			return w.out, err
		}
		step.Answers, w.resuming = w.answers, false
		if step.Answers == nil {
			step.Answers = map[string]json.RawMessage{} // a breakpoint: continue
		}
		steps = 0 // a resumed run counts its steps afresh, as Invoke does
	}
}

// head reads where the thread stands. Since version 1 of the change
// "local-head" it is a local activity — a short read that needs no trip
// through the server; runs started by an earlier build replay their
// regular activity.
func (w *runState) head(ctx workflow.Context) (HeadOutput, error) {
	var head HeadOutput
	in := w.in
	if workflow.GetVersion(ctx, "local-head", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		err := workflow.ExecuteActivity(w.activityContext(ctx, in.Queues.Default), HeadActivityName, in.Graph, in.Thread).Get(ctx, &head)
		return head, err
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: int32(in.MaxAttempts)},
	})
	err := workflow.ExecuteLocalActivity(lctx, HeadActivityName, in.Graph, in.Thread).Get(ctx, &head)
	return head, err
}

// local reports whether the step runs as a local activity
// (RunInput.LocalSteps): a step of one task that continues the run on the
// default queue and whose node starts no tasks (RunInput.TaskNodes).
func (w *runState) local(step StepInput, queue string) bool {
	if !w.in.LocalSteps || len(w.tasks) > 1 || step.Input != nil || step.Answers != nil || queue != w.in.Queues.Default {
		return false
	}
	for _, node := range w.next {
		if slices.Contains(w.in.TaskNodes, node) {
			return false
		}
	}
	return true
}

// localContext is activityContext for a local step: the step's timeout
// and attempts; no heartbeat (the workflow task's timeout stands for it).
func (w *runState) localContext(ctx workflow.Context) workflow.Context {
	in := w.in
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: in.StepTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    100 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
			MaximumAttempts:    int32(in.MaxAttempts),
		},
	})
}

// spread reports whether the next step's tasks run as activities of their
// own: a step of several tasks that continues a run (input and answers
// are applied by the step activity, which also owns breakpoints).
func (w *runState) spread(step StepInput) bool {
	return len(w.tasks) > 1 && step.Input == nil && step.Answers == nil &&
		len(w.in.InterruptBefore) == 0 && len(w.in.InterruptAfter) == 0
}

// runTasks runs each task of the next step as an activity, all at once,
// and waits for every one: the first failure in task order fails the run,
// as in process.
func (w *runState) runTasks(ctx workflow.Context, after string) error {
	futures := make([]workflow.Future, len(w.tasks))
	for i, label := range w.tasks {
		queue := w.in.Queues.forStep(nodesOf([]string{label}))
		futures[i] = workflow.ExecuteActivity(w.activityContext(ctx, queue), TaskActivityName,
			TaskInput{Graph: w.in.Graph, Thread: w.in.Thread, After: after, Labels: []string{label}, Events: w.in.Events, Runtime: w.in.Runtime,
				Budget: w.in.Budget, TaskActivities: w.in.TaskActivities})
	}
	var first error
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// continueAsNew reports whether this execution should hand over to a new
// one before the next step.
func (w *runState) continueAsNew(ctx workflow.Context, taken int) bool {
	if taken == 0 {
		return false
	}
	if w.in.StepsPerRun > 0 && taken >= w.in.StepsPerRun {
		return true
	}
	if w.taskRuns.count >= maxTaskUpdates {
		return true // the server takes 2000 updates per execution
	}
	return workflow.GetInfo(ctx).GetContinueAsNewSuggested()
}

func (w *runState) continued(after string, steps int) RunInput {
	in := w.in
	in.Input, in.Answers = nil, nil
	in.Cont = &continuation{After: after, Steps: steps, Last: slices.Clone(w.last), Next: slices.Clone(w.next), Tasks: slices.Clone(w.tasks)}
	return in
}

func (w *runState) activityContext(ctx workflow.Context, queue string) workflow.Context {
	in := w.in
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              queue,
		StartToCloseTimeout:    in.StepTimeout,
		ScheduleToStartTimeout: in.ScheduleToStartTimeout,
		HeartbeatTimeout:       in.HeartbeatTimeout,
		WaitForCancellation:    true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    100 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
			MaximumAttempts:    int32(in.MaxAttempts),
		},
	})
}
