package graph

import (
	"cmp"
	"context"
	"errors"
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
	Interrupts []Interrupt
	// Thread and Checkpoint locate the run's last checkpoint (empty
	// without a saver).
	Thread     string
	Checkpoint string
}

// Input returns the writes that start a run. Pass nil to Invoke or Stream
// to continue a thread without new input.
func Input(writes ...Write) []Write { return writes }

// Invoke runs the graph to the end (or to an interrupt) and returns the
// final state. It is Stream without events.
func (r *Runnable) Invoke(ctx context.Context, input []Write, opts ...Option) (Result, error) {
	cfg := r.defaults
	cfg.events = 0
	cfg.apply(opts)
	if !cfg.eventsSet {
		cfg.events = 0
	}
	ru := r.newRun(cfg, r.name, nil)
	return ru.execute(ctx, input)
}

// Stream runs the graph and yields its events as they happen. A failure is
// yielded last, as an EventError event with the error. Breaking out of the
// loop cancels the run; Stream returns only when every goroutine it started
// has ended.
func (r *Runnable) Stream(ctx context.Context, input []Write, opts ...Option) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		cfg := r.defaults
		cfg.events = AllEvents
		cfg.apply(opts)
		ru := r.newRun(cfg, r.name, func(ev Event) bool { return yield(ev, nil) })
		if _, err := ru.execute(ctx, input); err != nil && !ru.stopped.Load() {
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
	// yield receives events; it returns false to stop the run.
	yield func(Event) bool
	// stopped is set when yield returned false; task goroutines read it.
	stopped atomic.Bool
	// events carries events from task goroutines to the loop. It is
	// unbuffered, so a task's events arrive before its result on done.
	events chan Event
	// done carries the index of a finished task, whose result is in
	// results.
	done chan int

	state *stateData
	step  int
	sched schedule
	// record, in a subgraph's run, receives the writes applied to
	// channels it shares with its parent.
	record func(Write)

	nodePaths map[string]string
	// per-step buffers, reused
	pend    [][]any
	pendBy  [][]string
	results []taskResult
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

type task struct {
	node  *nodeSpec
	name  string
	index int // send index; -1 for a task started by an edge
	// overlay holds a packet's writes, reduced onto the step's state.
	overlay map[string]any
	packet  []Write
	label   string
	path    string
}

type taskResult struct {
	cmd      Command
	err      error
	attempts int
	dur      time.Duration
	handled  bool // the node failed and its error handler supplied cmd
}

func (r *Runnable) newRun(cfg config, path string, yield func(Event) bool) *run {
	ru := &run{
		r:         r,
		cfg:       cfg,
		path:      path,
		yield:     yield,
		events:    make(chan Event),
		done:      make(chan int, 16),
		nodePaths: make(map[string]string, len(r.order)),
		pend:      make([][]any, len(r.layout.channels)),
		pendBy:    make([][]string, len(r.layout.channels)),
	}
	if ru.cfg.stepLimit <= 0 {
		ru.cfg.stepLimit = defaultStepLimit
	}
	for _, n := range r.order {
		ru.nodePaths[n] = path + "/" + n
	}
	ru.sched.seen = make([][]bool, len(r.joins))
	for i, j := range r.joins {
		ru.sched.seen[i] = make([]bool, len(j.sources))
	}
	return ru
}

func (ru *run) wants(k EventKind) bool { return ru.cfg.events.Has(k) && !ru.stopped.Load() }

// emit delivers an event from the loop goroutine.
func (ru *run) emit(ev Event) {
	if !ru.wants(ev.Kind) || ru.yield == nil {
		return
	}
	if ev.Path == "" {
		ev.Path = ru.path
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if !ru.yield(ev) {
		ru.stopped.Store(true)
		ru.cancel()
	}
}

// send delivers an event from a task goroutine to the loop.
func (ru *run) send(ctx context.Context, ev Event) {
	select {
	case ru.events <- ev:
	case <-ctx.Done():
	}
}

// errStopped ends a run whose consumer stopped reading.
var errStopped = errors.New("graph: stream consumer stopped")

func (ru *run) execute(ctx context.Context, input []Write) (Result, error) {
	return ru.executeFrom(ctx, nil, input)
}

// executeFrom runs from the channel values initial (nil: none), with input
// applied as the first writes.
func (ru *run) executeFrom(ctx context.Context, initial []any, input []Write) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ru.ctx, ru.cancel = ctx, cancel
	ru.emit(Event{Kind: EventRunStart})
	if err := ru.begin(initial, input); err != nil {
		return Result{}, err
	}
	res, err := ru.loop()
	if err != nil {
		return Result{}, err
	}
	ru.emit(Event{Kind: EventRunEnd, State: res.State})
	return res, nil
}

// begin sets up the state: the input's writes go through the reducers, as
// if written by a node called Start, and Start's edges are followed.
func (ru *run) begin(initial []any, input []Write) error {
	if initial == nil {
		initial = make([]any, len(ru.r.layout.channels))
	}
	ru.state = &stateData{layout: ru.r.layout, vals: initial}
	start := &task{name: Start, index: -1, label: Start, path: ru.path}
	tasks := []*task{start}
	ru.results = append(ru.results[:0], taskResult{cmd: Update(input...)})
	if err := ru.apply(tasks, ru.results); err != nil {
		return err
	}
	return ru.route(tasks, ru.results)
}

func (ru *run) loop() (Result, error) {
	var last []string
	for steps := 0; ; steps++ {
		tasks := ru.nextTasks()
		if len(tasks) == 0 {
			return Result{State: State{d: ru.state}, Status: StatusDone}, nil
		}
		if steps >= ru.cfg.stepLimit {
			return Result{}, &StepLimitError{Limit: ru.cfg.stepLimit, LastNodes: last}
		}
		if err := ru.runStep(tasks); err != nil {
			return Result{}, err
		}
		last = last[:0]
		for _, t := range tasks {
			last = append(last, t.label)
		}
		ru.step++
	}
}

// nextTasks takes the tasks of the next step off the schedule, sorted by
// node name, then send index. Deferred nodes run only when nothing else is
// scheduled.
func (ru *run) nextTasks() []*task {
	s := &ru.sched
	var tasks []*task
	names := s.triggered
	if len(names) == 0 && len(s.packets) == 0 {
		names, s.deferred = s.deferred, nil
	}
	for _, name := range names {
		n := ru.r.nodes[name]
		tasks = append(tasks, &task{node: n, name: name, index: -1, label: name, path: ru.nodePaths[name]})
	}
	for i, p := range s.packets {
		label := p.Node + "[" + strconv.Itoa(i) + "]"
		tasks = append(tasks, &task{
			node: ru.r.nodes[p.Node], name: p.Node, index: i, packet: p.Writes,
			label: label, path: ru.path + "/" + label,
		})
	}
	s.triggered, s.packets = s.triggered[:0], nil
	sortTasks(tasks)
	return tasks
}

func sortTasks(tasks []*task) {
	slices.SortFunc(tasks, func(a, b *task) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return cmp.Compare(a.index, b.index)
	})
}
