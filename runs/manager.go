package runs

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

// The statuses of a run a Manager keeps.
const (
	StatusQueued      = "queued"      // waiting for its thread's active run
	StatusRunning     = "running"     //
	StatusDone        = "done"        // finished: nothing left to run
	StatusInterrupted = "interrupted" // paused on interrupts
	StatusError       = "error"       // failed
	StatusCancelled   = "cancelled"   // cancelled (Handle.Cancel, Manager.Close)
)

// ErrClosed is a run asked of a Manager that is closing.
var ErrClosed = errors.New("runs: the manager is closing")

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	// Ledger admits the runs (nil: a new one).
	Ledger *Ledger
	// RetainRuns and RetainBytes bound the finished runs the Manager
	// keeps for Get, oldest forgotten first (the newest is always kept);
	// 0: 1,000 runs and 16 MiB.
	RetainRuns  int
	RetainBytes int64
	// EventBuffer and EventBufferBytes bound the events of each run kept
	// for its streams (0: 1,024 events and 4 MiB).
	EventBuffer      int
	EventBufferBytes int
	// Encode renders an event, the idth of run, for the run's
	// EventBuffer (nil: no data, only the event's name).
	Encode func(id int64, run string, ev graph.Event) []byte
}

// Task is a run asked of a Manager: the run, how it is admitted and how
// it executes.
type Task struct {
	Run *Run
	// Busy says what becomes of the run when its thread has an open run,
	// and Limits are its owner's quotas (Request), for Submit.
	Busy   Busy
	Limits Limits
	// Context carries the values of the run's context (a trace's span),
	// not its cancellation (nil: context.Background()).
	Context context.Context
	// Prepare says how the run executes, when it starts: its executor,
	// options and meter. An error ends the run before it started. Nil:
	// Execute the run on Executor without a meter.
	Prepare  func(ctx context.Context, h *Handle) (Execution, error)
	Executor Executor

	// Admitted says the run has its place elsewhere (a replica's claimed
	// run: its row among the replicas is its place): the Ledger does not
	// admit it, and it becomes its thread's active run at once.
	Admitted bool
	// Check, when set, may refuse the run in the step that admits it,
	// seeing its thread's open runs (Thread): a caller's rule on them
	// holds against every run asked at once. Its error is Start's.
	Check func(open ThreadRuns) error
	// Created is when the run was asked for (zero: when New made it);
	// EventsAfter, when not zero, numbers its events after it (a run
	// another process began).
	Created     time.Time
	EventsAfter int64
	// Recorded, when set, is called with each event the run records and
	// its frame, on the run's goroutine, before the run's streams see it.
	Recorded func(ev graph.Event, f Frame)
	// Ended, when set, is called once the run ended, its status and
	// error set, before its thread's next run starts and before those
	// waiting on it wake; Finally, when set, once they woke, on the run's
	// goroutine when it executed (Close waits for it).
	Ended, Finally func(h *Handle)
	// Size, when set, is what the finished run takes in memory beside
	// what the Manager counts, for RetainBytes.
	Size func(h *Handle) int64
	// Value is the caller's own data of the run (Handle.Value).
	Value any
	// Slim: once the run ended (after Ended), the Manager drops its Run's
	// Input and Answers and its Outcome's values (End, Interrupts), so
	// that a finished run it keeps takes little memory; Outcome is then
	// for Ended to read.
	Slim bool
}

// ThreadRuns are the runs a Manager keeps of one thread.
type ThreadRuns struct {
	// Active is the thread's running run, or nil; Queued wait behind it,
	// oldest first.
	Active *Handle
	Queued []*Handle
	// Kept are the thread's runs the Manager keeps (Get), oldest first.
	Kept []*Handle
}

// Open reports whether the thread has a run active or queued.
func (t ThreadRuns) Open() bool { return t.Active != nil || len(t.Queued) > 0 }

// threadRuns is what the Manager keeps of one thread.
type threadRuns struct {
	active *Handle
	queued []*Handle
	kept   []*Handle
	closed bool // CloseThread
}

// ErrThreadClosed is a run asked on a thread closed to new runs
// (CloseThread).
var ErrThreadClosed = errors.New("runs: the thread is closed to new runs")

// Manager keeps the lifecycle of the runs of one process: it admits a
// run through its Ledger in the step that registers it, keeps one active
// run per thread with the others queued in order, starts each when its
// turn comes, executes it (Execute) and records its events for the
// streams that follow it, ends it, cancels it with a cause, and keeps the
// finished runs within bounds of count and memory.
//
// The zero Manager is not ready: make one with NewManager.
type Manager struct {
	cfg    ManagerConfig
	ledger *Ledger

	mu       sync.Mutex
	runs     map[string]*Handle
	threads  map[string]*threadRuns // by thread key
	finished *list.List             // of *Handle, oldest first
	retained int64
	closing  bool
	wg       sync.WaitGroup
}

// NewManager returns a Manager configured by cfg.
func NewManager(cfg ManagerConfig) *Manager {
	if cfg.Ledger == nil {
		cfg.Ledger = NewLedger()
	}
	if cfg.RetainRuns <= 0 {
		cfg.RetainRuns = 1000
	}
	if cfg.RetainBytes <= 0 {
		cfg.RetainBytes = 16 << 20
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = 1024
	}
	if cfg.EventBufferBytes <= 0 {
		cfg.EventBufferBytes = 4 << 20
	}
	return &Manager{cfg: cfg, ledger: cfg.Ledger, runs: make(map[string]*Handle),
		threads: make(map[string]*threadRuns), finished: list.New()}
}

// Ledger is the ledger the Manager admits its runs in.
func (m *Manager) Ledger() *Ledger { return m.ledger }

// Submit admits the run t asks for and starts it, or queues it behind
// its thread's open runs: New, then Start.
func (m *Manager) Submit(t Task) (*Handle, error) {
	h, err := m.New(t)
	if err != nil {
		return nil, err
	}
	if _, err := m.Start(h, t.Busy, t.Limits); err != nil {
		return nil, err
	}
	return h, nil
}

// New returns the handle of the run t asks for, not yet admitted: its
// channels and events are there to attach to before it starts (Start).
func (m *Manager) New(t Task) (*Handle, error) {
	if t.Run == nil || t.Run.ID == "" {
		return nil, errors.New("runs: a task needs a run with an id")
	}
	if t.Prepare == nil && t.Executor == nil {
		return nil, fmt.Errorf("runs: run %q has no executor", t.Run.ID)
	}
	parent := t.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	created := t.Created
	if created.IsZero() {
		created = time.Now().UTC()
	}
	h := &Handle{m: m, task: t, ctx: ctx, cancel: cancel, started: make(chan struct{}), done: make(chan struct{}),
		status: StatusRunning, created: created}
	h.events.Init(m.cfg.EventBuffer, m.cfg.EventBufferBytes)
	if t.EventsAfter > 0 {
		h.events.ContinueAfter(t.EventsAfter)
	}
	return h, nil
}

// Start admits h, made by New, with busy and limits (as Request's), and
// starts it, or queues it behind its thread's open runs: it reports
// whether it queued it. A refusal is a *QuotaError, a *BusyError,
// ErrClosed, ErrThreadClosed or the error of the task's Check; h is then
// not kept, and its context is cancelled with that error. A run Admitted
// elsewhere is not refused on a closed thread.
func (m *Manager) Start(h *Handle, busy Busy, limits Limits) (queued bool, err error) {
	if h.m != m {
		return false, errors.New("runs: the handle is another manager's")
	}
	t := h.task
	key := t.Run.key()
	m.mu.Lock()
	defer m.mu.Unlock()
	refuse := func(err error) (bool, error) {
		h.cancel(err)
		return false, err
	}
	if m.closing {
		return refuse(ErrClosed)
	}
	if old, dup := m.runs[t.Run.ID]; dup {
		if !t.Admitted {
			return refuse(fmt.Errorf("runs: run %q exists", t.Run.ID))
		}
		// A run admitted elsewhere anew (taken over) replaces the one kept.
		m.forgetLocked(old)
	}
	th := m.threads[key]
	if th != nil && th.closed && !t.Admitted {
		return refuse(fmt.Errorf("runs: thread %q: %w", t.Run.Thread, ErrThreadClosed))
	}
	if t.Check != nil {
		if err := t.Check(th.view()); err != nil {
			return refuse(err)
		}
	}
	if !t.Admitted {
		ticket, err := m.ledger.Admit(Request{Owner: t.Run.Owner, Thread: key, Run: t.Run.ID, Busy: busy, Limits: limits})
		if err != nil {
			return refuse(err)
		}
		h.ticket = ticket
	}
	if th == nil {
		th = &threadRuns{}
		m.threads[key] = th
	}
	m.runs[t.Run.ID] = h
	th.kept = append(th.kept, h)
	if h.ticket != nil && h.ticket.Queued() {
		h.mu.Lock()
		h.status = StatusQueued
		h.mu.Unlock()
		th.queued = append(th.queued, h)
		return true, nil
	}
	m.startLocked(th, h)
	return false, nil
}

// view is what th keeps, copied (th may be nil).
func (th *threadRuns) view() ThreadRuns {
	if th == nil {
		return ThreadRuns{}
	}
	return ThreadRuns{Active: th.active, Queued: slices.Clone(th.queued), Kept: slices.Clone(th.kept)}
}

// Thread returns the runs the Manager keeps of the thread key (Run.Key,
// or its Thread when Key is empty).
func (m *Manager) Thread(key string) ThreadRuns {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.threads[key].view()
}

// CloseThread closes the thread key to new runs (Start refuses them with
// ErrThreadClosed) until reopen is called, and forgets its finished runs:
// a caller deletes the thread meanwhile. A thread with an open run is not
// closed: the error is a *BusyError naming its active or first queued
// run; one closed already is ErrThreadClosed.
func (m *Manager) CloseThread(key string) (reopen func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	th := m.threads[key]
	switch {
	case th != nil && th.closed:
		return nil, fmt.Errorf("runs: thread %q: %w", key, ErrThreadClosed)
	case th != nil && th.active != nil:
		return nil, &BusyError{Run: th.active.task.Run.ID}
	case th != nil && len(th.queued) > 0:
		return nil, &BusyError{Run: th.queued[0].task.Run.ID}
	}
	if th != nil {
		for _, h := range slices.Clone(th.kept) {
			m.forgetLocked(h)
		}
	}
	mark := &threadRuns{closed: true}
	m.threads[key] = mark
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		mark.closed = false
		m.dropThreadLocked(key, mark)
	}, nil
}

// dropThreadLocked forgets th, the thread key, once it keeps no run and
// is not closed. m.mu is held.
func (m *Manager) dropThreadLocked(key string, th *threadRuns) {
	if m.threads[key] == th && !th.closed && th.active == nil && len(th.queued) == 0 && len(th.kept) == 0 {
		delete(m.threads, key)
	}
}

// All returns the runs the Manager keeps, in no order.
func (m *Manager) All() []*Handle {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := make([]*Handle, 0, len(m.runs))
	for _, h := range m.runs {
		all = append(all, h)
	}
	return all
}

// startLocked makes h its thread's active run and starts it. m.mu is
// held.
func (m *Manager) startLocked(th *threadRuns, h *Handle) {
	th.active = h
	h.mu.Lock()
	h.status = StatusRunning
	h.mu.Unlock()
	m.wg.Add(1)
	go m.execute(h)
}

// execute executes h to its end, then starts its thread's next run.
func (m *Manager) execute(h *Handle) {
	defer m.wg.Done()
	h.mu.Lock()
	h.startedAt = time.Now().UTC()
	h.mu.Unlock()
	x := Execution{Executor: h.task.Executor}
	var err error
	if h.task.Prepare != nil {
		x, err = h.task.Prepare(h.ctx, h)
	}
	if err != nil {
		m.end(h, err)
		return
	}
	h.mu.Lock()
	h.meter = x.Meter
	h.mu.Unlock()
	observe := x.Observe
	x.Observe = func(ev graph.Event, err error) {
		h.record(ev)
		if observe != nil {
			observe(ev, err)
		}
	}
	out := Execute(h.ctx, h.task.Run, x)
	h.mu.Lock()
	h.outcome = out
	h.mu.Unlock()
	m.end(h, out.Err)
}

// end records how h ended, gives its place on its thread to the next
// queued run (starting it), keeps h among the finished runs, and only
// then wakes those waiting on it: a caller told a run ended may start the
// next at once.
func (m *Manager) end(h *Handle, err error) {
	h.settle(err)
	if h.task.Ended != nil {
		h.task.Ended(h)
	}
	m.mu.Lock()
	key := h.task.Run.key()
	th := m.threads[key]
	if th != nil && th.active == h {
		th.active = nil
	}
	if h.ticket != nil {
		for next := h.ticket.Release(); next != nil; next = next.Release() {
			if q := m.dequeueLocked(key, next.Run()); q != nil {
				m.startLocked(th, q)
				break
			}
		}
	}
	m.retainLocked(h)
	m.mu.Unlock()
	h.wake()
	if h.task.Finally != nil {
		h.task.Finally(h)
	}
}

// dequeueLocked removes the queued run id of thread key and returns it,
// or nil when it is not queued. m.mu is held.
func (m *Manager) dequeueLocked(key, id string) *Handle {
	th := m.threads[key]
	if th == nil {
		return nil
	}
	for i, h := range th.queued {
		if h.task.Run.ID == id {
			th.queued = slices.Delete(th.queued, i, i+1)
			return h
		}
	}
	return nil
}

// handleOverhead is what a finished run takes in memory beside its
// strings: the structs, channels, list element and map entry.
const handleOverhead = 1024

// retainLocked keeps the finished h and forgets the oldest finished runs
// beyond the bounds; the newest is kept. m.mu is held.
func (m *Manager) retainLocked(h *Handle) {
	if h.elem != nil || m.runs[h.task.Run.ID] != h {
		return
	}
	h.mu.Lock()
	if h.task.Slim {
		h.task.Run.Input, h.task.Run.Answers = nil, nil
		h.outcome.End, h.outcome.Interrupts = graph.Event{}, nil
	}
	r := h.task.Run
	h.size = int64(handleOverhead + len(r.ID) + len(r.Thread) + len(r.Key) + len(r.Owner) + len(r.Workflow))
	if h.err != nil {
		h.size += int64(len(h.err.Error()))
	}
	h.mu.Unlock()
	if h.task.Size != nil {
		h.size += h.task.Size(h)
	}
	h.elem = m.finished.PushBack(h)
	m.retained += h.size
	for m.finished.Len() > 1 && (m.finished.Len() > m.cfg.RetainRuns || m.retained > m.cfg.RetainBytes) {
		m.forgetLocked(m.finished.Front().Value.(*Handle))
	}
}

// forgetLocked drops h. m.mu is held.
func (m *Manager) forgetLocked(h *Handle) {
	if m.runs[h.task.Run.ID] == h {
		delete(m.runs, h.task.Run.ID)
	}
	if h.elem != nil {
		m.finished.Remove(h.elem)
		m.retained -= h.size
		h.elem = nil
	}
	key := h.task.Run.key()
	if th := m.threads[key]; th != nil {
		if i := slices.Index(th.kept, h); i >= 0 {
			th.kept = slices.Delete(th.kept, i, i+1)
		}
		m.dropThreadLocked(key, th)
	}
}

// Forget drops a run the Manager keeps (a finished one, or one whose
// caller answered with its early failure).
func (m *Manager) Forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.runs[id]; h != nil {
		m.forgetLocked(h)
	}
}

// Get returns the run id, running, queued or finished and kept, or nil.
func (m *Manager) Get(id string) *Handle {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[id]
}

// Close cancels every run with cause (ErrClosed when nil) — the queued
// ones end at once — refuses new ones, and waits until the running ones
// ended or ctx is done.
func (m *Manager) Close(ctx context.Context, cause error) error {
	if cause == nil {
		cause = ErrClosed
	}
	m.mu.Lock()
	m.closing = true
	var all []*Handle // the queued first: none starts when a run ends
	for _, th := range m.threads {
		all = append(all, th.queued...)
	}
	for _, h := range m.runs {
		all = append(all, h)
	}
	m.mu.Unlock()
	for _, h := range all {
		h.Cancel(cause)
	}
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Handle is one run a Manager keeps: its status, how it ended, its
// events and its usage, and the channels to wait on.
type Handle struct {
	m      *Manager
	task   Task
	ticket *Ticket
	ctx    context.Context
	cancel context.CancelCauseFunc

	started, done chan struct{}
	events        EventBuffer
	elem          *list.Element // in Manager.finished
	size          int64

	mu                          sync.Mutex
	status                      string
	created, startedAt, endedAt time.Time
	isStarted                   bool
	err                         error
	meter                       *llm.Meter
	outcome                     Outcome
}

// Run is the run h executes.
func (h *Handle) Run() *Run { return h.task.Run }

// Value is the caller's data of the run (Task.Value).
func (h *Handle) Value() any { return h.task.Value }

// Context is the run's context: cancelled with its cause when it is.
func (h *Handle) Context() context.Context { return h.ctx }

// Started is closed once the run got past its start (its root yielded an
// event other than run_start and error) or ended.
func (h *Handle) Started() <-chan struct{} { return h.started }

// Done is closed once the run ended.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Status is the run's status (StatusQueued …).
func (h *Handle) Status() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status
}

// Err is why the run failed or was cancelled (nil: it did not, or has not
// ended).
func (h *Handle) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Outcome is how the run's execution ended (zero until it did, and for a
// run that never executed).
func (h *Handle) Outcome() Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.outcome
}

// Usage is what the run's model calls spent so far, as its meter counts
// them (those of a Remote executor included).
func (h *Handle) Usage() llm.Spend {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.meter == nil {
		return llm.Spend{}
	}
	return h.meter.Spent()
}

// Times are when the run was asked for, started and ended (zero: not
// yet).
func (h *Handle) Times() (created, started, ended time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.created, h.startedAt, h.endedAt
}

// Events returns the run's held events after id after (appended to buf),
// as EventBuffer.Since: a stream reads them, and re-attaches after the
// last it got (Last-Event-ID). Attach before reading, to keep a finished
// run's events while reading them.
func (h *Handle) Events(after int64, buf []Frame) (frames []Frame, dropped int64, closed bool, wake <-chan struct{}) {
	return h.events.Since(after, buf)
}

// EventCount is the id of the run's last event (Task.EventsAfter when
// it recorded none).
func (h *Handle) EventCount() int64 { return h.events.Count() }

// SetStatus sets the run's status, for a run whose end another process
// executed (a run taken over): its events would otherwise say it.
func (h *Handle) SetStatus(status string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status = status
}

// Attach keeps the run's events for a stream until Detach.
func (h *Handle) Attach() { h.events.Attach() }

// Detach ends what Attach began.
func (h *Handle) Detach() { h.events.Detach() }

// Cancel cancels the run with cause: a queued run ends at once, a running
// one when its executor notices. It reports false when the run had
// already ended.
func (h *Handle) Cancel(cause error) bool {
	select {
	case <-h.done:
		return false
	default:
	}
	if cause == nil {
		cause = errors.New("runs: cancelled")
	}
	m := h.m
	m.mu.Lock()
	q := m.dequeueLocked(h.task.Run.key(), h.task.Run.ID)
	if q != nil {
		h.ticket.Release() // a queued run's release starts no other
	}
	m.mu.Unlock()
	h.cancel(cause)
	if q != nil {
		h.settle(cause)
		if h.task.Ended != nil {
			h.task.Ended(h)
		}
		m.mu.Lock()
		m.retainLocked(h)
		m.mu.Unlock()
		h.wake()
	}
	return true
}

// record keeps ev in the run's events and notes what it says of the run.
func (h *Handle) record(ev graph.Event) {
	root := ev.Path == h.task.Run.Graph
	id := h.events.NextID()
	var data []byte
	if h.m.cfg.Encode != nil {
		data = h.m.cfg.Encode(id, h.task.Run.ID, ev)
	}
	h.mu.Lock()
	if root && ev.Kind == graph.EventRunEnd {
		if st, ok := ev.Data.(graph.Status); ok {
			h.status = string(st)
		}
	}
	markStarted := root && !h.isStarted && ev.Kind != graph.EventRunStart && ev.Kind != graph.EventError
	if markStarted {
		h.isStarted = true
	}
	h.mu.Unlock()
	name := ev.Name()
	if h.task.Recorded != nil {
		h.task.Recorded(ev, Frame{ID: id, Name: name, Data: data})
	}
	h.events.Append(name, data)
	if markStarted {
		close(h.started)
	}
}

// settle records how the run ended: err nil is the status its events
// said; a cancelled run's error is its cause.
func (h *Handle) settle(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endedAt = time.Now().UTC()
	if h.startedAt.IsZero() {
		h.startedAt = h.endedAt
	}
	switch cause := context.Cause(h.ctx); {
	case err == nil:
		if h.status == StatusRunning || h.status == StatusQueued {
			h.status = StatusDone
		}
	case cause != nil:
		h.status, h.err = StatusCancelled, cause
	default:
		h.status, h.err = StatusError, err
	}
}

// wake closes the run's events and channels: every waiter sees it ended.
func (h *Handle) wake() {
	h.mu.Lock()
	wasStarted := h.isStarted
	h.isStarted = true
	h.mu.Unlock()
	h.cancel(nil)
	h.events.Close()
	if !wasStarted {
		close(h.started)
	}
	close(h.done)
}

// WithThread calls f with the runs the Manager keeps of the thread key,
// in the Manager's critical section: none of them starts, ends or is
// forgotten meanwhile (a stream attaches to their events before any
// ends). f must not call the Manager.
func (m *Manager) WithThread(key string, f func(ThreadRuns)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m.threads[key].view())
}
