package dag

import (
	"context"
	"errors"
	"runtime/debug"
)

// runner is one run: its state is kept by the goroutine that called Run;
// tasks report to it over a channel.
type runner struct {
	tasks   []Task
	index   map[string]int
	opts    Options
	run     func(context.Context, string) error
	results []Result
	started []bool

	inFlight int
	cancel   context.CancelFunc
	stopped  error // what stopped the run
	panicked *PanicError
}

// outcome is a task's report.
type outcome struct {
	i     int
	err   error
	panic *PanicError
}

// loop starts tasks as they become ready until none is left or the run
// stops, then waits for the tasks in flight.
func (r *runner) loop(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	r.cancel = cancel
	done := make(chan outcome)
	for {
		if err := parent.Err(); err != nil {
			r.stop(err)
		}
		if r.stopped != nil {
			break
		}
		r.startReady(ctx, done)
		if r.inFlight == 0 {
			break
		}
		select {
		case o := <-done:
			r.finish(o)
		case <-parent.Done():
		}
	}
	for r.inFlight > 0 {
		r.finish(<-done)
	}
}

// startReady starts the tasks whose dependencies are done, in the order
// given, up to the limit.
func (r *runner) startReady(ctx context.Context, done chan<- outcome) {
	for i, t := range r.tasks {
		if r.opts.Limit > 0 && r.inFlight >= r.opts.Limit {
			return
		}
		if r.started[i] || !r.ready(t) {
			continue
		}
		r.started[i] = true
		r.inFlight++
		go r.call(ctx, i, done)
	}
}

func (r *runner) ready(t Task) bool {
	for _, d := range t.Deps {
		if r.results[r.index[d]].Status != Done {
			return false
		}
	}
	return true
}

// call runs task i and reports, a panic included.
func (r *runner) call(ctx context.Context, i int, done chan<- outcome) {
	o := outcome{i: i}
	defer func() {
		if v := recover(); v != nil {
			o.panic = &PanicError{Task: r.tasks[i].ID, Value: v, Stack: debug.Stack()}
			o.err = o.panic
		}
		done <- o
	}()
	o.err = r.run(ctx, r.tasks[i].ID)
}

// finish records a task's outcome and stops the run if it must.
func (r *runner) finish(o outcome) {
	r.inFlight--
	res := &r.results[o.i]
	if o.panic != nil && r.panicked == nil {
		r.panicked = o.panic
		r.stop(o.panic)
	}
	if o.err == nil {
		res.Status = Done
		return
	}
	res.Err = o.err
	kind := Fail
	if r.opts.Classify != nil && o.panic == nil {
		kind = r.opts.Classify(o.err)
	}
	if kind == Pause {
		res.Status = Paused
		return
	}
	res.Status = Failed
	if kind == Stop || r.opts.FailFast {
		r.stop(o.err)
	}
}

// stop ends the run with err, the first time: no task starts any more
// and those in flight see their context cancelled.
func (r *runner) stop(err error) {
	if r.stopped == nil {
		r.stopped = err
		r.cancel()
	}
}

// skip marks the tasks that never started and depend, directly or not, on
// a task that failed.
func (r *runner) skip() {
	for changed := true; changed; {
		changed = false
		for i, t := range r.tasks {
			if r.results[i].Status != NotRun {
				continue
			}
			for _, d := range t.Deps {
				if s := r.results[r.index[d]].Status; s == Failed || s == Skipped {
					r.results[i].Status, changed = Skipped, true
					break
				}
			}
		}
	}
}

// err is Run's error: what stopped the run, else the pauses.
func (r *runner) err() error {
	if r.stopped != nil {
		return r.stopped
	}
	var pauses []error
	for _, res := range r.results {
		if res.Status == Paused {
			pauses = append(pauses, res.Err)
		}
	}
	return errors.Join(pauses...)
}
