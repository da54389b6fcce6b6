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
	"github.com/coorflow/coorflow/telemetry"
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
	// interrupted).
	Values json.RawMessage `json:"values,omitempty"`
	// Interrupts are the questions an interrupted run waits on.
	Interrupts []graph.InterruptInfo `json:"interrupts,omitempty"`
	// Checkpoint is the last checkpoint the run stored.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Events counts the events the run has emitted so far.
	Events int64        `json:"events"`
	Error  *ErrorDetail `json:"error,omitempty"`
}

// run is one run the server started or queued.
type run struct {
	id, thread, key, owner, workflow string
	wf                               *graph.Runnable
	input                            []graph.Write // nil: continue the thread
	resume                           graph.Option  // nil: no answer
	resumeOne                        bool          // one answer for the only interrupt

	// ctx carries the caller's trace context, not its cancellation.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// started is closed once the run got past its start (it loaded the
	// thread and applied its input or answers) or ended; done when it has
	// ended.
	started chan struct{}
	done    chan struct{}
	elem    *list.Element // in Server.finished

	mu         sync.Mutex
	status     string
	created    time.Time
	startedAt  time.Time
	endedAt    time.Time
	isStarted  bool
	values     json.RawMessage
	interrupts []graph.InterruptInfo
	checkpoint string
	err        *apiError
	// failedEarly: the run ended before it started; its error is the
	// answer to the request that made it.
	failedEarly bool
	events      eventLog
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

// submit registers ru and starts it, or queues it behind the thread's run
// in progress when the server allows it. It returns whether ru was queued.
func (s *Server) submit(ru *run) (queued bool, err *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false, errorf(http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down; start the run again later")
	}
	ts := s.threads[ru.key]
	if ts == nil {
		ts = &threadRuns{}
		s.threads[ru.key] = ts
	}
	if ts.active != nil && !s.cfg.QueueBusy {
		e := errorf(http.StatusConflict, CodeThreadBusy, "thread %q already has run %q in progress: wait for it, cancel it, or enable queueing", ru.thread, ts.active.id)
		e.Run = ts.active.id
		return false, e
	}
	s.runs[ru.id] = ru
	ts.runs = append(ts.runs, ru)
	if ts.active != nil {
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

// execute runs ru to its end and then starts the next queued run of the
// thread.
func (s *Server) execute(ru *run) {
	defer s.wg.Done()
	ru.mu.Lock()
	ru.startedAt = time.Now().UTC()
	ru.mu.Unlock()
	if err := s.precheck(ru); err != nil {
		s.complete(ru, err)
		return
	}
	opts := []graph.Option{
		graph.WithSaver(s.cfg.Saver), graph.Thread(ru.key),
		graph.WithRuntime(map[string]any{RuntimeOwner: ru.owner, RuntimeThread: ru.thread, RuntimeRun: ru.id}),
	}
	if ru.resume != nil {
		opts = append(opts, ru.resume)
	}
	opts = append(opts, s.cfg.RunOptions...)
	obs := telemetry.NewObserver(ru.ctx, s.tracer,
		attribute.String("coorflow.thread", ru.thread), attribute.String("coorflow.run", ru.id),
		attribute.String("coorflow.workflow", ru.workflow))
	s.log.DebugContext(ru.ctx, "server: run started", "run", ru.id, "thread", ru.thread, "workflow", ru.workflow)
	rec := s.startRecording(ru)
	var runErr error
	for ev, err := range ru.wf.Stream(ru.ctx, ru.input, opts...) {
		obs.Observe(ev)
		rec.Observe(ev)
		ru.record(ev)
		if err != nil {
			runErr = err
		}
	}
	obs.Finish(runErr)
	s.finishRecording(ru, rec, runErr)
	s.complete(ru, runErr)
	st := ru.view()
	s.log.InfoContext(ru.ctx, "server: run ended", "run", ru.id, "thread", ru.thread, "status", st.Status, "events", st.Events)
}

// precheck refuses a run that the thread's state makes pointless or that
// the engine would refuse with an error no sentinel names: an input for a
// thread whose run did not finish, one answer for several questions, a
// continuation with nothing to continue.
func (s *Server) precheck(ru *run) error {
	snap, err := ru.wf.State(ru.ctx, ru.key, graph.WithSaver(s.cfg.Saver))
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
	ru.settle(err)
	s.mu.Lock()
	if ts := s.threads[ru.key]; ts != nil && ts.active == ru {
		ts.active = nil
		if len(ts.queue) > 0 && !s.closing {
			next := ts.queue[0]
			ts.queue = ts.queue[1:]
			s.startLocked(ts, next)
		}
	}
	s.retainLocked(ru)
	s.mu.Unlock()
	ru.wake()
}

// finishUnstarted ends a queued run that never started.
func (s *Server) finishUnstarted(ru *run, cause error) {
	ru.settle(cause)
	s.mu.Lock()
	s.retainLocked(ru)
	s.mu.Unlock()
	ru.wake()
}

// retainLocked adds a finished run to the remembered ones and forgets the
// oldest beyond the limit. s.mu is held.
func (s *Server) retainLocked(ru *run) {
	if _, ok := s.runs[ru.id]; !ok || ru.elem != nil {
		return
	}
	ru.elem = s.finished.PushBack(ru)
	for s.finished.Len() > s.cfg.RetainRuns {
		s.forgetLocked(s.finished.Front().Value.(*run))
	}
}

// forgetLocked drops ru from the server's memory. s.mu is held.
func (s *Server) forgetLocked(ru *run) {
	delete(s.runs, ru.id)
	if ru.elem != nil {
		s.finished.Remove(ru.elem)
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
	frame := encodeFrame(ru.events.nextID(), ru.id, ev)
	ru.mu.Lock()
	if root {
		switch ev.Kind {
		case graph.EventRunEnd:
			if st, ok := ev.Data.(graph.Status); ok {
				ru.status = string(st)
			}
			ru.values, _ = json.Marshal(ev.State)
		case graph.EventInterrupt:
			ru.interrupts, _ = ev.Data.([]graph.InterruptInfo)
		case graph.EventCheckpoint:
			ru.checkpoint, _ = ev.Data.(string)
		}
	}
	markStarted := root && !ru.isStarted && ev.Kind != graph.EventRunStart && ev.Kind != graph.EventError
	if markStarted {
		ru.isStarted = true
	}
	ru.mu.Unlock()
	ru.events.append(ev.Kind, frame)
	if markStarted {
		close(ru.started)
	}
}

// settle records how the run ended.
func (ru *run) settle(err error) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
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
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, graph.ErrNotInterrupted):
		return errorf(http.StatusConflict, CodeNotInterrupted, "%v", err)
	case errors.Is(err, graph.ErrStepLimit):
		return errorf(http.StatusInternalServerError, "step_limit", "%v", err)
	case errors.As(err, &ne):
		return errorf(http.StatusInternalServerError, "node_failed", "%v", err)
	}
	return errorf(http.StatusInternalServerError, "run_failed", "%v", err)
}

// view returns the run as the API shows it.
func (ru *run) view() Run {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	v := Run{
		ID: ru.id, ThreadID: ru.thread, Workflow: ru.workflow, Status: ru.status, CreatedAt: ru.created,
		Values: ru.values, Interrupts: ru.interrupts, Checkpoint: ru.checkpoint, Events: ru.events.count(),
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
		v.Error = &ErrorDetail{Code: ru.err.Code, Message: ru.err.Message}
	}
	return v
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
		for i, q := range ts.queue {
			if q == ru {
				ts.queue = append(ts.queue[:i], ts.queue[i+1:]...)
				queued = true
				break
			}
		}
	}
	s.mu.Unlock()
	ru.cancel(cause)
	if queued {
		s.finishUnstarted(ru, cause)
	}
	return true
}
