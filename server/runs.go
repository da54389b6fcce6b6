package server

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/telemetry"
	"github.com/coorflow/coorflow/trace"
)

// The statuses of a run.
const (
	StatusQueued      = "queued"      // waiting for the thread's run in progress
	StatusRunning     = "running"     //
	StatusDone        = "done"        // finished: nothing left to run
	StatusInterrupted = "interrupted" // paused on interrupts; resume it with a new run
	StatusError       = "error"       // failed
	StatusCancelled   = "cancelled"   // cancelled by a client or by Shutdown
)

// Run is a run as the API shows it.
type Run struct {
	ID        string     `json:"run_id"`
	ThreadID  string     `json:"thread_id"`
	Workflow  string     `json:"workflow"`
	Status    string     `json:"status"`
	CreatedAt time.Time  `json:"created_at"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Values are the channel values when the run ended (done or
	// interrupted), read from the Saver at its last checkpoint. Lists of
	// runs leave them out.
	Values json.RawMessage `json:"values,omitempty"`
	// Interrupts are the questions of an interrupted run still waiting
	// for an answer at its checkpoint (left out of lists too).
	Interrupts []graph.InterruptInfo `json:"interrupts,omitempty"`
	// Checkpoint is the checkpoint the run got to: the last it stored, or
	// the one it started from.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Events counts the events the run has emitted so far.
	Events int64        `json:"events"`
	Error  *ErrorDetail `json:"error,omitempty"`
	// Usage is what the run's model calls spent so far (replayed calls
	// cost nothing); Budget the run's budget, if it has one.
	Usage  llm.Spend   `json:"usage"`
	Budget *llm.Budget `json:"budget,omitempty"`
	// Replica names the replica that runs or ran it, and Takeovers counts
	// the times another replica took it over from one that stopped (only
	// with Config.Replicas).
	Replica   string `json:"replica,omitempty"`
	Takeovers int    `json:"takeovers,omitempty"`
}

// run is one run the server started or queued.
type run struct {
	id, thread, key, owner, workflow string
	wf                               *graph.Runnable
	input                            []graph.Write // nil: continue the thread
	resume                           graph.Option  // nil: no answer
	resumeOne                        bool          // one answer for the only interrupt
	// oneAnswer is that one answer: precheck gives it to every interrupt
	// when they all ask the same budget question (llm.OneBudgetQuestion).
	oneAnswer json.RawMessage
	// answers are the request's answers as given ({"resume": …} or
	// {"resume_each": …}), for the run's recording.
	answers json.RawMessage
	// budget, when set, replaces the workflow's run budget (the
	// request's "budget"); meter counts what the run spends, turn what
	// the thread's turn spent against the run budget.
	budget      *llm.Budget
	meter, turn *llm.Meter
	// config is the run's config (the request's), which its nodes read.
	config runs.Config
	// from is the checkpoint the run starts from (graph.FromCheckpoint);
	// empty: the thread's newest.
	from string
	// discard lets an input drop the thread's unfinished step
	// (graph.DiscardUnfinished), as Platform runs do.
	discard bool
	// busy says what to do when the thread has a run in progress; the
	// Platform's multitask strategies set it per run.
	busy busyPolicy
	// ticket is the run's place in the server's ledger of runs, released
	// when it ends or leaves the queue (nil for the runs of replicas:
	// their rows in the database are their places).
	ticket *runs.Ticket
	// platform holds what a Platform API request adds (platform_runs.go);
	// nil for /v1 runs.
	platform *platformRun

	// ctx carries the caller's trace context, not its cancellation.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// started is closed once the run got past its start (it loaded the
	// thread and applied its input or answers) or ended; done when it has
	// ended.
	started chan struct{}
	done    chan struct{}
	elem    *list.Element // in Server.finished
	size    int64         // what it takes in memory once finished

	mu         sync.Mutex
	status     string
	created    time.Time
	startedAt  time.Time
	endedAt    time.Time
	isStarted  bool
	checkpoint string
	// startCheckpoint is the thread's checkpoint when the run started
	// ("" for a new thread): a rollback returns the thread to it. checked
	// says the run got that far.
	startCheckpoint string
	checked         bool
	err             *apiError
	// failedEarly: the run ended before it started; its error is the
	// answer to the request that made it.
	failedEarly bool
	events      eventLog
	// claim is the run's claim among replicas (Config.Replicas), or nil;
	// publish shares each of its events with the other replicas.
	claim     *Claim
	publish   func(id int64, name string, frame []byte)
	stopLease func() // stops renewing the claim's lease
}

func (s *Server) newRun(r *http.Request, th Thread, wf *graph.Runnable) *run {
	owner := ownerFrom(r.Context())
	// The caller's span (traceparent) becomes the parent of the run's
	// span; the request's cancellation does not reach the run.
	ctx := s.cfg.Propagator.Extract(context.WithoutCancel(r.Context()), propagationCarrier(r.Header))
	ctx, cancel := context.WithCancelCause(ctx)
	ru := &run{
		id: newID(), thread: th.ID, key: threadKey(owner, th.ID), owner: owner, workflow: th.Workflow, wf: wf,
		ctx: ctx, cancel: cancel, started: make(chan struct{}), done: make(chan struct{}),
		status: StatusRunning, created: time.Now().UTC(),
	}
	ru.events.init(s.cfg.EventBuffer, s.cfg.EventBufferBytes)
	return ru
}

// busyPolicy says what becomes of a run started on a thread that has one
// in progress.
type busyPolicy int

const (
	busyDefault busyPolicy = iota // queue it when Config.QueueBusy is set, else refuse it
	busyQueue                     // queue it
	busyRefuse                    // refuse it (409 thread_busy)
)

// submit registers ru and starts it, or queues it behind the thread's run
// in progress when the server allows it. It returns whether ru was queued.
// A run beyond one of the owner's quotas is refused.
func (s *Server) submit(ru *run) (queued bool, err *apiError) {
	if e := s.storageQuota(ru.owner); e != nil {
		return false, e
	}
	if e := s.budgetQuota(ru.ctx, ru.owner); e != nil {
		return false, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false, errorf(http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down; start the run again later")
	}
	if ts := s.threads[ru.key]; ts != nil && ts.deleting {
		return false, errorf(http.StatusConflict, CodeThreadBusy, "thread %q is being deleted: wait for the deletion to end", ru.thread)
	}
	if e := s.refuseOnStatelessLocked(ru); e != nil {
		return false, e
	}
	t, refused := s.ledger.Admit(runs.Request{Owner: ru.owner, Thread: ru.key, Run: ru.id, Busy: s.busyOf(ru), Limits: s.runLimits()})
	if refused != nil {
		if e := refusal(ru, refused); e != nil {
			return false, e
		}
		return false, errorf(http.StatusInternalServerError, "run_failed", "%v", refused)
	}
	ru.ticket = t
	ts := s.threads[ru.key]
	if ts == nil {
		ts = &threadRuns{}
		s.threads[ru.key] = ts
	}
	s.runs[ru.id] = ru
	ts.runs = append(ts.runs, ru)
	if t.Queued() {
		ru.mu.Lock()
		ru.status = StatusQueued
		ru.mu.Unlock()
		ts.queue = append(ts.queue, ru)
		return true, nil
	}
	s.startLocked(ts, ru)
	return false, nil
}

// startLocked makes ru the thread's active run and starts it. s.mu is held.
func (s *Server) startLocked(ts *threadRuns, ru *run) {
	ts.active = ru
	ru.mu.Lock()
	ru.status = StatusRunning
	ru.mu.Unlock()
	s.wg.Add(1)
	go s.execute(ru)
}

// Executor runs the runs of a workflow and yields their events
// (runs.Executor): graph.Runnable.Stream is the executor of a workflow
// run in process; an executor whose model calls are made elsewhere (a
// Temporal worker's) is wrapped with runs.Remote, so that its runs' usage
// counts them.
type Executor = runs.Executor

// executor is what runs ru: its workflow's Executor, or the workflow
// itself in process.
func (s *Server) executor(ru *run) Executor {
	if x := s.cfg.Executors[ru.workflow]; x != nil && ru.from == "" {
		return x
	}
	return ru.wf
}

// execute runs ru to its end (runs.Execute) and then starts the next
// queued run of the thread.
func (s *Server) execute(ru *run) {
	defer s.wg.Done()
	ru.mu.Lock()
	ru.startedAt = time.Now().UTC()
	ru.mu.Unlock()
	if ru.claim != nil {
		ru.stopLease = s.holdLease(ru)
		if s.takenOverEnded(ru) {
			return
		}
	}
	if err := s.precheck(ru); err != nil {
		s.complete(ru, s.runFailure(ru, err))
		return
	}
	meter, err := s.meterRun(ru)
	if err != nil {
		s.complete(ru, s.runFailure(ru, err))
		return
	}
	obs := telemetry.NewObserver(ru.ctx, s.tracer,
		attribute.String("coorflow.thread", ru.thread), attribute.String("coorflow.run", ru.id),
		attribute.String("coorflow.workflow", ru.workflow))
	s.log.DebugContext(ru.ctx, "server: run started", "run", ru.id, "thread", ru.thread, "workflow", ru.workflow)
	x := s.execution(ru, meter)
	x.Observe = func(ev graph.Event, err error) {
		traced := ev
		if err != nil {
			traced.Err = err // the operator's traces keep the detail
		}
		obs.Observe(traced)
		ru.record(ev)
	}
	out := runs.Execute(ru.ctx, s.spec(ru), x)
	obs.Finish(out.Cause)
	if out.Err == nil {
		s.keepValues(ru, out.End)
	}
	s.complete(ru, out.Err)
	s.notifyWebhook(ru)
	st := ru.view()
	s.log.InfoContext(ru.ctx, "server: run ended", "run", ru.id, "thread", ru.thread, "status", st.Status, "events", st.Events)
}

// execution is how ru executes: on its executor, with the server's Saver
// (its claim's among replicas), the options its request adds, its meter,
// and its recording, counted in its owner's stored bytes.
func (s *Server) execution(ru *run, meter *llm.Meter) runs.Execution {
	var saver graph.Saver = s.saver
	var flushing *recordingSaver // a replica's run: its recording flushed before each write
	if ru.claim != nil {
		saver = ru.claim.Saver
		if s.cfg.Recorder != nil {
			flushing = &recordingSaver{Saver: saver}
			saver = flushing
		}
	}
	opts := []graph.Option{graph.WithSaver(saver)}
	if ru.resume != nil {
		opts = append(opts, ru.resume)
	}
	if ru.from != "" {
		opts = append(opts, graph.FromCheckpoint(ru.from))
	}
	if ru.discard {
		opts = append(opts, graph.DiscardUnfinished())
	}
	if ru.platform != nil {
		opts = append(opts, ru.platform.opts...)
	}
	opts = append(opts, s.cfg.RunOptions...)
	x := runs.Execution{
		Executor: s.executor(ru), Options: opts, Meter: meter,
		Failure: func(err error) error { return s.runFailure(ru, err) },
	}
	if s.cfg.Recorder != nil {
		x.Recorder = s.cfg.Recorder
		if ru.claim != nil && ru.claim.Takeover {
			// The replica that began the run began its recording: its
			// events go on from the last one it shared or recorded.
			x.Takeover, x.After = true, s.recordedAfter(ru, ru.claim.Run.Events)
		}
		x.Recording = func(rr *trace.RunRecorder, info trace.RunInfo) {
			if flushing != nil {
				flushing.rec = rr
			}
			s.limitRecording(ru, rr, info, !x.Takeover)
		}
		x.RecordingError = func(err error) { s.recordingFailed(ru, err) }
	}
	return x
}

// spec is ru as package runs describes a run: what its options, its
// recording and its replay come from, as for a run of the CLI.
func (s *Server) spec(ru *run) *runs.Run {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	r := &runs.Run{
		ID: ru.id, Thread: ru.thread, Key: ru.key, Owner: ru.owner, Workflow: ru.workflow, Graph: ru.wf.Name(),
		Input: ru.input, Answers: ru.answers, Resuming: ru.resume != nil, StartCheckpoint: ru.startCheckpoint, Config: ru.config,
	}
	if env, ok := s.cfg.Envs[ru.workflow]; ok {
		r.Env = &env
	}
	return r
}

// precheck refuses a run that the thread's state makes pointless or that
// the engine would refuse with an error no sentinel names: an input for a
// thread whose run did not finish, one answer for several questions, a
// continuation with nothing to continue.
func (s *Server) precheck(ru *run) error {
	stateOpts := []graph.Option{graph.WithSaver(s.saver)}
	if ru.from != "" {
		stateOpts = append(stateOpts, graph.FromCheckpoint(ru.from))
	}
	snap, err := ru.wf.State(ru.ctx, ru.key, stateOpts...)
	ru.mu.Lock()
	ru.checked = err == nil || errors.Is(err, graph.ErrNotFound)
	ru.mu.Unlock()
	if errors.Is(err, graph.ErrNotFound) && ru.from != "" {
		return errorf(http.StatusNotFound, CodeUnknownCheckpt, "thread %q has no checkpoint %q", ru.thread, ru.from)
	}
	if errors.Is(err, graph.ErrNotFound) {
		switch {
		case ru.resume != nil:
			return errorf(http.StatusConflict, CodeNotInterrupted, "thread %q is not interrupted: it has not run yet", ru.thread)
		case ru.input == nil:
			return errorf(http.StatusConflict, CodeNothingToRun, "thread %q has not run yet: start it with an input", ru.thread)
		}
		return nil
	}
	if err != nil {
		return err
	}
	// The run ends at this checkpoint unless it stores another (an answer
	// that leaves other questions pending stores none).
	ru.mu.Lock()
	ru.checkpoint, ru.startCheckpoint = snap.Checkpoint, snap.Checkpoint
	ru.mu.Unlock()
	if ru.from != "" || (ru.discard && ru.input != nil) {
		// A replay or fork runs whatever the checkpoint holds; an input
		// that may discard the unfinished step needs no answer first.
		return nil
	}
	pending := make([]string, len(snap.Interrupts))
	for i, in := range snap.Interrupts {
		pending[i] = in.ID
	}
	switch {
	case ru.input != nil && len(snap.Next) > 0 && len(pending) > 0:
		return errorf(http.StatusConflict, CodeInterrupted, "thread %q is interrupted, waiting on %s: answer with resume or resume_each instead of an input",
			ru.thread, strings.Join(pending, ", "))
	case ru.input != nil && len(snap.Next) > 0:
		return errorf(http.StatusConflict, CodeUnfinishedRun, "thread %q has an unfinished run (next: %s): continue it with a run without input",
			ru.thread, strings.Join(snap.Next, ", "))
	case ru.resumeOne && len(pending) > 1 && llm.OneBudgetQuestion(snap.Interrupts):
		// Every agent a budget blocked in one step asks; the answer is one
		// decision for the run.
		ru.resume, ru.resumeOne = llm.AnswerAll(snap.Interrupts, ru.oneAnswer), false
	case ru.resumeOne && len(pending) > 1:
		return errorf(http.StatusConflict, CodeAmbiguousResume, "thread %q waits on %d interrupts (%s): answer them by id with resume_each",
			ru.thread, len(pending), strings.Join(pending, ", "))
	case ru.input == nil && ru.resume == nil && len(pending) > 0:
		return errorf(http.StatusConflict, CodeInterrupted, "thread %q is interrupted, waiting on %s: answer with resume or resume_each",
			ru.thread, strings.Join(pending, ", "))
	case ru.input == nil && ru.resume == nil && len(snap.Next) == 0:
		return errorf(http.StatusConflict, CodeNothingToRun, "thread %q has no unfinished run to continue: start a new one with an input", ru.thread)
	}
	return nil
}

// complete records how ru ended, releases its thread (starting the next
// queued run), remembers ru among the finished runs, and only then wakes
// those waiting on it: a client told that a run ended may start the next
// one at once.
func (s *Server) complete(ru *run, err error) {
	s.endEphemeral(ru)
	ru.settle(err)
	s.finishShared(ru)
	s.mu.Lock()
	ts := s.threads[ru.key]
	if ts != nil && ts.active == ru {
		ts.active = nil
	}
	if ru.ticket != nil {
		// The thread's next run, if one is queued, takes ru's place in
		// the same step (Shutdown released the queued ones first). The
		// ledger queues a thread's runs as ts.queue does.
		for next := ru.ticket.Release(); next != nil; next = next.Release() {
			if q := ts.dequeue(next.Run()); q != nil {
				s.startLocked(ts, q)
				break
			}
		}
	}
	s.retainLocked(ru)
	s.mu.Unlock()
	ru.wake()
}

// dequeue removes the queued run id from the thread's queue and returns
// it, or nil when it is not queued (or ts is nil).
func (ts *threadRuns) dequeue(id string) *run {
	if ts == nil {
		return nil
	}
	for i, q := range ts.queue {
		if q.id == id {
			ts.queue = append(ts.queue[:i], ts.queue[i+1:]...)
			return q
		}
	}
	return nil
}

// finishUnstarted ends a queued run that never started.
func (s *Server) finishUnstarted(ru *run, cause error) {
	s.endEphemeral(ru)
	ru.settle(cause)
	s.mu.Lock()
	s.retainLocked(ru)
	s.mu.Unlock()
	ru.wake()
}

// retainLocked adds a finished run to the remembered ones and forgets the
// oldest beyond the limits of count and size; the newest is kept. s.mu is
// held.
func (s *Server) retainLocked(ru *run) {
	if _, ok := s.runs[ru.id]; !ok || ru.elem != nil {
		return
	}
	ru.size = ru.footprint()
	ru.elem = s.finished.PushBack(ru)
	s.retained += ru.size
	for s.finished.Len() > 1 && (s.finished.Len() > s.cfg.RetainRuns || s.retained > s.cfg.RetainBytes) {
		s.forgetLocked(s.finished.Front().Value.(*run))
	}
}

// runOverhead is what a finished run takes in memory beside its strings:
// the structs, channels, list element and map entries.
const runOverhead = 1024

// footprint estimates what the finished run takes in memory. Its values,
// input and events are gone by then.
func (ru *run) footprint() int64 {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	n := runOverhead + len(ru.id) + len(ru.thread) + len(ru.key) + len(ru.owner) + len(ru.workflow) + len(ru.checkpoint)
	if ru.err != nil {
		n += len(ru.err.Message) + len(ru.err.Code)
	}
	return int64(n)
}

// forgetLocked drops ru from the server's memory. s.mu is held.
func (s *Server) forgetLocked(ru *run) {
	delete(s.runs, ru.id)
	if ru.elem != nil {
		s.finished.Remove(ru.elem)
		s.retained -= ru.size
		ru.elem = nil
	}
	ts := s.threads[ru.key]
	if ts == nil {
		return
	}
	for i, x := range ts.runs {
		if x == ru {
			ts.runs = append(ts.runs[:i], ts.runs[i+1:]...)
			break
		}
	}
	if len(ts.runs) == 0 && ts.active == nil && len(ts.queue) == 0 {
		delete(s.threads, ru.key)
	}
}

// forget drops a run whose request was answered with an error.
func (s *Server) forget(ru *run) {
	s.mu.Lock()
	s.forgetLocked(ru)
	s.mu.Unlock()
}

// record keeps ev in the run's log and notes what it says about the run.
// It runs on the run's goroutine, before the engine goes on, so the event's
// values are encoded as they were when it was emitted.
func (ru *run) record(ev graph.Event) {
	root := ev.Path == ru.wf.Name()
	name := ev.Name()
	id := ru.events.nextID()
	frame := encodeFrame(id, ru.id, name, ev)
	ru.mu.Lock()
	if root {
		switch ev.Kind {
		case graph.EventRunEnd:
			if st, ok := ev.Data.(graph.Status); ok {
				ru.status = string(st)
			}
		case graph.EventCheckpoint:
			ru.checkpoint, _ = ev.Data.(string)
		}
	}
	markStarted := root && !ru.isStarted && ev.Kind != graph.EventRunStart && ev.Kind != graph.EventError
	if markStarted {
		ru.isStarted = true
	}
	ru.mu.Unlock()
	ru.events.append(name, frame)
	if ru.publish != nil {
		ru.publish(id, name, frame)
	}
	if markStarted {
		close(ru.started)
	}
}

// maxErrorMessage caps the message of a run's error kept in memory.
const maxErrorMessage = 4 << 10

// settle records how the run ended and drops what it no longer needs: its
// input and answers.
func (ru *run) settle(err error) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	ru.input, ru.resume, ru.answers = nil, nil, nil
	ru.endedAt = time.Now().UTC()
	if ru.startedAt.IsZero() {
		ru.startedAt = ru.endedAt
	}
	cause := context.Cause(ru.ctx)
	switch {
	case err == nil:
		// Finished, even if cancelled after the engine's last step.
	case cause != nil:
		ru.status = StatusCancelled
		ru.err = errorf(http.StatusConflict, StatusCancelled, "run cancelled: %v", strings.TrimPrefix(cause.Error(), "server: "))
		if errors.Is(cause, errShutdown) {
			ru.err = errorf(http.StatusServiceUnavailable, CodeShuttingDown, "run cancelled: the server is shutting down")
		}
	default:
		ru.status = StatusError
		ru.err = runError(err)
		// The engine names the thread by its Saver key; the client knows
		// it by its id.
		ru.err.Message = strings.ReplaceAll(ru.err.Message, strconv.Quote(ru.key), strconv.Quote(ru.thread))
		if len(ru.err.Message) > maxErrorMessage {
			ru.err.Message = strings.ToValidUTF8(ru.err.Message[:maxErrorMessage], "") + " … (cut)"
		}
	}
	ru.failedEarly = !ru.isStarted && ru.err != nil
}

// wake closes the run's log and channels: everyone waiting on the run
// sees it ended.
func (ru *run) wake() {
	ru.mu.Lock()
	wasStarted := ru.isStarted
	ru.isStarted = true
	ru.mu.Unlock()
	ru.cancel(nil)
	ru.events.close()
	if !wasStarted {
		close(ru.started)
	}
	close(ru.done)
}

// runError classifies a run's failure.
func runError(err error) *apiError {
	var e *apiError
	var ne *graph.NodeError
	var he *hiddenError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &he):
		return internalError(he.requestID)
	case errors.Is(err, graph.ErrNotInterrupted):
		return errorf(http.StatusConflict, CodeNotInterrupted, "%v", err)
	case errors.Is(err, graph.ErrStepLimit):
		return errorf(http.StatusInternalServerError, "step_limit", "%v", err)
	case errors.Is(err, llm.ErrBudgetExceeded), errors.Is(err, llm.ErrUnpriced):
		return errorf(http.StatusPaymentRequired, CodeBudgetExceeded, "%v", err)
	case errors.As(err, &ne):
		return errorf(http.StatusInternalServerError, "node_failed", "%v", err)
	}
	return errorf(http.StatusInternalServerError, "run_failed", "%v", err)
}

// hiddenError is a run's failure inside the server — the Saver's, the
// engine's — whose text is for the log only: it says where the log has it.
type hiddenError struct {
	err       error
	requestID string
}

func (e *hiddenError) Error() string {
	return internalError(e.requestID).Message
}

func (e *hiddenError) Unwrap() error { return e.err }

// runFailure is the error a run's clients and recording see for err: the
// workflow's own failures (a node's, the step limit, a cancellation, the
// server's refusals) as they are, anything else logged and hidden.
func (s *Server) runFailure(ru *run, err error) error {
	var e *apiError
	var ne *graph.NodeError
	if errors.As(err, &e) || errors.As(err, &ne) || errors.Is(err, graph.ErrStepLimit) || errors.Is(err, graph.ErrNotInterrupted) ||
		context.Cause(ru.ctx) != nil {
		return err
	}
	id := requestID(ru.ctx)
	s.log.ErrorContext(ru.ctx, "server: run failed", "request_id", id, "run", ru.id, "thread", ru.thread, "err", err)
	return &hiddenError{err: err, requestID: id}
}

// view returns the run as the API shows it, without its values and
// interrupts (see Server.runView).
func (ru *run) view() Run {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	v := Run{
		ID: ru.id, ThreadID: ru.thread, Workflow: ru.workflow, Status: ru.status, CreatedAt: ru.created,
		Checkpoint: ru.checkpoint, Events: ru.events.count(),
	}
	if ru.claim != nil {
		v.Replica, v.Takeovers = ru.claim.Run.Replica, ru.claim.Run.Takeovers
	}
	if !ru.startedAt.IsZero() {
		t := ru.startedAt
		v.StartedAt = &t
	}
	if !ru.endedAt.IsZero() {
		t := ru.endedAt
		v.EndedAt = &t
	}
	if ru.err != nil {
		v.Error = &ErrorDetail{Code: ru.err.Code, Message: ru.err.Message, RequestID: ru.err.RequestID}
	}
	if ru.meter != nil {
		v.Usage = ru.meter.Spent()
		if b := ru.turn.Budget(); !b.IsZero() {
			v.Budget = &b
		}
	}
	return v
}

// runView returns the run as the API shows it, with the values and
// interrupts of a run that ended done or interrupted read from the Saver
// at its last checkpoint: the server keeps none in memory.
func (s *Server) runView(ctx context.Context, ru *run) (Run, error) {
	if v, ok := ru.ephemeralView(); ok {
		return v, nil // its thread is gone
	}
	return s.withValues(ctx, ru.view(), ru.wf, ru.key)
}

// withValues adds to v, a run of the thread key on wf, its values and
// interrupts when it ended done or interrupted.
func (s *Server) withValues(ctx context.Context, v Run, wf *graph.Runnable, key string) (Run, error) {
	if (v.Status != StatusDone && v.Status != StatusInterrupted) || v.Checkpoint == "" {
		return v, nil
	}
	if wf == nil { // a run of another replica's workflow
		return v, notServedHere(v.ID, v.Workflow)
	}
	if v.Status == StatusDone {
		if values, ok := s.values.get(key, v.Checkpoint); ok {
			v.Values = values
			return v, nil
		}
	}
	snap, err := wf.State(ctx, key, graph.WithSaver(s.saver), graph.FromCheckpoint(v.Checkpoint))
	if err != nil {
		return v, fmt.Errorf("server: read the values of run %q at checkpoint %q: %w", v.ID, v.Checkpoint, err)
	}
	if v.Values, err = json.Marshal(snap.State); err != nil {
		return v, fmt.Errorf("server: encode the values of run %q: %w", v.ID, err)
	}
	v.Interrupts = snap.Interrupts
	return v, nil
}

// keepValues caches the values of ru, which ended with end, its root
// run_end event, when it ended done at a checkpoint it stored: they are
// the values at that checkpoint, which its waiters are about to ask for.
// A run that stored none ended at the checkpoint it read when it started,
// which need not be the one the server saw before (startCheckpoint):
// another writer may have stored one in between.
func (s *Server) keepValues(ru *run, end graph.Event) {
	v := ru.view()
	ru.mu.Lock()
	start := ru.startCheckpoint
	ru.mu.Unlock()
	if end.Kind != graph.EventRunEnd || v.Status != StatusDone || v.Checkpoint == "" || v.Checkpoint == start {
		return
	}
	if values, err := json.Marshal(end.State); err == nil {
		s.values.put(ru.key, v.Checkpoint, values)
	}
}

// earlyError is the error of a run that ended before it started, or nil.
func (ru *run) earlyError() *apiError {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if ru.failedEarly {
		return ru.err
	}
	return nil
}

// cancelRun cancels ru: a queued run ends at once, a running one when the
// engine notices. It reports false when ru had already ended.
func (s *Server) cancelRun(ru *run) bool {
	select {
	case <-ru.done:
		return false
	default:
	}
	cause := fmt.Errorf("server: cancelled by request")
	s.mu.Lock()
	queued := false
	if ts := s.threads[ru.key]; ts != nil {
		if q := ts.dequeue(ru.id); q != nil {
			q.ticket.Release()
			queued = true
		}
	}
	s.mu.Unlock()
	ru.cancel(cause)
	if queued {
		s.finishUnstarted(ru, cause)
	}
	return true
}
