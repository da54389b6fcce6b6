package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// errScheduledElsewhere is what Schedule returns in a run of RunScheduled
// once it has run the task the run is for: the node ends there.
var errScheduledElsewhere = errors.New("graph: the node ran only to run one of its tasks (RunScheduled)")

// onlyTask is the task a run of RunScheduled is for, and what became of
// it (written by the node's goroutine, read once the node has ended).
type onlyTask struct {
	id  string
	ran bool
	raw json.RawMessage
	err error
}

// RunScheduled runs, apart from its node's run, one task that a node of
// the step after call.Checkpoint starts with Schedule — in another process
// if need be: the seam for a runner whose TaskExecutor sends each task to
// a worker of its own (an activity per task), where the closure the node
// gave Schedule does not exist. It loads the thread's step as RunTasks
// does and calls the node (call.Label) again; the node's journaled calls
// and its done tasks are read back from the journal (a task's Done hook
// is called as usual), and the Schedule call that holds the task
// (call.ID) runs that task once, journals its value, and ends the node.
// It returns the task's value as JSON, or the error its Run returned —
// an *InterruptError for a question (its answers, recorded by Step, are
// found as in the node's own run). Nothing else of the node is kept: its
// result, its other tasks, its events. With StreamTo, the task's own
// custom events are sent there.
//
// The node must reach the task as its own run did: code before and
// between its Schedule calls runs again, so it must be deterministic (its
// side effects journaled with Do: outside the task, a Do call the journal
// does not have fails instead of being made), and a task reaches
// RunScheduled only once the tasks it depends on are done (journaled), as
// a TaskExecutor sees it. The run never goes through the run's
// TaskExecutor.
func (r *Runnable) RunScheduled(ctx context.Context, call TaskCall, opts ...Option) (json.RawMessage, error) {
	cfg := r.streamConfig(opts)
	switch {
	case cfg.saver == nil || cfg.thread == "":
		return nil, errors.New("graph: RunScheduled runs a task of a durable thread: pass graph.WithSaver and graph.Thread")
	case cfg.resume != nil || cfg.checkpointID != "":
		return nil, errors.New("graph: RunScheduled takes no answers and no checkpoint: Step applies them")
	}
	cfg.durability, cfg.taskExec = DurabilitySync, nil
	var yield func(Event, error) bool
	if cfg.sink != nil {
		yield = func(ev Event, _ error) bool {
			// The node's own events are its run's; only the task's go.
			return ev.Kind != EventCustom || cfg.sink(ev)
		}
	}
	ru, err := r.newRun(cfg, r.name, yield)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ru.ctx, ru.cancel = ctx, cancel
	defer ru.releaseResults() // once the workers have ended
	defer ru.stopWorkers()
	ru.only = &onlyTask{id: call.ID}
	if _, err := ru.begin(nil, nil); err != nil {
		return nil, err
	}
	if ru.p.cp.ID != call.Checkpoint {
		return nil, fmt.Errorf("graph: thread %q is at checkpoint %q, past %q whose step was asked for: %w", cfg.thread, ru.p.cp.ID, call.Checkpoint, ErrStaleStep)
	}
	var t *task
	for _, nt := range ru.nextTasks() {
		if nt.label == call.Label {
			t = nt
		}
	}
	if t == nil {
		return nil, fmt.Errorf("graph: thread %q: the step after checkpoint %q has tasks %s, not %q",
			cfg.thread, call.Checkpoint, quoteJoin(taskLabels(ru.taskBuf)), call.Label)
	}
	tasks := []*task{t}
	if err := ru.prepare(tasks); err != nil {
		return nil, err
	}
	ru.partial = true
	results := ru.runTasks(tasks, time.Time{})
	if ru.stopped.Load() {
		return nil, errStopped
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("graph: task %s of node %q cancelled: %w", call.ID, call.Label, err)
	}
	if only := ru.only; only.ran {
		return only.raw, only.err
	}
	if err := results[0].err; err != nil {
		return nil, fmt.Errorf("graph: node %q failed before it started task %s (%s): %w", call.Label, call.ID, call.Key, err)
	}
	return nil, fmt.Errorf("graph: node %q did not start task %s (%s) when it ran again", call.Label, call.ID, call.Key)
}
