package graph

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Status says how a run ended.
type Status string

// The statuses of a finished run.
const (
	StatusDone        Status = "done"        // no task is left to run
	StatusInterrupted Status = "interrupted" // paused; Resume continues it
)

// Result is the outcome of a run that did not fail.
type Result struct {
	// State holds the channel values when the run ended.
	State  State
	Status Status
	// Interrupts are the pending questions when Status is interrupted.
	Interrupts []InterruptInfo
	// Thread and Checkpoint locate the run's last checkpoint (empty
	// without a saver).
	Thread     string
	Checkpoint string
}

// Input returns the writes that start a run (never nil, even with no
// writes). Pass nil instead to Invoke or Stream to continue a thread
// without new input; nil for a thread that does not exist yet is an error
// (ErrNoInput). Without a saver there is no thread to continue, and nil
// runs the graph from Start like Input().
func Input(writes ...Write) []Write {
	if writes == nil {
		return []Write{}
	}
	return writes
}

// Invoke runs the graph to the end (or to an interrupt) and returns the
// final state. It is Stream without events (an Events option is ignored).
func (r *Runnable) Invoke(ctx context.Context, input []Write, opts ...Option) (Result, error) {
	cfg := r.defaults
	cfg.apply(opts)
	cfg.events = eventFilter{} // nobody reads them: producers skip their work
	ru, err := r.newRun(cfg, r.name, nil)
	if err != nil {
		return Result{}, err
	}
	return ru.execute(ctx, nil, input)
}

// Stream runs the graph and yields its events as they happen. A failure is
// yielded last, as an EventError event with the error. Breaking out of the
// loop cancels the run; Stream returns only when every goroutine it started
// has ended.
func (r *Runnable) Stream(ctx context.Context, input []Write, opts ...Option) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		cfg := r.defaults
		cfg.events = eventFilter{kinds: allEvents}
		cfg.apply(opts)
		ru, err := r.newRun(cfg, r.name, yield)
		if err == nil {
			_, err = ru.execute(ctx, nil, input)
		}
		if err != nil && (ru == nil || !ru.stopped.Load()) {
			yield(Event{Kind: EventError, Path: r.name, Err: err, Time: time.Now()}, err)
		}
	}
}

// run is the state of one execution of a Runnable.
type run struct {
	r      *Runnable
	cfg    config
	ctx    context.Context
	cancel context.CancelFunc
	path   string
	// yield receives events (the error is always nil); it returns false
	// to stop the run. It is a Stream's own, called directly.
	yield func(Event, error) bool
	// t0 is when the run started, read when its events are read (see now).
	t0 time.Time
	// last is the time of the last event delivered.
	last time.Time
	// partial: the run runs some tasks of a step whose others run
	// elsewhere (RunTasks), so each task's result is stored as it ends,
	// and on workers, never on the caller's goroutine.
	partial bool
	// only, in a run of RunScheduled, is the one task (of Schedule) the
	// run is for: the node runs up to it, and nothing else of the node
	// is kept or streamed.
	only *onlyTask
	// stopped is set when yield returned false; task goroutines read it.
	stopped atomic.Bool
	// events carries events from task goroutines to the loop, and the
	// end of each task (taskEnded) after its events.
	events chan Event

	state *stateData
	step  int
	sched schedule

	// p stores checkpoints; nil without a saver.
	p *persister
	// stateCache, in a Step, keeps the checkpoints it stores (and gives
	// the one it continues); sizes holds, by slot, the stored size of
	// each channel's value, for the cache's bound.
	stateCache *StateCache
	sizes      []int
	// records holds what was stored for the tasks of the step after the
	// loaded checkpoint, by task label; used by the first step only.
	records map[string]*taskRecords
	// breakpointPassed: the run resumes from a static breakpoint, which
	// must not pause it again.
	breakpointPassed bool
	// answers are resume values handed down by a parent run (subgraph).
	answers map[string]json.RawMessage

	// record, in a subgraph's run, receives the writes applied to channels
	// it shares with its parent.
	record func(Write)
	// shared names the channels a subgraph shares with its parent.
	shared map[string]bool

	// nodePaths holds the event paths of nodes in a run whose path is not
	// the graph's name (a subgraph's run), made as tasks need them.
	nodePaths map[string]string
	workers   workers
	// share runs the tasks of a step whose events nobody reads; sharing
	// is set while it does.
	share   share
	sharing bool
	// callScopes: each call of a node gets a context of its own (the
	// stream takes custom events; see taskContext), taken from spare,
	// which the loop refills with chunks of spareChunk.
	callScopes bool
	spare      []callContext
	spareChunk int
	// routeEm is routers' context (see routerContext).
	routeEm emitter
	// per-step buffers, reused
	pend    [][]any
	pendBy  [][]string
	changes []change
	results []taskResult
	// resultsBuf is where results goes back to the Runnable's pool.
	resultsBuf *[]taskResult
	todo       []int
	todo1      [1]int // todo's first array: a one-task step allocates none
	taskBuf    []*task
	slab       []task
}

// change is a channel written in a step, for the checkpoint.
type change struct {
	slot   int
	writes []any
	had    bool // the channel held a value before the step
}

// schedule is what runs next: the part of a run's progress that is not
// channel values.
type schedule struct {
	// triggered nodes (by edges, joins or Goto), sorted, without repeats.
	triggered []string
	// packets from Send, in send order.
	packets []Packet
	// deferred nodes waiting for the schedule to empty.
	deferred []string
	// seen holds, per join, which sources have run.
	seen [][]bool
}

func (s *schedule) empty() bool {
	return len(s.triggered) == 0 && len(s.packets) == 0 && len(s.deferred) == 0
}

type task struct {
	node  *nodeSpec
	name  string
	index int // send index; -1 for a task started by an edge
	// overlay holds a packet's writes, reduced onto the step's state.
	overlay overlay
	packet  []Write
	label   string
	path    string

	// From a previous run of this step (resume):
	done    *taskResult                // its recorded result: not run again
	waiting []InterruptInfo            // unanswered interrupts: not run again
	resume  map[string]json.RawMessage // answers, by interrupt id
	jr      journal
	// scope is the node's emitter (see taskContext); it stays with the
	// task's slot from step to step.
	scope *emitter
}

type taskResult struct {
	cmd        Command
	err        error
	interrupts []InterruptInfo
	attempts   int
	dur        time.Duration
	end        time.Duration // when the task ended, since t0 (EventNodeEnd)
	handled    bool          // the node failed and its error handler supplied cmd
}

func (r *Runnable) newRun(cfg config, path string, yield func(Event, error) bool) (*run, error) {
	ru := &run{
		r:      r,
		cfg:    cfg,
		path:   path,
		yield:  yield,
		events: make(chan Event),
		pend:   make([][]any, len(r.layout.channels)),
		pendBy: make([][]string, len(r.layout.channels)),
	}
	ru.todo = ru.todo1[:0]
	if b, ok := r.results.Get().(*[]taskResult); ok {
		ru.results, ru.resultsBuf = *b, b
	}
	if cfg.events.kinds != 0 {
		ru.t0 = time.Now()
	}
	ru.callScopes = cfg.events.kinds.has(EventCustom)
	if ru.cfg.stepLimit <= 0 {
		ru.cfg.stepLimit = defaultStepLimit
	}
	ru.sched.seen = make([][]bool, len(r.joins))
	for i, j := range r.joins {
		ru.sched.seen[i] = make([]bool, len(j.sources))
	}
	if cfg.subgraph != "" {
		return nil, errors.New("graph: a run starts at the root graph: graph.InSubgraph is for State, StateAt and History")
	}
	if cfg.resume != nil && cfg.resume.err != nil {
		return nil, fmt.Errorf("graph: resume value: %w", cfg.resume.err)
	}
	if cfg.saver != nil {
		if cfg.thread == "" {
			return nil, errors.New("graph: a run with a saver needs a thread: pass graph.Thread(id)")
		}
		ru.p = newPersister(cfg.saver, cfg.thread, cfg.ns, cfg.durability == DurabilityAsync)
	} else if len(cfg.interruptBefore) > 0 || len(cfg.interruptAfter) > 0 || cfg.resume != nil || cfg.checkpointID != "" {
		return nil, errors.New("graph: breakpoints, Resume and FromCheckpoint need a saver: pass graph.WithSaver")
	}
	return ru, nil
}

func (ru *run) wants(k EventKind) bool { return ru.cfg.events.kinds.has(k) && !ru.stopped.Load() }

// wantsCustom reports whether the stream takes custom events named name.
func (ru *run) wantsCustom(name string) bool {
	return ru.cfg.events.hasCustom(name) && !ru.stopped.Load()
}

// emit delivers an event from the loop goroutine.
func (ru *run) emit(ev Event) {
	if !ru.wants(ev.Kind) || ru.yield == nil {
		return
	}
	if ev.Path == "" {
		ev.Path = ru.path
	}
	if ev.Time.IsZero() {
		ev.Time = ru.now()
	} else if ev.Time.Before(ru.last) {
		// Read on a task's goroutine, it reached the loop after a later
		// one: times never go back along the stream (see Event.Time).
		ev.Time = ru.last
	}
	ru.last = ev.Time
	if !ru.yield(ev, nil) {
		ru.stopped.Store(true)
		ru.cancel()
	}
}

// now reads the clock for an event: the run's start plus the monotonic
// time since then. That is one reading of the monotonic clock where
// time.Now takes two (the wall clock too), and events are timed a few
// times per step.
func (ru *run) now() time.Time {
	if ru.t0.IsZero() {
		return time.Now()
	}
	return ru.t0.Add(time.Since(ru.t0))
}

// elapsed reads the run's monotonic clock: the time since t0, which is
// set whenever events are read. A task's start and end are read so, and
// turned into a time (t0 plus elapsed) only for the event that shows one.
func (ru *run) elapsed() time.Duration { return time.Since(ru.t0) }

// send delivers an event from a task goroutine to the loop.
func (ru *run) send(ctx context.Context, ev Event) {
	select {
	case ru.events <- ev:
	case <-ctx.Done():
	}
}

// errStopped ends a run whose consumer stopped reading.
var errStopped = errors.New("graph: stream consumer stopped")

// execute runs from the channel values initial (nil: none, or the
// thread's checkpoint), with input applied as the first writes.
func (ru *run) execute(ctx context.Context, initial []any, input []Write) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ru.ctx, ru.cancel = ctx, cancel
	defer ru.releaseResults() // once the workers have ended
	defer ru.stopWorkers()
	if ru.p != nil {
		ru.p.start(ctx)
	}
	ru.emit(Event{Kind: EventRunStart})
	res, err := ru.begin(initial, input)
	if err == nil && res == nil {
		res, err = ru.loop()
	}
	if ru.p != nil {
		// A conflict found by an async write explains whatever the run did
		// after it.
		if perr := ru.p.stop(); perr != nil && (err == nil || errors.Is(perr, ErrCheckpointConflict)) {
			err = perr
		}
	}
	if err != nil {
		return Result{}, err
	}
	if ru.p != nil {
		res.Thread, res.Checkpoint = ru.p.thread, ru.p.cp.ID
	}
	if res.Status == StatusInterrupted {
		ru.emit(Event{Kind: EventInterrupt, State: res.State, Data: res.Interrupts})
	}
	ru.emit(Event{Kind: EventRunEnd, State: res.State, Data: res.Status})
	return *res, nil
}

// releaseResults gives the run's result buffer to the next runs, cleared:
// no task of the run is running, and nothing else refers to it.
func (ru *run) releaseResults() {
	if cap(ru.results) == 0 {
		return
	}
	clear(ru.results[:cap(ru.results)])
	b := ru.resultsBuf
	if b == nil {
		b = new([]taskResult)
	}
	*b, ru.results, ru.resultsBuf = ru.results[:0], nil, nil
	ru.r.results.Put(b)
}

func (ru *run) loop() (*Result, error) {
	var last []string
	for steps := 0; ; steps++ {
		tasks := ru.nextTasks()
		if len(tasks) == 0 {
			return &Result{State: State{d: ru.state}, Status: StatusDone}, nil
		}
		if steps >= ru.cfg.stepLimit {
			return nil, &StepLimitError{Limit: ru.cfg.stepLimit, LastNodes: last, Setting: ru.cfg.stepLimitHint}
		}
		res, err := ru.runStep(tasks)
		if err != nil || res != nil {
			return res, err
		}
		if steps+1 == ru.cfg.stepLimit { // for the StepLimitError that may follow
			for _, t := range tasks {
				last = append(last, t.label)
			}
		}
		ru.step++
	}
}

// nextTasks takes the tasks of the next step off the schedule, sorted by
// node name, then send index. Deferred nodes run only when nothing else is
// scheduled.
func (ru *run) nextTasks() []*task {
	s := &ru.sched
	names := s.triggered
	if len(names) == 0 && len(s.packets) == 0 {
		names, s.deferred = s.deferred, nil
	}
	n := len(names) + len(s.packets)
	if n == 0 {
		return nil
	}
	// The step's tasks live in slots kept from step to step: the tasks of
	// the previous step are done with (applied and routed).
	if cap(ru.slab) < n {
		ru.slab = make([]task, n)
		scopes := make([]emitter, n)
		for i := range ru.slab {
			ru.slab[i].scope = &scopes[i]
		}
	}
	slab := ru.slab[:n]
	tasks := slices.Grow(ru.taskBuf[:0], n)
	for i, name := range names {
		n := ru.r.nodes[name]
		t := &slab[i]
		*t = task{node: n, name: name, index: -1, label: name, path: ru.nodePath(n), scope: t.scope}
		tasks = append(tasks, t)
	}
	paths := ru.packetPaths(s.packets)
	var node *nodeSpec // the node of the packet before: packets often share it
	for i, p := range s.packets {
		if node == nil || node.name != p.Node {
			node = ru.r.nodes[p.Node]
		}
		n := len(ru.path) + len(p.Node) + decimalLen(i) + 3
		path := paths[:n]
		paths = paths[n:]
		t := &slab[len(names)+i]
		*t = task{node: node, name: p.Node, index: i, packet: p.Writes,
			label: path[len(ru.path)+1:], path: path, scope: t.scope}
		tasks = append(tasks, t)
	}
	ru.taskBuf = tasks
	s.triggered, s.packets = s.triggered[:0], nil
	if len(tasks) > 1 {
		sortTasks(tasks)
	}
	if ru.records != nil {
		for _, t := range tasks {
			ru.records[t.label].attach(t)
		}
		ru.records = nil
	}
	return tasks
}

// takeCall returns a call context that no call has used, for a task the
// loop starts when calls have contexts of their own (see taskContext).
// They come in chunks: the first as many as the graph has nodes (8 to
// 128: a small subgraph's run takes little), then twice the last, up to
// 256, so a long run allocates once per hundreds of tasks.
func (ru *run) takeCall() *callContext {
	if len(ru.spare) == 0 {
		if ru.spareChunk == 0 {
			ru.spareChunk = min(max(len(ru.r.nodes), 8), 128)
		} else {
			ru.spareChunk = min(2*ru.spareChunk, 256)
		}
		ru.spare = make([]callContext, ru.spareChunk)
	}
	c := &ru.spare[0]
	ru.spare = ru.spare[1:]
	return c
}

// packetPaths returns the event paths of the tasks packets start —
// path/node[i] under the run's path — one after the other in one string:
// one allocation for a step, not one per packet.
func (ru *run) packetPaths(packets []Packet) string {
	if len(packets) == 0 {
		return ""
	}
	size := 0
	for i, p := range packets {
		size += len(ru.path) + len(p.Node) + decimalLen(i) + 3
	}
	var b strings.Builder
	b.Grow(size)
	var digits [20]byte
	for i, p := range packets {
		b.WriteString(ru.path)
		b.WriteByte('/')
		b.WriteString(p.Node)
		b.WriteByte('[')
		b.Write(strconv.AppendInt(digits[:0], int64(i), 10))
		b.WriteByte(']')
	}
	return b.String()
}

// decimalLen is the number of digits of i >= 0 in base 10.
func decimalLen(i int) int {
	n := 1
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}

// nodePath returns the event path of node n in this run.
func (ru *run) nodePath(n *nodeSpec) string {
	if ru.path == ru.r.name {
		return n.path
	}
	p, ok := ru.nodePaths[n.name]
	if !ok {
		if ru.nodePaths == nil {
			ru.nodePaths = make(map[string]string)
		}
		p = ru.path + "/" + n.name
		ru.nodePaths[n.name] = p
	}
	return p
}

func sortTasks(tasks []*task) {
	slices.SortFunc(tasks, func(a, b *task) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return cmp.Compare(a.index, b.index)
	})
}
