package graph

import (
	"context"
	"encoding/json"
)

// TaskCall describes one attempt of a task a node started with Schedule,
// as a TaskExecutor sees it.
type TaskCall struct {
	// ID is the task's id (TaskResult.ID): the same on every run of its
	// node's step, so an executor can name the work by it (an activity
	// id) and find it again after a crash.
	ID  string
	Key string
	// Node is the node that started the task, Label the node's task in
	// its step ("node", or "node[i]" for a packet's), Path the task's
	// path.
	Node  string
	Label string
	Path  string
	// Checkpoint is the checkpoint the step runs after ("" without a
	// saver): with Label and ID, what RunScheduled needs.
	Checkpoint string
	Step       int
	Thread     string
	// Attempt counts from 1 (TaskOptions.Retry).
	Attempt int
	// Labels are the task's placement labels (Task.Labels).
	Labels map[string]string `json:",omitempty"`
}

// TaskExecutor is the seam through which the tasks of a node reach the
// runner: every attempt of every task a node starts with Schedule goes
// through it. By default (no executor) an attempt runs on a goroutine of
// the node's process. A runner that places work elsewhere — a durable
// engine that runs each task as an activity of its own, with its own
// timeout and heartbeat, on any worker — sets one with WithTaskExecutor:
// it may call run in this process, or hand the call to another process,
// which runs the task with Runnable.RunScheduled (it rebuilds the task
// from the thread: the node runs again up to it).
//
// ExecuteTask must call run, in this process or in another that rebuilt
// it, at most once per call, and return run's value and error: the value
// is the task's, as JSON (Schedule decodes it into the task's type and
// journals it); an error from run must come back so that errors.Is and
// errors.As see what run returned (an *InterruptError pauses the task). An
// error of the executor's own fails the attempt like run's would. The
// context carries the task's scope: run called with it (or a context
// derived from it) streams the task's events and journals its calls.
type TaskExecutor interface {
	ExecuteTask(ctx context.Context, call TaskCall, run func(context.Context) (json.RawMessage, error)) (json.RawMessage, error)
}

// TaskExecutorFunc is a function that is a TaskExecutor.
type TaskExecutorFunc func(ctx context.Context, call TaskCall, run func(context.Context) (json.RawMessage, error)) (json.RawMessage, error)

// ExecuteTask calls f.
func (f TaskExecutorFunc) ExecuteTask(ctx context.Context, call TaskCall, run func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	return f(ctx, call, run)
}

// WithTaskExecutor runs the tasks nodes start (Schedule) through x.
func WithTaskExecutor(x TaskExecutor) Option { return func(c *config) { c.taskExec = x } }
