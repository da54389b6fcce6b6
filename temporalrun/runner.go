package temporalrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/coorflow/coorflow/graph"
)

// DefaultHeartbeatTimeout is how soon, by default, a dead worker is
// noticed and its step retried on another: a step whose worker was killed
// runs again elsewhere within about this time (plus the worker's sticky
// schedule-to-start timeout when the run's workflow code was on it too,
// DefaultStickyTimeout).
const DefaultHeartbeatTimeout = 5 * time.Second

// Config configures a Runner.
type Config struct {
	// Client reaches the Temporal server.
	Client client.Client
	// Graph is the compiled graph; workers must have it under the same
	// name (Graphs).
	Graph *graph.Runnable
	// Saver is where the graph's threads live (PostgreSQL when workers
	// run on several machines); results are read from it by reference.
	Saver graph.Saver
	// TaskQueue is the queue of the run workflows and, by default, of
	// their steps.
	TaskQueue string
	// NodeQueues sends the steps that run only nodes of one queue there
	// (model calls to "model", tools to "tool", ...).
	NodeQueues map[string]string
	// StepTimeout bounds one step (default 10 minutes); HeartbeatTimeout
	// is how soon a dead worker is noticed and its step retried elsewhere
	// (default DefaultHeartbeatTimeout, 5 seconds: a step beats every third
	// of it); MaxAttempts caps the attempts of a step whose worker or saver
	// failed (default 5; a node's own failure is not retried by Temporal:
	// the node's RetryPolicy already ran).
	StepTimeout      time.Duration
	HeartbeatTimeout time.Duration
	MaxAttempts      int
	// ScheduleToStartTimeout bounds how long a step waits on its task
	// queue for a worker to take it; past it the run fails saying so
	// (Temporal does not retry this timeout: no worker polls the queue).
	// 0, the default, waits as long as it takes.
	ScheduleToStartTimeout time.Duration
	// ActivitySteps runs every step as an activity, on any worker of its
	// queue, with a heartbeat of its own. By default a step of one task
	// that continues a run on TaskQueue is a local activity instead: it
	// runs on the worker of the run's workflow code, inside its workflow
	// task, with no trip through the server (a marker in the history
	// instead of six events): a step costs about a fifth as much (doc.go,
	// BenchmarkChain100). The price: such a step is not spread
	// over the workers; a dead worker is noticed by the workflow task's
	// timeout (set to HeartbeatTimeout for these runs), as soon as a
	// step's missing heartbeat would be; and a step recovered after a
	// crash may stream its events again. Steps with input or answers,
	// steps of several tasks, steps of nodes on other queues (NodeQueues)
	// and steps of nodes that start tasks (graph.StartsTasks: a team's,
	// whose tasks are activities of their own) stay activities.
	ActivitySteps bool
	// LocalSteps is what ActivitySteps now turns off.
	//
	// Deprecated: one-task steps are local activities by default; it has
	// no effect.
	LocalSteps bool
	// TasksInNode runs the tasks a node starts (graph.Schedule: the agents
	// of a team) inside the node's activity, on its worker, under its
	// heartbeat, as an in-process run does. By default each task is an
	// activity of its own, on any worker of its queue, with its own
	// heartbeat (HeartbeatTimeout) and start-to-close timeout
	// (TaskTimeout, default StepTimeout), and the node's activity waits
	// for them (its StepTimeout bounds the whole node): 100–250 ms more
	// per group of tasks that run together (BenchmarkTeam8, a loaded
	// 2-core machine), small beside an agent's model calls. TaskQueues places the task activities: a
	// task goes to the queue of the first selector that matches it — a
	// placement label it carries, "NAME:VALUE" (graph.Task.Labels:
	// "tier:reasoning" for a factory team's agent of that tier), else the
	// longest prefix of its key ("build:" and "step:" for a factory team)
	// — else to its node's queue (NodeQueues), else TaskQueue. Every
	// worker must know the task activity (this version or later). See
	// doc.go.
	TasksInNode bool
	TaskTimeout time.Duration
	TaskQueues  map[string]string
	// StartTimeout bounds the start of a run's workflow, retried while the
	// server is unavailable or slow (default 2 minutes); a retried start
	// never starts the run twice.
	StartTimeout time.Duration
	// StepsPerRun makes a workflow execution continue as new after that
	// many steps (0: when the server suggests it).
	StepsPerRun int
	// RuntimeKeys names the runtime values (graph.WithRuntime) the
	// workers give the run's nodes: string values only. They are
	// recorded in the workflow's history: name no secret. Other runtime
	// values stay with the caller.
	RuntimeKeys []string
	// Events is the event log the workers store the events of streamed
	// runs in (Graphs.StreamTo): Stream needs it.
	Events *EventLog
	// Payloads decodes the data of custom events into the values their
	// nodes emitted (by the event's name); without it, or for a name it
	// does not know, the data is the JSON value as encoding/json decodes
	// it into an any.
	Payloads graph.PayloadDecoder
}

// Runner runs a compiled graph on Temporal: one workflow per thread
// (workflow id = thread id), one activity per superstep. Invoke is the
// graph's Invoke with the same options.
type Runner struct {
	cfg Config
}

var _ graph.Invoker = (*Runner)(nil)

// New returns a runner for cfg.Graph.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("temporalrun: Config.Client is nil")
	case cfg.Graph == nil:
		return nil, errors.New("temporalrun: Config.Graph is nil")
	case cfg.Saver == nil:
		return nil, errors.New("temporalrun: Config.Saver is nil: threads live in a saver the workers share")
	case cfg.TaskQueue == "":
		return nil, errors.New("temporalrun: Config.TaskQueue is empty")
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = 10 * time.Minute
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if cfg.ScheduleToStartTimeout < 0 {
		cfg.ScheduleToStartTimeout = 0
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	return &Runner{cfg: cfg}, nil
}

// Invoke runs the graph on Temporal to the end or to an interrupt, as
// graph.Runnable.Invoke does: a thread (graph.Thread) is required, input
// nil continues it, graph.Resume (ResumeEach, ResumeAt) answers its
// pending interrupts through an update that refuses a wrong answer before
// anything is recorded. Cancelling ctx cancels the run's workflow.
func (r *Runner) Invoke(ctx context.Context, input []graph.Write, opts ...graph.Option) (graph.Result, error) {
	spec, err := r.spec(input, opts)
	if err != nil {
		return graph.Result{}, err
	}
	out, err := r.run(ctx, spec, input, nil)
	if err != nil {
		if ctx.Err() != nil {
			return graph.Result{}, r.cancel(ctx, spec.Thread)
		}
		return graph.Result{}, decodeError(err)
	}
	return r.result(ctx, out)
}

// spec reads and checks a run's options.
func (r *Runner) spec(input []graph.Write, opts []graph.Option) (graph.RunSpec, error) {
	spec, err := r.cfg.Graph.Spec(opts...)
	switch {
	case err != nil:
		return spec, err
	case spec.Thread == "":
		return spec, errors.New("temporalrun: a run on Temporal needs a thread: pass graph.Thread(id)")
	case spec.Checkpoint != "":
		return spec, errors.New("temporalrun: graph.FromCheckpoint (replay and forks) runs in process only: use the graph's own Invoke")
	case spec.Resume != nil && input != nil:
		return spec, errors.New("graph: pass either an input or graph.Resume, not both")
	}
	return spec, nil
}

// run runs the thread's workflow until it pauses or ends; events, when
// set, are the events its steps store for a caller that streams them.
func (r *Runner) run(ctx context.Context, spec graph.RunSpec, input []graph.Write, events *graph.EventSpec) (Output, error) {
	if spec.Resume != nil {
		if err := r.watch(ctx, spec, events); err != nil {
			return Output{}, err
		}
		out, err := r.update(ctx, spec.Thread, UpdateResume, *spec.Resume)
		if !notRunning(err) {
			return out, err
		}
		// The thread paused but its workflow is gone (cancelled, or
		// terminated by an operator): a new one takes the answers.
		return r.start(ctx, spec, nil, true, events)
	}
	return r.start(ctx, spec, input, false, events)
}

// watch tells the thread's running workflow, if any, what its caller
// gives the steps from now on: the events they store (none when events is
// nil) and the runtime values (Config.RuntimeKeys). Nothing is sent when
// there is neither.
func (r *Runner) watch(ctx context.Context, spec graph.RunSpec, events *graph.EventSpec) error {
	budget, err := budgetOf(ctx, spec.Thread)
	if err != nil {
		return err
	}
	c := Caller{Events: events, Runtime: r.runtime(spec), Budget: budget}
	if c.Events == nil && c.Runtime == nil && c.Budget == nil {
		return nil
	}
	thread := spec.Thread
	h, err := r.cfg.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: thread, UpdateName: UpdateCaller, Args: []any{c},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil && !notRunning(err) {
		return fmt.Errorf("temporalrun: stream the run of thread %q: %w", thread, err)
	}
	return nil
}

// start begins a run's workflow and waits until it pauses or ends. With
// input nil and a workflow already running, it waits for that one.
func (r *Runner) start(ctx context.Context, spec graph.RunSpec, input []graph.Write, resume bool, events *graph.EventSpec) (Output, error) {
	in := RunInput{Graph: r.cfg.Graph.Name(), Thread: spec.Thread, StepLimit: spec.StepLimit,
		InterruptBefore: spec.InterruptBefore, InterruptAfter: spec.InterruptAfter,
		Queues:         Queues{Default: r.cfg.TaskQueue, Nodes: r.cfg.NodeQueues, Tasks: r.cfg.TaskQueues},
		TaskActivities: !r.cfg.TasksInNode, TaskTimeout: r.cfg.TaskTimeout,
		StepTimeout: r.cfg.StepTimeout, HeartbeatTimeout: r.cfg.HeartbeatTimeout,
		LocalSteps: !r.cfg.ActivitySteps, TaskNodes: r.cfg.Graph.TaskNodes(),
		MaxAttempts: r.cfg.MaxAttempts, ScheduleToStartTimeout: r.cfg.ScheduleToStartTimeout, StepsPerRun: r.cfg.StepsPerRun, Events: events, Runtime: r.runtime(spec)}
	budget, err := budgetOf(ctx, spec.Thread)
	if err != nil {
		return Output{}, err
	}
	in.Budget = budget
	if input != nil {
		data, err := r.cfg.Graph.EncodeWrites(input)
		if err != nil {
			return Output{}, fmt.Errorf("temporalrun: encode input: %w", err)
		}
		if len(data) > maxPayload {
			return Output{}, fmt.Errorf("temporalrun: the input of thread %q is %d bytes as JSON; Temporal refuses payloads over 2 MB: put large values in the store and pass a reference", spec.Thread, len(data))
		}
		in.Input = data
	}
	if resume {
		snap, err := r.cfg.Graph.State(ctx, spec.Thread, graph.WithSaver(r.cfg.Saver))
		if err != nil {
			return Output{}, err
		}
		answers, err := r.cfg.Graph.ResolveAnswers(spec.Thread, snap.Interrupts, false, *spec.Resume)
		if err != nil {
			return Output{}, err
		}
		in.Answers = answers
	}
	err = r.execute(ctx, spec.Thread, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &started) && input == nil && !resume:
		// Continue without input: the run in flight is the continuation.
		if err := r.watch(ctx, spec, events); err != nil {
			return Output{}, err
		}
	case errors.As(err, &started):
		return Output{}, fmt.Errorf("temporalrun: thread %q has an unfinished run (its workflow is running); continue it without input, with graph.Resume if it is interrupted: %w",
			spec.Thread, err)
	case err != nil:
		return Output{}, fmt.Errorf("temporalrun: start the run of thread %q: %w", spec.Thread, err)
	}
	return r.update(ctx, spec.Thread, UpdateWait)
}

// startMemo is the memo field that carries the id of the start request
// that started a run's workflow: a start retried after a transient error
// recognises the workflow its earlier attempt started.
const startMemo = "coorflow_start"

// execute starts the run's workflow, retrying while the server is
// unavailable or slow (the error of a start under load), as update does,
// for at most Config.StartTimeout. It never starts the run twice: each
// workflow carries the id of its start in its memo, and before starting
// again a retry looks at the thread's newest workflow: one that carries
// this start's id (running, or already ended) is this run, started by an
// earlier attempt whose answer was lost. A workflow that is not this
// run's keeps the conflict policy's answer (AlreadyStarted).
func (r *Runner) execute(ctx context.Context, thread string, in RunInput) error {
	id := newID()
	opts := client.StartWorkflowOptions{
		ID:                       thread,
		TaskQueue:                r.cfg.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// A run in flight is an answer, not something to join silently.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo:                                     map[string]any{startMemo: id},
		// A worker of the queue in this process (on the same client) gets
		// the run's first workflow task in the start's answer.
		EnableEagerStart: true,
	}
	if in.LocalSteps {
		// The steps run inside workflow tasks: a dead worker's is noticed
		// as soon as a step activity's would be.
		opts.WorkflowTaskTimeout = r.cfg.HeartbeatTimeout
	}
	sctx, stop := context.WithTimeout(ctx, r.cfg.StartTimeout)
	defer stop()
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			ours, err := r.startedBy(sctx, thread, id)
			switch {
			case ours:
				return nil
			case err != nil && transient(err) && sctx.Err() == nil:
				if werr := wait(sctx, backoff); werr != nil {
					return err
				}
				backoff = min(2*backoff, 5*time.Second)
				continue
			case err != nil:
				return err
			}
		}
		_, err := r.cfg.Client.ExecuteWorkflow(sctx, opts, WorkflowName, in)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case err == nil:
			return nil
		case errors.As(err, &started) && attempt > 1:
			// The earlier attempt may have started it after all.
			if ours, _ := r.startedBy(sctx, thread, id); ours {
				return nil
			}
			return err
		case (transient(err) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil && sctx.Err() == nil:
			if werr := wait(sctx, backoff); werr != nil {
				return err
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		return err
	}
}

// startedBy reports whether the thread's newest workflow was started by
// the start request id.
func (r *Runner) startedBy(ctx context.Context, thread, id string) (bool, error) {
	desc, err := r.cfg.Client.DescribeWorkflow(ctx, thread, "")
	if notRunning(err) {
		return false, nil // no workflow of the thread at all
	}
	if err != nil {
		return false, err
	}
	p := desc.RawResponse.GetWorkflowExecutionInfo().GetMemo().GetFields()[startMemo]
	if p == nil {
		return false, nil
	}
	var got string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &got); err != nil {
		return false, nil // not a memo this package wrote
	}
	return got == id, nil
}

// update sends an update to the thread's workflow and returns where the
// run stands when it pauses or ends, following continue-as-new.
func (r *Runner) update(ctx context.Context, thread, name string, args ...any) (Output, error) {
	id := newID() // a resend after a server outage is the same update
	backoff := 100 * time.Millisecond
	for {
		h, err := r.cfg.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: thread, UpdateName: name, Args: args, UpdateID: id,
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		var out Output
		if err == nil {
			err = h.Get(ctx, &out)
		}
		switch {
		case err == nil && out.Continued:
			name, args, id = UpdateWait, nil, newID() // the next execution runs on
			continue
		case notRunning(err) && name == UpdateWait:
			// The run ended before the update reached it.
			err = r.cfg.Client.GetWorkflow(ctx, thread, "").Get(ctx, &out)
		case transient(err) && ctx.Err() == nil:
			// The server is restarting or unreachable: the run goes on
			// there; ask again.
			if werr := wait(ctx, backoff); werr != nil {
				return out, err
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		return out, err
	}
}

// runtime returns the run's runtime values the workers get
// (Config.RuntimeKeys); nil for none.
func (r *Runner) runtime(spec graph.RunSpec) map[string]string {
	var out map[string]string
	for _, k := range r.cfg.RuntimeKeys {
		if v, ok := spec.Runtime[k].(string); ok {
			if out == nil {
				out = make(map[string]string)
			}
			out[k] = v
		}
	}
	return out
}

// transient reports an error of the server's availability, not of the run.
func transient(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	var canceled *serviceerror.Canceled
	if errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.As(err, &canceled) {
		return true
	}
	// As gRPC says it, before the SDK turns it into a service error.
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// notRunning reports an error saying the workflow has closed.
func notRunning(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// cancel cancels the thread's workflow after the caller gave up, and waits
// until its step has stopped.
func (r *Runner) cancel(ctx context.Context, thread string) error {
	cause := ctx.Err()
	bg, stop := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.HeartbeatTimeout+time.Minute)
	defer stop()
	if err := r.cfg.Client.CancelWorkflow(bg, thread, ""); err != nil && !notRunning(err) {
		return errors.Join(fmt.Errorf("temporalrun: run of thread %q cancelled: %w", thread, cause),
			fmt.Errorf("temporalrun: cancel its workflow: %w", err))
	}
	_ = r.cfg.Client.GetWorkflow(bg, thread, "").Get(bg, nil) // ends cancelled
	return fmt.Errorf("temporalrun: run of thread %q cancelled: %w", thread, cause)
}

// Cancel cancels the run of thread in flight, if any, and returns once it
// has stopped (or ctx is done): the step in flight sees its context
// cancelled, a paused run stops waiting. The thread keeps its last
// checkpoint and pending questions; the next Invoke continues from there.
func (r *Runner) Cancel(ctx context.Context, thread string) error {
	if err := r.cfg.Client.CancelWorkflow(ctx, thread, ""); err != nil {
		if notRunning(err) {
			return nil
		}
		return fmt.Errorf("temporalrun: cancel thread %q: %w", thread, err)
	}
	err := r.cfg.Client.GetWorkflow(ctx, thread, "").Get(ctx, nil)
	var canceled *temporal.CanceledError
	if err != nil && !errors.As(err, &canceled) && ctx.Err() != nil {
		return fmt.Errorf("temporalrun: cancel thread %q: %w", thread, ctx.Err())
	}
	return nil
}

// result loads the run's state from the saver, by reference.
func (r *Runner) result(ctx context.Context, out Output) (graph.Result, error) {
	snap, err := r.cfg.Graph.State(ctx, out.Thread, graph.WithSaver(r.cfg.Saver), graph.FromCheckpoint(out.Checkpoint))
	if err != nil {
		return graph.Result{}, fmt.Errorf("temporalrun: read the state of thread %q: %w", out.Thread, err)
	}
	return graph.Result{State: snap.State, Status: out.Status, Interrupts: out.Interrupts,
		Thread: out.Thread, Checkpoint: out.Checkpoint}, nil
}
