package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"
)

// runStep runs one superstep: every task concurrently on the state as of
// the step's start, then their writes in task order, then routing and the
// checkpoint. It returns a result when the run pauses.
func (ru *run) runStep(tasks []*task) (*Result, error) {
	if res := ru.breakBefore(tasks); res != nil {
		return res, ru.saveBreakpoint(res.Interrupts[0])
	}
	// The step and the tasks it starts at once start at one instant: one
	// reading of the clock times their events.
	var start time.Time
	if ru.wants(EventStepStart) || ru.wants(EventNodeStart) {
		start = ru.now()
	}
	if ru.wants(EventStepStart) {
		ru.emit(Event{Kind: EventStepStart, Step: ru.step, Data: stepNames(tasks), Time: start})
	}
	if err := ru.prepare(tasks); err != nil {
		return nil, err
	}
	results := ru.runTasks(tasks, start)
	if ru.stopped.Load() {
		return nil, errStopped
	}
	if err := ru.ctx.Err(); err != nil {
		return nil, fmt.Errorf("graph: run %q cancelled in step %d: %w", ru.path, ru.step, err)
	}
	if err := ru.failed(tasks, results); err != nil {
		return nil, err
	}
	if res, err := ru.interrupted(tasks, results); res != nil || err != nil {
		return res, err
	}
	if err := ru.apply(tasks, results); err != nil {
		return nil, err
	}
	if err := ru.route(tasks, results); err != nil {
		return nil, err
	}
	if ru.p != nil {
		writers := make([]string, len(tasks))
		for i, t := range tasks {
			writers[i] = t.label
		}
		if err := ru.saveCheckpoint(SourceLoop, writers); err != nil {
			return nil, err
		}
	}
	if ru.wants(EventUpdate) {
		for i, t := range tasks {
			if len(results[i].cmd.Update) > 0 {
				ru.emit(Event{Kind: EventUpdate, Path: t.path, Node: t.name, Step: ru.step, Writes: results[i].cmd.Update})
			}
		}
	}
	var now time.Time // one reading of the clock for both events
	if ru.wants(EventValues) || ru.wants(EventStepEnd) {
		now = ru.now()
	}
	ru.emit(Event{Kind: EventValues, Step: ru.step, State: State{d: ru.state}, Time: now})
	ru.emit(Event{Kind: EventStepEnd, Step: ru.step, Time: now})
	if res := ru.breakAfter(tasks); res != nil {
		return res, ru.saveBreakpoint(res.Interrupts[0])
	}
	return nil, nil
}

// stepNames is the Data of a step's EventStepStart: its tasks' labels. A
// step of one task started by an edge shares its node's list.
func stepNames(tasks []*task) any {
	if len(tasks) == 1 && tasks[0].index < 0 && tasks[0].node.alone != nil {
		return tasks[0].node.alone
	}
	names := make([]string, len(tasks))
	for i, t := range tasks {
		names[i] = t.label
	}
	return names
}

// failed returns the first task failure of the step. With a saver, it
// records every failure and every interrupt of the step, so State shows
// how each task ended; the tasks that finished keep their results, and on
// continue the step runs again without the finished or waiting tasks.
func (ru *run) failed(tasks []*task, results []taskResult) error {
	i := slices.IndexFunc(results, func(r taskResult) bool { return r.err != nil })
	if i < 0 {
		return nil
	}
	first := results[i].err
	if ru.p == nil {
		return first
	}
	_, recs, err := ru.interruptRecords(tasks, results)
	if err != nil {
		return errors.Join(first, err)
	}
	for i, t := range tasks {
		if err := results[i].err; err != nil {
			data, _ := json.Marshal(err.Error()) // a string always encodes
			recs = append(recs, TaskRecord{TaskID: t.label, Kind: recError, Data: data})
		}
	}
	if err := ru.p.putRecords(ru.ctx, recs...); err != nil {
		return errors.Join(first, err)
	}
	return first
}

// interrupted pauses the run when a task of the step is waiting on an
// interrupt: the tasks that finished keep their results (as records), and
// the step runs again on resume.
func (ru *run) interrupted(tasks []*task, results []taskResult) (*Result, error) {
	all, recs, err := ru.interruptRecords(tasks, results)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	if ru.p == nil {
		t := tasks[slices.IndexFunc(results, func(r taskResult) bool { return len(r.interrupts) > 0 })]
		return nil, ru.nodeErr(t, 1, errors.New("graph.Interrupt needs a saver to pause the run: compile or run with graph.WithSaver and graph.Thread"))
	}
	if err := ru.p.putRecords(ru.ctx, recs...); err != nil {
		return nil, err
	}
	return &Result{State: State{d: ru.state}, Status: StatusInterrupted, Interrupts: all}, nil
}

// interruptRecords collects the step's interrupts and, with a saver, the
// records that keep them.
func (ru *run) interruptRecords(tasks []*task, results []taskResult) ([]InterruptInfo, []TaskRecord, error) {
	var all []InterruptInfo
	var recs []TaskRecord
	for i, t := range tasks {
		ins := results[i].interrupts
		if len(ins) == 0 {
			continue
		}
		all = append(all, ins...)
		if ru.p == nil {
			continue
		}
		data, err := json.Marshal(ins)
		if err != nil {
			return nil, nil, ru.nodeErr(t, results[i].attempts, fmt.Errorf("encode interrupt payload: %w", err))
		}
		recs = append(recs, TaskRecord{TaskID: t.label, Kind: recInterrupt, Data: data})
	}
	return all, recs, nil
}

// prepare builds the overlays of packet tasks.
func (ru *run) prepare(tasks []*task) error {
	base := State{d: ru.state}
	// One allocation holds every overlay of the step; each is clipped to
	// its packet's size (a packet writes at most that many channels), so
	// none grows into another's.
	total := 0
	for _, t := range tasks {
		total += len(t.packet)
	}
	if total == 0 {
		return nil
	}
	entries := make(overlay, total)
	for _, t := range tasks {
		if len(t.packet) == 0 {
			continue
		}
		t.overlay, entries = entries[:0:len(t.packet)], entries[len(t.packet):]
		for _, w := range t.packet {
			ch, _, ok := ru.r.layout.channelOf(w)
			if !ok { // checked when the packet was sent (checkCommand)
				return ru.nodeErr(t, 1, fmt.Errorf("%w %q in a packet for %q", ErrUnknownChannel, w.Channel(), t.name))
			}
			v, err := ch.convert(w.value)
			if err != nil {
				return ru.nodeErr(t, 1, err)
			}
			// Each write folds onto the overlay so far: the reducers are
			// folds, so this equals one application per channel.
			if ch.Reducer() == "last" {
				t.overlay.set(ch.Name(), v)
				continue
			}
			cur, has := t.overlay.get(ch.Name())
			if !has {
				if cur, has = base.lookup(ch.Name()); has {
					cur = ch.view(cur) // the step's value is shared by every task
				}
			}
			t.overlay.set(ch.Name(), ch.reduce(cur, has, []any{v}))
		}
	}
	return nil
}

// runTasks runs tasks concurrently (bounded by MaxConcurrency), delivering
// their events as they come, and returns their results in task order. It
// returns only when every task goroutine has ended. Tasks that finished or
// are still waiting on an interrupt in an earlier run of this step are not
// run again. start, if set, is the time of the step's start, which the
// tasks started with it share; others read the clock when they start.
func (ru *run) runTasks(tasks []*task, start time.Time) []taskResult {
	ru.results = slices.Grow(ru.results[:0], len(tasks))[:len(tasks)]
	results := ru.results
	clear(results)
	todo := slices.Grow(ru.todo[:0], len(tasks))
	for i, t := range tasks {
		switch {
		case t.done != nil:
			results[i] = *t.done
		case len(t.waiting) > 0:
			results[i] = taskResult{interrupts: t.waiting}
		default:
			todo = append(todo, i)
		}
	}
	ru.todo = todo
	// Results are stored as they come when a sibling may still fail or
	// pause; a lone task's result goes straight into the checkpoint.
	keep := ru.p != nil && (len(tasks) > 1 || ru.partial) && ru.only == nil
	// Nobody reads events, so nothing from inside the node needs the loop
	// to forward it: this goroutine runs the task, or takes part in a wide
	// step — except in RunTasks (see there).
	if ru.cfg.events.kinds == 0 && !ru.partial {
		if len(todo) == 1 {
			ru.execTask(tasks[todo[0]], keep, nil, &results[todo[0]])
		} else {
			ru.runShared(tasks, todo, results, keep)
		}
		return results
	}
	limit := ru.cfg.maxConcurrency
	if limit <= 0 || limit > len(todo) {
		limit = len(todo)
	}
	next, running := 0, 0
	startNext := func() {
		i := todo[next]
		t := tasks[i]
		next++
		ru.emit(Event{Kind: EventNodeStart, Path: t.path, Node: t.name, Step: ru.step, Attempt: 1, Time: start})
		if ru.stopped.Load() {
			// The consumer broke out of its loop at that event: the run
			// is cancelled, and the node is not called.
			results[i].err = ru.ctx.Err()
			return
		}
		running++
		j := job{results: results, i: i, t: t, keep: keep}
		if ru.callScopes {
			j.call = ru.takeCall()
		}
		ru.startTask(j)
	}
	for running < limit && next < len(todo) {
		startNext()
	}
	start = time.Time{} // tasks started later read the clock
	for running > 0 {
		ev := <-ru.events
		if ev.Kind != taskEnded {
			if ev.Kind != delivered {
				ru.emit(ev)
			}
			continue
		}
		i := ru.taskDone(ev)
		running--
		t, res := tasks[i], &results[i]
		ru.emit(Event{Kind: EventNodeEnd, Path: t.path, Node: t.name, Step: ru.step,
			Attempt: res.attempts, Duration: res.dur, Err: res.err, Time: ru.endTime(res)})
		if next < len(todo) && ru.ctx.Err() == nil {
			startNext()
		}
	}
	for _, i := range todo[next:] {
		results[i].err = ru.ctx.Err()
	}
	return results
}

// endTime is the time of EventNodeEnd for res: when the task ended, or
// zero (now) for one whose end was not read (its node ended the worker
// with runtime.Goexit).
func (ru *run) endTime(res *taskResult) time.Time {
	if res.end == 0 {
		return time.Time{}
	}
	return ru.t0.Add(res.end)
}

// runOne runs job j on a worker and reports it done.
func (ru *run) runOne(j *job) {
	ru.execTask(j.t, j.keep, j.call, &j.results[j.i])
	ru.events <- Event{Kind: taskEnded, Step: j.i}
}

// execTask runs one task with its node's retry policy, timeout and error
// handler, into res; with keep, a successful result is stored at once. call,
// if set, is the context of the node's first call (see taskContext).
// Results are filled in place, not returned, to keep the frames of a
// worker's stack small: a worker's stack starts small, and the node's own
// calls come on top of these.
func (ru *run) execTask(t *task, keep bool, call *callContext, res *taskResult) {
	*res = taskResult{}
	// The duration is for EventNodeEnd: without a reader, the clock is
	// not read.
	timed := ru.cfg.events.kinds.has(EventNodeEnd)
	var start time.Duration
	if timed {
		start = ru.elapsed()
	}
	ru.tryTask(t, call, res)
	if timed {
		res.end = ru.elapsed()
		res.dur = res.end - start
	}
	if keep && res.err == nil && len(res.interrupts) == 0 {
		ru.keepResult(t, res)
	}
}

// keepResult stores the result of a task that finished while its siblings
// may still fail or pause.
func (ru *run) keepResult(t *task, res *taskResult) {
	data, err := ru.r.encodeResult(*res)
	if err == nil {
		err = ru.p.putRecords(ru.ctx, TaskRecord{TaskID: t.label, Kind: recResult, Data: data})
	}
	if err != nil {
		res.err = ru.nodeErr(t, res.attempts, err)
	}
}

func (ru *run) tryTask(t *task, call *callContext, res *taskResult) {
	s := State{d: ru.state, overlay: t.overlay}
	for attempt := 1; ; attempt++ {
		res.attempts = attempt
		err := ru.attempt(t, s, call, &res.cmd)
		call = nil // a retry gets another
		if err == nil {
			if err := ru.r.checkCommand(t.node, res.cmd); err != nil {
				// A command the graph cannot follow is a bug in the node
				// or the graph: retrying or handling it would not help.
				res.cmd = Command{}
				res.err = ru.nodeErr(t, attempt, err)
			}
			return
		}
		res.cmd = Command{}
		if !ru.failedAttempt(t, s, attempt, err, res) {
			return
		}
	}
}

// failedAttempt decides what follows a failed attempt: it reports true
// when the node should run again, or else fills res with how the task
// ended (interrupted, failed, or handled by the node's error handler).
func (ru *run) failedAttempt(t *task, s State, attempt int, err error, res *taskResult) (retry bool) {
	n := t.node
	if errors.Is(err, errScheduledElsewhere) {
		res.err = err // RunScheduled's node: neither retried nor handled
		return false
	}
	if ins := interruptsOf(err); len(ins) > 0 {
		res.interrupts = ins
		return false
	}
	if errors.Is(err, ErrCheckpointConflict) {
		// Another writer has the thread (a subgraph's checkpoint or
		// an async write was refused): no retry or handler can help.
		res.err = ru.nodeErr(t, attempt, err)
		return false
	}
	if ru.ctx.Err() != nil {
		res.err = ru.ctx.Err()
		return false
	}
	if attempt < n.retry.MaxAttempts && retryable(n.retry, err) {
		timer := time.NewTimer(n.retry.delay(attempt))
		select {
		case <-timer.C:
			return true
		case <-ru.ctx.Done():
			timer.Stop()
			res.err = ru.ctx.Err()
			return false
		}
	}
	nerr := ru.nodeErr(t, attempt, err)
	if n.onError != nil {
		cmd, herr := ru.handle(t, s, nerr)
		if herr == nil {
			herr = ru.r.checkCommand(n, cmd)
		}
		if herr == nil {
			res.cmd, res.handled = cmd, true
			return false
		}
		nerr = ru.nodeErr(t, attempt, fmt.Errorf("error handler failed: %w (node error: %w)", herr, err))
	}
	res.err = nerr
	return false
}

func (ru *run) nodeErr(t *task, attempt int, err error) *NodeError {
	var ne *NodeError
	if errors.As(err, &ne) && ne.Path == t.path {
		return ne
	}
	return &NodeError{Node: t.label, Path: t.path, Step: ru.step, Attempt: attempt, Err: err}
}

// taskContext returns the context a call of t's node (an attempt, or its
// error handler) runs with: ctx, carrying the task's emitter, and the
// call to end when it returns (nil: nothing to end).
//
// The emitter is the task slot's, kept from step to step (see nextTasks),
// so that making it allocates nothing after the first step: only path,
// node and step are written for each task; the context and the run, once.
// A goroutine the node left running may keep the context after the call
// returned and use it while later tasks run. Where nobody takes custom
// events, the slot's emitter is the context: a late Emit reads only what
// is written once and finds that nobody takes its event, and a goroutine
// reading Done or Err sees no writes. When the stream takes custom events,
// each call gets a context of its own — c, which the loop took for the
// task's first call (takeCall), or a new one: an Emit with it once the
// call returned is known for what it is and dropped, never taken for an
// event of the task running then. So does a call with a context of its
// own (a node's timeout).
//
// taskContext is not inlined: the emitter it builds stays off the frame
// of attempt, which is on the stack while the node runs.
//
//go:noinline
func (ru *run) taskContext(ctx context.Context, t *task, c *callContext) (context.Context, *callContext) {
	if t.scope == nil {
		t.scope = new(emitter)
	}
	em := t.scope
	if em.r == nil {
		em.Context, em.r, em.t = ru.ctx, ru, t
	}
	em.path, em.node, em.step = t.path, t.name, ru.step
	switch {
	case ctx != ru.ctx:
		tc := &timedCall{Context: ctx}
		tc.call.em = em
		return tc, &tc.call
	case !ru.callScopes:
		return em, nil
	}
	if c == nil { // a retry, or the error handler
		c = new(callContext)
	}
	c.em = em
	return c, c
}

// attempt calls the node once, into cmd, turning a panic into a
// *PanicError and an overrun of the node's timeout into ErrNodeTimeout.
// The command is written in place rather than returned, to keep the frames
// under the node small.
func (ru *run) attempt(t *task, s State, call *callContext, cmd *Command) error {
	if t.node.timeout > 0 {
		return ru.attemptTimed(t, s, call, cmd)
	}
	t.jr.reset()
	ctx, c := ru.taskContext(ru.ctx, t, call)
	return ru.call(ctx, c, t, s, cmd)
}

// attemptTimed is attempt for a node with a timeout.
func (ru *run) attemptTimed(t *task, s State, call *callContext, cmd *Command) error {
	ctx, cancel := context.WithTimeout(ru.ctx, t.node.timeout)
	defer cancel()
	t.jr.reset()
	nctx, c := ru.taskContext(ctx, t, call)
	err := ru.call(nctx, c, t, s, cmd)
	if err != nil && ctx.Err() == context.DeadlineExceeded && ru.ctx.Err() == nil {
		err = fmt.Errorf("%w after %v: %w", ErrNodeTimeout, t.node.timeout, err)
	}
	return err
}

// call runs the node's function (or subgraph) once, into cmd, turning a
// panic into a *PanicError. When it returns (or its goroutine ends), it
// ends c.
func (ru *run) call(ctx context.Context, c *callContext, t *task, s State, cmd *Command) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: string(debug.Stack())}
		}
		c.end()
	}()
	fn := t.node.fn
	if t.node.sub != nil {
		fn = t.node.sub.runNested
	}
	*cmd, err = fn(ctx, s)
	return err
}

// handle runs the node's error handler, recovering a panic.
func (ru *run) handle(t *task, s State, nerr error) (cmd Command, err error) {
	ctx, c := ru.taskContext(ru.ctx, t, nil)
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: string(debug.Stack())}
		}
		c.end()
	}()
	return t.node.onError(ctx, s, nerr)
}

// Permanent marks err as not worth retrying under the default RetryOn.
func Permanent(err error) error { return &permanentError{err} }

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent: what a runner that carries a task's error to another process
// keeps, so the task is not retried there either.
func IsPermanent(err error) bool {
	var perm *permanentError
	return errors.As(err, &perm)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func retryable(p RetryPolicy, err error) bool {
	if p.RetryOn != nil {
		return p.RetryOn(err)
	}
	var pe *PanicError
	var perm *permanentError
	switch {
	case errors.As(err, &pe), errors.As(err, &perm), errors.Is(err, context.Canceled):
		return false
	}
	return true
}
