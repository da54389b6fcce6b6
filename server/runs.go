package server

import (
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
	// platform holds what a Platform API request adds (platform_runs.go);
	// nil for /v1 runs.
	platform *platformRun

	// h is the run in the server's runs.Manager, which keeps its
	// lifecycle: admission, its thread's queue, its status and times, its
	// events, its cancellation, its retention. ctx, started, done and
	// events are h's: its context (the caller's trace context, not its
	// cancellation), its channels (started is closed once the run got
	// past its start — it loaded the thread and applied its input or
	// answers — or ended; done when it has ended) and its events.
	h             *runs.Handle
	ctx           context.Context
	started, done <-chan struct{}
	events        eventLog
	// obs traces the run once it executes; setupErr is a claimed run's
	// failure to set up, which ends it before it executes.
	obs      *telemetry.Observer
	setupErr error

	mu         sync.Mutex
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
	// claim is the run's claim among replicas (Config.Replicas), or nil;
	// publish shares each of its events with the other replicas.
	claim     *Claim
	publish   func(id int64, name string, frame []byte)
	stopLease func() // stops renewing the claim's lease
	// notice is how the notice of the run's end stands (notices.go).
	notice runNotice
	// task is the A2A task whose run it is ("" for none), set before
	// it starts.
	task string
}

func (s *Server) newRun(r *http.Request, th Thread, wf *graph.Runnable) *run {
	owner := ownerFrom(r.Context())
	// The caller's span (traceparent) becomes the parent of the run's
	// span; the request's cancellation does not reach the run.
	ctx := s.cfg.Propagator.Extract(context.WithoutCancel(r.Context()), propagationCarrier(r.Header))
	ru := &run{id: newID(), thread: th.ID, key: threadKey(owner, th.ID), owner: owner, workflow: th.Workflow, wf: wf}
	s.track(ru, runs.Task{Context: ctx})
	return ru
}

// track makes ru a run of the server's Manager with t, which the server's
// hooks complete: how it executes (Prepare), what it notes of its events
// (Recorded), what it does when it ended (Ended, Finally), what it takes
// in memory (Size). It is not started yet (submit).
func (s *Server) track(ru *run, t runs.Task) {
	t.Run = &runs.Run{ID: ru.id, Thread: ru.thread, Key: ru.key, Owner: ru.owner, Workflow: ru.workflow, Graph: ru.wf.Name()}
	t.Value, t.Slim = ru, true // the server keeps no values in memory
	t.Prepare = func(context.Context, *runs.Handle) (runs.Execution, error) { return s.prepare(ru) }
	t.Recorded = ru.recorded
	t.Ended = func(*runs.Handle) { s.ended(ru) }
	t.Finally = func(*runs.Handle) { s.finally(ru) }
	t.Size = func(*runs.Handle) int64 { return ru.footprint() }
	if !t.Admitted {
		t.Check = func(open runs.ThreadRuns) error {
			if e := refuseAmong(ru, open); e != nil {
				return e
			}
			return nil
		}
	}
	h, err := s.manager.New(t)
	if err != nil {
		panic(err) // a task with a run and Prepare is always made
	}
	ru.h, ru.ctx, ru.started, ru.done, ru.events = h, h.Context(), h.Started(), h.Done(), eventLog{h}
}

// runOf is the server's run of h.
func runOf(h *runs.Handle) *run { return h.Value().(*run) }

// runsOf are the server's runs of hs.
func runsOf(hs []*runs.Handle) []*run {
	out := make([]*run, len(hs))
	for i, h := range hs {
		out[i] = runOf(h)
	}
	return out
}

// lookup is the run id the server keeps, or nil.
func (s *Server) lookup(id string) *run {
	if h := s.manager.Get(id); h != nil {
		return runOf(h)
	}
	return nil
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
// A run beyond one of the owner's quotas is refused, as is one on a
// thread being deleted or a stateless run's, in the step that admits it.
func (s *Server) submit(ru *run) (queued bool, err *apiError) {
	if e := s.storageQuota(ru.owner); e != nil {
		return false, e
	}
	if e := s.budgetQuota(ru.ctx, ru.owner); e != nil {
		return false, e
	}
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	shuttingDown := errorf(http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down; start the run again later")
	if closing {
		return false, shuttingDown
	}
	queued, refused := s.manager.Start(ru.h, s.busyOf(ru), s.runLimits())
	var e *apiError
	switch {
	case refused == nil:
		return queued, nil
	case errors.Is(refused, runs.ErrClosed):
		return false, shuttingDown
	case errors.As(refused, &e):
		return false, e
	}
	if e := refusal(ru, refused); e != nil {
		return false, e
	}
	return false, errorf(http.StatusInternalServerError, "run_failed", "%v", refused)
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

// prepare readies ru to execute when the Manager starts it: a claimed
// run holds its lease and may have ended already on the replica it was
// taken over from; precheck refuses what the thread's state makes
// pointless; its meter, trace and options come last. An error ends ru
// before it started.
func (s *Server) prepare(ru *run) (runs.Execution, error) {
	if ru.setupErr != nil {
		return runs.Execution{}, ru.setupErr
	}
	if ru.claim != nil {
		ru.stopLease = s.holdLease(ru)
		if x, over, err := s.takenOver(ru); over || err != nil {
			return x, err
		}
	}
	if err := s.precheck(ru); err != nil {
		return runs.Execution{}, s.runFailure(ru, err)
	}
	meter, err := s.meterRun(ru)
	if err != nil {
		return runs.Execution{}, s.runFailure(ru, err)
	}
	obs := telemetry.NewObserver(ru.ctx, s.tracer,
		attribute.String("coorflow.thread", ru.thread), attribute.String("coorflow.run", ru.id),
		attribute.String("coorflow.workflow", ru.workflow))
	ru.mu.Lock()
	ru.obs = obs
	ru.mu.Unlock()
	s.log.DebugContext(ru.ctx, "server: run started", "run", ru.id, "thread", ru.thread, "workflow", ru.workflow)
	x := s.execution(ru, meter)
	x.Observe = func(ev graph.Event, err error) {
		if err != nil {
			ev.Err = err // the operator's traces keep the detail
		}
		obs.Observe(ev)
	}
	s.fillSpec(ru)
	return x, nil
}

// ended is what the server does once ru ended, before its thread's next
// run starts and its waiters wake: it ends its trace, caches its values,
// deletes a stateless run's thread, settles its error, and tells the
// other replicas how it ended.
func (s *Server) ended(ru *run) {
	ru.mu.Lock()
	obs := ru.obs
	ru.mu.Unlock()
	if obs != nil {
		out := ru.h.Outcome()
		obs.Finish(out.Cause)
		if out.Err == nil {
			s.keepValues(ru, out.End)
		}
	}
	s.endEphemeral(ru)
	ru.settle()
	s.finishShared(ru)
}

// finally is what the server does once those waiting on ru woke: the
// notice of its end (its webhook, its A2A task's end: endNotice), and
// its log, for a run that executed.
func (s *Server) finally(ru *run) {
	s.endNotice(ru)
	ru.mu.Lock()
	obs := ru.obs
	ru.mu.Unlock()
	if obs == nil {
		return
	}
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

// fillSpec completes ru's runs.Run with what its options, its recording
// and its replay come from, as for a run of the CLI, once precheck did.
func (s *Server) fillSpec(ru *run) {
	r := ru.h.Run()
	ru.mu.Lock()
	defer ru.mu.Unlock()
	r.Input, r.Answers, r.Resuming, r.StartCheckpoint, r.Config = ru.input, ru.answers, ru.resume != nil, ru.startCheckpoint, ru.config
	if env, ok := s.cfg.Envs[ru.workflow]; ok {
		r.Env = &env
	}
}

// precheck refuses a run on a thread that no longer exists, and one that
// the thread's state makes pointless or that the engine would refuse with
// an error no sentinel names: an input for a thread whose run did not
// finish, one answer for several questions, a continuation with nothing
// to continue.
func (s *Server) precheck(ru *run) error {
	// The request read the thread's record before the run was admitted;
	// a deletion of the thread that ended in between left the run
	// admitted on no thread. Admitted, the thread is busy and no
	// deletion can begin: its record is read again.
	if _, _, err := s.threadRecord(ru.ctx, ru.owner, ru.thread); err != nil {
		return err
	}
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

// footprint is what the finished run takes in memory beside what its
// Manager counts. Its values, input and events are gone by then.
func (ru *run) footprint() int64 {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	n := len(ru.checkpoint)
	if ru.err != nil {
		n += len(ru.err.Message) + len(ru.err.Code)
	}
	return int64(n)
}

// recorded notes what ev, recorded as f, says about the run (its
// checkpoint), and shares it with the other replicas. It runs on the
// run's goroutine, before the engine goes on.
func (ru *run) recorded(ev graph.Event, f runs.Frame) {
	if ev.Path == ru.wf.Name() && ev.Kind == graph.EventCheckpoint {
		ru.mu.Lock()
		ru.checkpoint, _ = ev.Data.(string)
		ru.mu.Unlock()
	}
	if ru.publish != nil {
		ru.publish(f.ID, f.Name, f.Data)
	}
}

// maxErrorMessage caps the message of a run's error kept in memory.
const maxErrorMessage = 4 << 10

// settle records the run's error as the API shows it, once its Manager
// settled how it ended, and drops what it no longer needs: its input and
// answers.
func (ru *run) settle() {
	status, err := ru.h.Status(), ru.h.Err()
	started := false
	select {
	case <-ru.started:
		started = true
	default:
	}
	ru.mu.Lock()
	defer ru.mu.Unlock()
	ru.input, ru.resume, ru.answers = nil, nil, nil
	switch {
	case err == nil:
		// Finished, even if cancelled after the engine's last step.
	case status == StatusCancelled:
		ru.err = errorf(http.StatusConflict, StatusCancelled, "run cancelled: %v", strings.TrimPrefix(err.Error(), "server: "))
		if errors.Is(err, errShutdown) {
			ru.err = errorf(http.StatusServiceUnavailable, CodeShuttingDown, "run cancelled: the server is shutting down")
		}
	default:
		ru.err = runError(err)
		// The engine names the thread by its Saver key; the client knows
		// it by its id.
		ru.err.Message = strings.ReplaceAll(ru.err.Message, strconv.Quote(ru.key), strconv.Quote(ru.thread))
		if len(ru.err.Message) > maxErrorMessage {
			ru.err.Message = strings.ToValidUTF8(ru.err.Message[:maxErrorMessage], "") + " … (cut)"
		}
	}
	ru.failedEarly = !started && ru.err != nil
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
	status, events := ru.h.Status(), ru.h.EventCount()
	created, startedAt, endedAt := ru.h.Times()
	ru.mu.Lock()
	defer ru.mu.Unlock()
	v := Run{
		ID: ru.id, ThreadID: ru.thread, Workflow: ru.workflow, Status: status, CreatedAt: created,
		Checkpoint: ru.checkpoint, Events: events,
	}
	if ru.claim != nil {
		v.Replica, v.Takeovers = ru.claim.Run.Replica, ru.claim.Run.Takeovers
	}
	if !startedAt.IsZero() {
		v.StartedAt = &startedAt
	}
	if !endedAt.IsZero() {
		v.EndedAt = &endedAt
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
	return ru.h.Cancel(fmt.Errorf("server: cancelled by request"))
}

// cancel cancels ru with cause, as cancelRun; a run not started yet
// (submit) never will.
func (ru *run) cancel(cause error) { ru.h.Cancel(cause) }

// forget drops a run whose request was answered with an error.
func (s *Server) forget(ru *run) { s.manager.Forget(ru.id) }

// createdAt is when ru was asked for.
func (ru *run) createdAt() time.Time {
	created, _, _ := ru.h.Times()
	return created
}
