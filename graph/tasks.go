package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// This file is the engine's scheduler of tasks inside a node: units of
// work a node starts at run time (the agents of a team, the pages of a
// crawl), which the graph does not know in advance. The graph stays
// static: a task is no node, it has no channels and routes nowhere; it is
// a journaled call with a key, dependencies and a path of its own.

// Task is a unit of work a node starts at run time with Schedule.
//
// Its Key names it among the tasks of its Schedule call, and gives it the
// rest of what it is: its path (the node's path, then the key: its events
// stream under it and its interrupts are answered by it, with ResumeAt),
// its journal scope (the calls it journals with Do are its own), and its
// id (TaskResult.ID), derived from the node's task, the key and the
// checkpoint the step runs after, like an interrupt's id.
type Task[T any] struct {
	// Key is unique among the tasks of one Schedule call and not empty;
	// a '/', '|' or '#' in it shows as '_' in the path.
	Key string
	// Deps are the keys of the tasks of the same call that must be done
	// before it starts.
	Deps []string
	// Run does the work. Its value must survive a JSON round trip: it is
	// journaled, and a task run again (a resume, a retry of the node, a
	// restart after a crash) is not called: its journaled value is
	// returned. An error fails the task (its value still reaches
	// TaskResult.Value); an *InterruptError pauses it (see
	// TaskOptions.Classify).
	Run func(ctx context.Context) (T, error)
	// Fails, when set, says whether a value Run returned without error is
	// a failure all the same: work that was done, and whose outcome is a
	// failure (an agent that could not do its step). The value is
	// journaled — the task is not run again, nor retried — and the task
	// fails with Fails's error whenever its value is read, now or from
	// the journal. nil: the value is a success.
	Fails func(v T) error
	// Done, when set, is called with the task's value once it is done —
	// run now or read back from the journal — before any task that
	// depends on it starts. Done calls come one at a time, on the
	// goroutine that called Schedule: it is where a node folds a task's
	// value into what its dependents read.
	Done func(v T)
	// Labels say where the task may run, to a runner that places tasks
	// on workers (temporalrun's task queues: "tier": "reasoning" sends a
	// team's agent of that tier to the queue of its models); a run in
	// process ignores them. They are not part of the task's id.
	Labels map[string]string
}

// TaskErrorKind says what a task's error does to the tasks of its
// Schedule call.
type TaskErrorKind int

const (
	// TaskFail fails the task: its dependents are skipped and, with
	// TaskOptions.FailFast, the call stops.
	TaskFail TaskErrorKind = iota
	// TaskStop fails the task and stops the call, whatever FailFast says.
	TaskStop
	// TaskPause leaves the task not done without failing it — it waits on
	// a person: its dependents wait, the other tasks go on, and Schedule
	// returns every pause together once nothing else can run.
	TaskPause
)

// TaskOptions configures a Schedule call.
type TaskOptions struct {
	// Limit caps the tasks in flight at once (0: no cap). Ready tasks
	// start in the order they were given.
	Limit int
	// FailFast stops the call at the first failed task; by default a
	// failure skips the task's dependents only.
	FailFast bool
	// Classify says what a task's error does. When nil, an error carrying
	// an *InterruptError pauses the task and any other fails it.
	Classify func(error) TaskErrorKind
	// Retry runs a failed task again (after its delay) while it allows,
	// before its error is classified; RetryOn defaults as for nodes
	// (never an interrupt, a panic, a cancellation or a Permanent error).
	Retry RetryPolicy
}

// TaskSkipped is the status of a task Schedule never started because a
// task it depends on failed or was skipped. The other statuses are those
// of a step's tasks: TaskPending (not run: the call stopped first, or a
// task it depends on paused), TaskDone, TaskFailed and TaskInterrupted
// (paused).
const TaskSkipped TaskStatus = "skipped"

// TaskResult is what became of one task.
type TaskResult[T any] struct {
	Key string
	// ID is the task's id (see Task): stable across the runs of its
	// node's step; outside a running node, the key.
	ID     string
	Status TaskStatus
	// Value is what Run returned (or the journal kept); for a failed
	// task, what Run returned with its error.
	Value T
	// Err is the task's error, when it failed or paused.
	Err error
	// Attempts counts the calls of Run (0: not run, or read back from
	// the journal).
	Attempts int
}

// ErrInvalidTasks: the tasks given to Schedule do not form a graph it can
// run — an empty or repeated key, a dependency on a task that is not
// given, or a cycle.
var ErrInvalidTasks = errors.New("graph: invalid tasks")

// TaskPanicError is what Schedule panics with, once every other task in
// flight has returned, when a task panicked: the panic moves to the
// goroutine that called Schedule, where it can be recovered (in a node,
// the engine turns it into the node's *PanicError).
type TaskPanicError struct {
	Key   string
	Value any
	Stack []byte // the panicking goroutine's
}

func (e *TaskPanicError) Error() string {
	return fmt.Sprintf("graph: task %q panicked: %v\n%s", e.Key, e.Value, e.Stack)
}

// Schedule runs tasks inside a node and returns what became of each, in
// the order given. Each task starts once the tasks it depends on are done;
// the tasks ready together run concurrently, at most opts.Limit at once,
// each on a goroutine of its own (or where the run's TaskExecutor puts
// it). A task's error fails it and skips its dependents, stops the call
// (FailFast, or TaskStop), or pauses it (an interrupt: TaskPause).
//
// Schedule's error is the one that stopped the call — a TaskStop, a
// failure under FailFast, or ctx's error when ctx ended first — or else
// the pauses, joined in the order of their tasks, or else nil: a failure
// that did not stop the call is in the results only. A node returns it as
// it is: the pauses' interrupts become the run's, each at its task's path,
// answered by id (ResumeEach) or by path (ResumeAt); on resume the node
// runs again, Schedule returns the done tasks' values from the journal
// without running them, and the paused tasks run again and find their
// answers.
//
// Inside a running node, every task that succeeds is journaled as one
// entry, under the node's scope (as Do's calls are), before its
// dependents start; a task that failed or paused is recorded too, so
// that State lists the node's tasks (StepTask.Tasks). Outside a running
// node, nothing is journaled and a task's context is ctx's.
//
// Schedule returns once every task it started has returned, so no
// goroutine outlives it; tasks must honour their context for a stopped or
// cancelled call to end promptly. Tasks see the state their node was
// given; they share nothing else unless the node gives it to them.
func Schedule[T any](ctx context.Context, opts TaskOptions, tasks []Task[T]) ([]TaskResult[T], error) {
	index, err := checkTasks(tasks)
	if err != nil {
		return nil, err
	}
	s := &scheduler[T]{tasks: tasks, index: index, opts: opts, em: emitterFrom(ctx),
		results: make([]TaskResult[T], len(tasks)), started: make([]bool, len(tasks)),
		bind: make([]taskBinding, len(tasks))}
	if s.em != nil && !s.em.inNode() {
		s.em = nil
	}
	for i, t := range tasks {
		s.results[i].Key = t.Key
		s.bind[i] = s.binding(t.Key)
		s.results[i].ID = s.bind[i].id
	}
	if s.em != nil && s.em.r.only != nil {
		return s.runOnly(ctx)
	}
	s.loop(ctx)
	if s.panicked != nil {
		panic(s.panicked)
	}
	s.skip()
	return s.results, s.err()
}

// taskBinding is where one task of a Schedule call lives in its node:
// its journal key, its scope and its id.
type taskBinding struct {
	journalKey string // "" outside a node
	segment    string // its path segment below the node's scope
	// scope is its journal scope below the node's: the segment, and for
	// a key the node used before in this run (a Schedule call in a loop)
	// the occurrence ("k#1"), so that the calls of the two never share
	// journal keys.
	scope string
	id    string
}

// binding returns the binding of the task with key, taking the next
// journal key of its name in the node's scope: in task order, on the
// caller's goroutine, so that keys are the same on every run.
func (s *scheduler[T]) binding(key string) taskBinding {
	seg := segmentReplacer.Replace(key)
	if s.em == nil {
		return taskBinding{segment: seg, id: key}
	}
	e := s.em
	jk := e.t.jr.next(e.scope, taskJournalName(key))
	ns, cp := "", ""
	if e.r.p != nil {
		ns, cp = e.r.p.ns, e.r.p.cp.ID
	}
	scope := seg
	if n := jk[strings.LastIndexByte(jk, '#'):]; n != "#0" {
		scope += n
	}
	return taskBinding{journalKey: jk, segment: seg, scope: e.scope + "/" + scope, id: interruptID(ns, cp, e.t.label, jk)}
}

// segmentReplacer turns a key into a path segment: '/' separates
// segments, '|' and '#' separate the parts of a journal key.
var segmentReplacer = strings.NewReplacer("/", "_", "|", "_", "#", "_")

// taskJournalName is the journal name of a task's entry: "task:" and its
// key. statusSuffix marks the record of how a task that is not done ended.
func taskJournalName(key string) string { return "task:" + key }

const statusSuffix = "!status"

// taskStatusRecord is what the journal keeps of a task that is not done.
type taskStatusRecord struct {
	Key    string     `json:"key"`
	Path   string     `json:"path"`
	Status TaskStatus `json:"status"`
	Error  string     `json:"error,omitempty"`
}

// scheduler is one Schedule call: its state is kept by the goroutine
// that called Schedule; tasks report to it over a channel.
type scheduler[T any] struct {
	tasks   []Task[T]
	index   map[string]int
	opts    TaskOptions
	em      *emitter // the node's, nil outside a running node
	bind    []taskBinding
	results []TaskResult[T]
	started []bool

	inFlight int
	cancel   context.CancelFunc
	stopped  error // what stopped the call
	panicked *TaskPanicError
}

// taskOutcome is a task's report.
type taskOutcome[T any] struct {
	i        int
	v        T
	err      error
	attempts int
	panic    *TaskPanicError
}

// loop starts tasks as they become ready until none is left or the call
// stops, then waits for the tasks in flight.
func (s *scheduler[T]) loop(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	s.cancel = cancel
	done := make(chan taskOutcome[T])
	for {
		if err := parent.Err(); err != nil {
			s.stop(err)
		}
		if s.stopped != nil {
			break
		}
		s.startReady(ctx, done)
		if s.inFlight == 0 {
			break
		}
		select {
		case o := <-done:
			s.finish(ctx, o)
		case <-parent.Done():
		}
	}
	for s.inFlight > 0 {
		s.finish(ctx, <-done)
	}
}

// startReady starts the tasks whose dependencies are done, in the order
// given, up to the limit. A task the journal has is done at once.
func (s *scheduler[T]) startReady(ctx context.Context, done chan<- taskOutcome[T]) {
	for again := true; again; {
		again = false
		for i, t := range s.tasks {
			if s.opts.Limit > 0 && s.inFlight >= s.opts.Limit {
				return
			}
			if s.started[i] || !s.ready(t) {
				continue
			}
			s.started[i] = true
			if v, ok, err := s.replay(i); ok || err != nil {
				if err == nil {
					err = s.verdict(i, v)
				}
				s.finish(ctx, taskOutcome[T]{i: i, v: v, err: err})
				again = true // its dependents may be ready now
				continue
			}
			s.inFlight++
			go s.call(ctx, i, done)
		}
	}
}

func (s *scheduler[T]) ready(t Task[T]) bool {
	for _, d := range t.Deps {
		if s.results[s.index[d]].Status != TaskDone {
			return false
		}
	}
	return true
}

// replay returns task i's journaled value, if the journal has one.
func (s *scheduler[T]) replay(i int) (T, bool, error) {
	var v T
	b := s.bind[i]
	if b.journalKey == "" {
		return v, false, nil
	}
	raw, ok := s.em.t.jr.get(b.journalKey)
	if !ok {
		return v, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, Permanent(fmt.Errorf("graph: journaled value of task %q of node %q does not decode as %T: %w", s.tasks[i].Key, s.em.node, v, err))
	}
	return v, true, nil
}

// call runs task i (with its retries) and reports, a panic included.
func (s *scheduler[T]) call(ctx context.Context, i int, done chan<- taskOutcome[T]) {
	o := taskOutcome[T]{i: i}
	defer func() {
		if v := recover(); v != nil {
			o.panic = &TaskPanicError{Key: s.tasks[i].Key, Value: v, Stack: debug.Stack()}
			o.err = o.panic
		}
		done <- o
	}()
	tctx := ctx
	if s.em != nil {
		tctx = s.taskContext(ctx, i)
	}
	for o.attempts = 1; ; o.attempts++ {
		o.v, o.err = s.attempt(tctx, i, o.attempts)
		if o.err == nil || !s.retry(ctx, o.attempts, o.err) {
			break
		}
	}
	if o.err == nil {
		o.err = s.journal(ctx, i, o.v)
	}
	if o.err == nil {
		o.err = s.verdict(i, o.v)
	}
}

// verdict is the failure a done task's value stands for (Task.Fails), or
// nil.
func (s *scheduler[T]) verdict(i int, v T) error {
	if f := s.tasks[i].Fails; f != nil {
		return f(v)
	}
	return nil
}

// taskContext returns the context of task i: ctx, with events under the
// task's path and calls journaled under its scope (see WithScope).
func (s *scheduler[T]) taskContext(ctx context.Context, i int) context.Context {
	e, call := callOf(ctx)
	child := *e
	child.Context, child.call = ctx, call
	child.path = e.path + "/" + s.bind[i].segment
	child.scope = s.bind[i].scope
	child.only = e.r.only != nil
	return &child
}

// attempt calls task i's Run once, through the run's TaskExecutor when it
// has one.
func (s *scheduler[T]) attempt(ctx context.Context, i, attempt int) (T, error) {
	t := s.tasks[i]
	if s.em == nil {
		return t.Run(ctx)
	}
	e := s.em
	e.t.jr.resetScope(s.bind[i].scope) // an attempt's calls count from 0
	x := e.r.cfg.taskExec
	if x == nil {
		return t.Run(ctx)
	}
	var v T
	var runErr error
	call := TaskCall{ID: s.bind[i].id, Key: t.Key, Node: e.node, Label: e.t.label, Path: e.path + "/" + s.bind[i].segment,
		Step: e.step, Thread: e.r.cfg.thread, Attempt: attempt, Labels: t.Labels}
	if e.r.p != nil {
		call.Checkpoint = e.r.p.cp.ID
	}
	raw, err := x.ExecuteTask(ctx, call, func(ctx context.Context) (json.RawMessage, error) {
		v, runErr = t.Run(ctx)
		if runErr != nil {
			return nil, runErr
		}
		return json.Marshal(v)
	})
	if runErr != nil || err != nil {
		return v, cmpErr(err, runErr)
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, Permanent(fmt.Errorf("graph: value of task %q does not decode as %T: %w", t.Key, out, err))
	}
	return out, nil
}

// cmpErr is the executor's error, or else Run's.
func cmpErr(execErr, runErr error) error {
	if execErr != nil {
		return execErr
	}
	return runErr
}

// retry reports whether a task should run again after attempt failed
// with err, having waited for the policy's delay.
func (s *scheduler[T]) retry(ctx context.Context, attempt int, err error) bool {
	p := s.opts.Retry
	if attempt >= p.MaxAttempts || len(interruptsOf(err)) > 0 || ctx.Err() != nil || !retryable(p, err) {
		return false
	}
	timer := time.NewTimer(p.delay(attempt))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// journal records task i's value, inside a running node: written to the
// saver before its dependents start, as Do writes a call's.
func (s *scheduler[T]) journal(ctx context.Context, i int, v T) error {
	b := s.bind[i]
	if b.journalKey == "" {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return Permanent(fmt.Errorf("graph: journal entry of task %q of node %q: encode %T: %w", s.tasks[i].Key, s.em.node, v, err))
	}
	if err := s.putRecord(ctx, b.journalKey, raw); err != nil {
		return fmt.Errorf("graph: journal entry of task %q of node %q: %w", s.tasks[i].Key, s.em.node, err)
	}
	s.em.t.jr.put(b.journalKey, raw)
	return nil
}

// putRecord writes a journal record of the node's task, with a saver.
func (s *scheduler[T]) putRecord(ctx context.Context, key string, raw json.RawMessage) error {
	p := s.em.r.p
	if p == nil {
		return nil
	}
	return p.putRecordsNow(ctx, TaskRecord{TaskID: s.em.t.label, Kind: recJournal, Key: key, Data: raw})
}

// finish records a task's outcome and stops the call if it must.
func (s *scheduler[T]) finish(ctx context.Context, o taskOutcome[T]) {
	if o.attempts > 0 {
		s.inFlight--
	}
	res := &s.results[o.i]
	res.Value, res.Attempts = o.v, o.attempts
	if o.panic != nil && s.panicked == nil {
		s.panicked = o.panic
		s.stop(o.panic)
	}
	if o.err == nil {
		res.Status = TaskDone
		if d := s.tasks[o.i].Done; d != nil {
			d(o.v)
		}
		return
	}
	res.Err = o.err
	kind := s.classify(o)
	if kind == TaskPause {
		res.Status = TaskInterrupted
	} else {
		res.Status = TaskFailed
		if kind == TaskStop || s.opts.FailFast {
			s.stop(o.err)
		}
	}
	s.recordStatus(ctx, o.i)
}

func (s *scheduler[T]) classify(o taskOutcome[T]) TaskErrorKind {
	switch {
	case o.panic != nil:
		return TaskFail
	case s.opts.Classify != nil:
		return s.opts.Classify(o.err)
	case len(interruptsOf(o.err)) > 0:
		return TaskPause
	}
	return TaskFail
}

// recordStatus keeps how a task that is not done ended, for State; a
// failure to write it loses nothing the run needs, so it is dropped.
func (s *scheduler[T]) recordStatus(ctx context.Context, i int) {
	b := s.bind[i]
	if b.journalKey == "" || s.em.r.p == nil || s.em.r.only != nil {
		return
	}
	res := s.results[i]
	rec := taskStatusRecord{Key: res.Key, Path: s.em.path + "/" + b.segment, Status: res.Status}
	if res.Status == TaskFailed {
		rec.Error = res.Err.Error()
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return
	}
	_ = s.putRecord(context.WithoutCancel(ctx), b.journalKey+statusSuffix, raw)
}

// runOnly is Schedule in a run of RunScheduled: the tasks the journal has
// are done (their Done hooks called, in dependency order); the one task
// the run is for, if it is among these, runs once, here, and Schedule
// returns errScheduledElsewhere, which ends the node. A call without it
// returns as if its other tasks had not run (the node goes on to its next
// call).
func (s *scheduler[T]) runOnly(ctx context.Context) ([]TaskResult[T], error) {
	only := s.em.r.only
	for again := true; again; {
		again = false
		for i, t := range s.tasks {
			if s.started[i] || !s.ready(t) {
				continue
			}
			v, ok, err := s.replay(i)
			if !ok && err == nil {
				continue
			}
			if err == nil {
				err = s.verdict(i, v)
			}
			s.started[i], again = true, true
			s.finish(ctx, taskOutcome[T]{i: i, v: v, err: err})
		}
	}
	target := slices.IndexFunc(s.bind, func(b taskBinding) bool { return b.id == only.id })
	if target < 0 {
		s.skip()
		return s.results, s.err()
	}
	only.ran = true
	b := s.bind[target]
	switch raw, ok := s.em.t.jr.get(b.journalKey); {
	case ok:
		only.raw = raw // done already
	case !s.ready(s.tasks[target]):
		only.err = fmt.Errorf("graph: task %q of node %q cannot run: the tasks it depends on are not done", s.tasks[target].Key, s.em.node)
	default:
		only.raw, only.err = s.runHere(ctx, target)
	}
	s.skip()
	return s.results, errScheduledElsewhere
}

// runHere runs one attempt of task i on this goroutine and journals its
// value, for RunScheduled; a panic becomes its error.
func (s *scheduler[T]) runHere(ctx context.Context, i int) (raw json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &TaskPanicError{Key: s.tasks[i].Key, Value: v, Stack: debug.Stack()}
		}
	}()
	v, err := s.attempt(s.taskContext(ctx, i), i, 1)
	if err != nil {
		return nil, err
	}
	if err := s.journal(ctx, i, v); err != nil {
		return nil, err
	}
	raw, _ = s.em.t.jr.get(s.bind[i].journalKey)
	return raw, nil
}

// stop ends the call with err, the first time: no task starts any more
// and those in flight see their context cancelled.
func (s *scheduler[T]) stop(err error) {
	if s.stopped == nil {
		s.stopped = err
		s.cancel()
	}
}

// skip marks the tasks that never started and depend, directly or not, on
// a task that failed.
func (s *scheduler[T]) skip() {
	for i := range s.results {
		if s.results[i].Status == "" {
			s.results[i].Status = TaskPending
		}
	}
	for changed := true; changed; {
		changed = false
		for i, t := range s.tasks {
			if s.results[i].Status != TaskPending {
				continue
			}
			for _, d := range t.Deps {
				if st := s.results[s.index[d]].Status; st == TaskFailed || st == TaskSkipped {
					s.results[i].Status, changed = TaskSkipped, true
					break
				}
			}
		}
	}
}

// err is Schedule's error: what stopped the call, else the pauses.
func (s *scheduler[T]) err() error {
	if s.stopped != nil {
		return s.stopped
	}
	var pauses []error
	for _, res := range s.results {
		if res.Status == TaskInterrupted {
			pauses = append(pauses, res.Err)
		}
	}
	return errors.Join(pauses...)
}

// checkTasks indexes the tasks by key and reports the first reason they
// do not form a graph Schedule can run.
func checkTasks[T any](tasks []Task[T]) (map[string]int, error) {
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		if t.Key == "" {
			return nil, fmt.Errorf("%w: task %d has no key", ErrInvalidTasks, i)
		}
		if _, dup := index[t.Key]; dup {
			return nil, fmt.Errorf("%w: task %q is given twice", ErrInvalidTasks, t.Key)
		}
		index[t.Key] = i
	}
	for _, t := range tasks {
		for _, d := range t.Deps {
			if _, ok := index[d]; !ok {
				return nil, fmt.Errorf("%w: task %q depends on %q, which is not a task", ErrInvalidTasks, t.Key, d)
			}
		}
	}
	if c := taskCycle(tasks, index); c != nil {
		return nil, fmt.Errorf("%w: the tasks depend on each other in a cycle: %s", ErrInvalidTasks, strings.Join(c, " -> "))
	}
	return index, nil
}

// taskCycle returns the keys of a dependency cycle, the first key
// repeated at the end, or nil.
func taskCycle[T any](tasks []Task[T], index map[string]int) []string {
	const (
		unseen = iota
		open
		closed
	)
	state := make([]int, len(tasks))
	var path []string
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = open
		path = append(path, tasks[i].Key)
		for _, d := range tasks[i].Deps {
			j := index[d]
			switch state[j] {
			case open:
				at := slices.Index(path, d)
				return append(slices.Clone(path[at:]), d)
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = closed
		return nil
	}
	for i := range tasks {
		if state[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}
