package dag

import (
	"context"
	"errors"
	"fmt"
)

// Task is one node of the graph.
type Task struct {
	// ID names the task; it is unique among the tasks of a run.
	ID string
	// Deps are the ids of the tasks that must be done before it starts.
	Deps []string
}

// Status is what became of a task.
type Status int

const (
	// NotRun: the task never started — the run stopped first, or a task
	// it depends on paused.
	NotRun Status = iota
	// Done: the task returned nil.
	Done
	// Failed: the task returned an error that did not pause it.
	Failed
	// Skipped: a task it depends on failed or was skipped.
	Skipped
	// Paused: the task returned an error classified Pause.
	Paused
)

func (s Status) String() string {
	switch s {
	case Done:
		return "done"
	case Failed:
		return "failed"
	case Skipped:
		return "skipped"
	case Paused:
		return "paused"
	}
	return "not run"
}

// Result is what became of one task.
type Result struct {
	ID     string
	Status Status
	// Err is the task's error, when it failed or paused.
	Err error
}

// Kind says what a task's error does to the run.
type Kind int

const (
	// Fail fails the task: its dependents are skipped and, with
	// FailFast, the run stops.
	Fail Kind = iota
	// Stop fails the task and stops the run, whatever FailFast says.
	Stop
	// Pause leaves the task not done without failing it: its dependents
	// wait, the other tasks go on.
	Pause
)

// Options configures a run.
type Options struct {
	// Limit caps the tasks in flight at once (0: no cap). Ready tasks
	// start in the order they were given.
	Limit int
	// FailFast stops the run at the first failed task; by default a
	// failure skips the task's dependents only.
	FailFast bool
	// Classify says what a task's error does to the run (nil: every
	// error is a Fail).
	Classify func(error) Kind
}

// ErrInvalid: the tasks do not form a graph Run can run — an empty or
// repeated id, a dependency on a task that is not given, or a cycle.
var ErrInvalid = errors.New("dag: invalid graph")

// PanicError is what Run panics with, once every other task in flight has
// returned, when a task panicked: the panic moves to the caller's
// goroutine, where it can be recovered.
type PanicError struct {
	Task  string
	Value any
	Stack []byte // the panicking goroutine's
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("dag: task %q panicked: %v\n%s", e.Task, e.Value, e.Stack)
}

// Run calls run for every task, each once the tasks it depends on are
// done, and returns what became of each task in the order given. Run's
// error is the one that stopped the run — a Stop, a Fail under FailFast,
// or ctx's error when ctx ended first — or else the pauses, joined in the
// order of their tasks, or else nil: a failure that did not stop the run
// is in the results only. A task's context is cancelled when the run
// stops.
func Run(ctx context.Context, tasks []Task, opts Options, run func(ctx context.Context, id string) error) ([]Result, error) {
	index, err := check(tasks)
	if err != nil {
		return nil, err
	}
	r := &runner{tasks: tasks, index: index, opts: opts, run: run,
		results: make([]Result, len(tasks)), started: make([]bool, len(tasks))}
	for i, t := range tasks {
		r.results[i].ID = t.ID
	}
	r.loop(ctx)
	if r.panicked != nil {
		panic(r.panicked)
	}
	r.skip()
	return r.results, r.err()
}
