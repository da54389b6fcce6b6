package graph

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"
)

// runStep runs one superstep: every task concurrently on the state as of
// the step's start, then their writes in task order, then routing.
func (ru *run) runStep(tasks []*task) error {
	if ru.wants(EventStepStart) {
		names := make([]string, len(tasks))
		for i, t := range tasks {
			names[i] = t.label
		}
		ru.emit(Event{Kind: EventStepStart, Step: ru.step, Data: names})
	}
	if err := ru.prepare(tasks); err != nil {
		return err
	}
	results := ru.runTasks(tasks)
	if ru.stopped.Load() {
		return errStopped
	}
	if err := ru.ctx.Err(); err != nil {
		return fmt.Errorf("graph: run %q cancelled in step %d: %w", ru.path, ru.step, err)
	}
	for i := range results {
		if results[i].err != nil {
			return results[i].err
		}
	}
	if err := ru.apply(tasks, results); err != nil {
		return err
	}
	if err := ru.route(tasks, results); err != nil {
		return err
	}
	if ru.wants(EventUpdate) {
		for i, t := range tasks {
			if len(results[i].cmd.Update) > 0 {
				ru.emit(Event{Kind: EventUpdate, Path: t.path, Node: t.name, Step: ru.step, Writes: results[i].cmd.Update})
			}
		}
	}
	ru.emit(Event{Kind: EventValues, Step: ru.step, State: State{d: ru.state}})
	ru.emit(Event{Kind: EventStepEnd, Step: ru.step})
	return nil
}

// prepare checks each task's node and builds the overlays of packet tasks.
func (ru *run) prepare(tasks []*task) error {
	base := State{d: ru.state}
	for _, t := range tasks {
		if len(t.packet) == 0 {
			continue
		}
		t.overlay = make(map[string]any, len(t.packet))
		for _, w := range t.packet {
			ch, _, ok := ru.r.layout.channel(w.Channel())
			if !ok {
				return ru.nodeErr(t, 1, fmt.Errorf("%w %q in a packet for %q", ErrUnknownChannel, w.Channel(), t.name))
			}
			v, err := ch.convert(w.value)
			if err != nil {
				return ru.nodeErr(t, 1, err)
			}
			// Each write folds onto the overlay so far: the reducers are
			// folds, so this equals one application per channel.
			cur, has := t.overlay[ch.Name()]
			if !has {
				cur, has = base.lookup(ch.Name())
			}
			t.overlay[ch.Name()] = ch.reduce(cur, has, []any{v})
		}
	}
	return nil
}

// runTasks runs tasks concurrently (bounded by MaxConcurrency), delivering
// their events as they come, and returns their results in task order. It
// returns only when every task goroutine has ended.
func (ru *run) runTasks(tasks []*task) []taskResult {
	ru.results = slices.Grow(ru.results[:0], len(tasks))[:len(tasks)]
	results := ru.results
	clear(results)
	if len(tasks) == 1 && ru.cfg.events == 0 {
		// Nobody reads events, so nothing from inside the node needs the
		// loop to forward it: run the task on this goroutine.
		results[0] = ru.execTask(tasks[0])
		return results
	}
	limit := ru.cfg.maxConcurrency
	if limit <= 0 || limit > len(tasks) {
		limit = len(tasks)
	}
	next, running := 0, 0
	startNext := func() {
		t, i := tasks[next], next
		next++
		running++
		ru.emit(Event{Kind: EventNodeStart, Path: t.path, Node: t.name, Step: ru.step, Attempt: 1})
		go func() {
			results[i] = ru.execTask(t)
			ru.done <- i
		}()
	}
	for running < limit && next < len(tasks) {
		startNext()
	}
	for running > 0 {
		var i int
		select {
		case ev := <-ru.events:
			ru.emit(ev)
			continue
		case i = <-ru.done:
		}
		running--
		t, res := tasks[i], &results[i]
		ru.emit(Event{Kind: EventNodeEnd, Path: t.path, Node: t.name, Step: ru.step,
			Attempt: res.attempts, Duration: res.dur, Err: res.err})
		if next < len(tasks) && ru.ctx.Err() == nil {
			startNext()
		}
	}
	for i := next; i < len(tasks); i++ {
		results[i].err = ru.ctx.Err()
	}
	return results
}

// execTask runs one task with its node's retry policy, timeout and error
// handler. It runs on its own goroutine.
func (ru *run) execTask(t *task) taskResult {
	start := time.Now()
	n := t.node
	s := State{d: ru.state, overlay: t.overlay}
	for attempt := 1; ; attempt++ {
		cmd, err := ru.attempt(t, s, attempt)
		if err == nil {
			return taskResult{cmd: cmd, attempts: attempt, dur: time.Since(start)}
		}
		if ru.ctx.Err() != nil {
			return taskResult{err: ru.ctx.Err(), attempts: attempt, dur: time.Since(start)}
		}
		if attempt < n.retry.MaxAttempts && retryable(n.retry, err) {
			timer := time.NewTimer(n.retry.delay(attempt))
			select {
			case <-timer.C:
				continue
			case <-ru.ctx.Done():
				timer.Stop()
				return taskResult{err: ru.ctx.Err(), attempts: attempt, dur: time.Since(start)}
			}
		}
		nerr := ru.nodeErr(t, attempt, err)
		if n.onError != nil {
			cmd, herr := ru.handle(t, s, nerr)
			if herr == nil {
				return taskResult{cmd: cmd, attempts: attempt, dur: time.Since(start), handled: true}
			}
			nerr = ru.nodeErr(t, attempt, fmt.Errorf("error handler failed: %w (node error: %w)", herr, err))
		}
		return taskResult{err: nerr, attempts: attempt, dur: time.Since(start)}
	}
}

func (ru *run) nodeErr(t *task, attempt int, err error) *NodeError {
	var ne *NodeError
	if errors.As(err, &ne) && ne.Path == t.path {
		return ne
	}
	return &NodeError{Node: t.label, Path: t.path, Step: ru.step, Attempt: attempt, Err: err}
}

// attempt calls the node once, turning a panic into a *PanicError and an
// overrun of the node's timeout into ErrNodeTimeout.
func (ru *run) attempt(t *task, s State, attempt int) (cmd Command, err error) {
	ctx := ru.ctx
	if t.node.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.node.timeout)
		defer cancel()
	}
	ctx = context.WithValue(ctx, emitterKey{}, &emitter{r: ru, path: t.path, node: t.name, step: ru.step})
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: string(debug.Stack())}
		}
	}()
	if t.node.sub != nil {
		cmd, err = t.node.sub.runNested(ctx, s)
	} else {
		cmd, err = t.node.fn(ctx, s)
	}
	if err != nil && t.node.timeout > 0 && ctx.Err() == context.DeadlineExceeded && ru.ctx.Err() == nil {
		err = fmt.Errorf("%w after %v: %w", ErrNodeTimeout, t.node.timeout, err)
	}
	return cmd, err
}

// handle runs the node's error handler, recovering a panic.
func (ru *run) handle(t *task, s State, nerr error) (cmd Command, err error) {
	ctx := context.WithValue(ru.ctx, emitterKey{}, &emitter{r: ru, path: t.path, node: t.name, step: ru.step})
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: string(debug.Stack())}
		}
	}()
	return t.node.onError(ctx, s, nerr)
}

// Permanent marks err as not worth retrying under the default RetryOn.
func Permanent(err error) error { return &permanentError{err} }

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
	case errors.As(err, &pe), errors.As(err, &perm),
		errors.Is(err, context.Canceled), isInterrupt(err):
		return false
	}
	return true
}
