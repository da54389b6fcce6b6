package graph

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
)

// TaskInfo describes the task a node is running as.
type TaskInfo struct {
	// Graph is the path of the graph running the node, Node its name.
	Graph string
	Node  string
	// Path is the event path of the task (graph/node, or graph/node[i] for
	// a task started by a Send packet).
	Path string
	Step int
	// Thread is the run's thread ("" when it has none).
	Thread string
}

// TaskOf returns the task running in ctx, if any.
func TaskOf(ctx context.Context) (TaskInfo, bool) {
	e := emitterFrom(ctx)
	if e == nil {
		return TaskInfo{}, false
	}
	return TaskInfo{Graph: e.r.path, Node: e.node, Path: e.path, Step: e.step, Thread: e.r.cfg.thread}, true
}

// TaskStatus says where a task of a step stands.
type TaskStatus string

// The statuses of a StepTask.
const (
	TaskPending     TaskStatus = "pending"     // not run yet, or runs again (its answers came)
	TaskDone        TaskStatus = "done"        // finished: its result is kept and it does not run again
	TaskFailed      TaskStatus = "failed"      // failed for good in the last attempt; runs again on continue
	TaskInterrupted TaskStatus = "interrupted" // waiting on the answers in Interrupts
)

// StepTask is one task of the step after a checkpoint (see
// Snapshot.Tasks).
type StepTask struct {
	// Node is the task's node; Path its path (graph/node, or
	// graph/node[i] for a task started by a Send packet).
	Node   string
	Path   string
	Status TaskStatus
	// Error is the failure of a failed task.
	Error string
	// Interrupts are the questions an interrupted task waits on; for a
	// done task, the last questions it asked, answered (LangGraph lists
	// a past checkpoint's tasks with their interrupts).
	Interrupts []InterruptInfo
	// Tasks are the tasks the node started with Schedule that the
	// records of the step know: the done ones (journaled), and those that
	// failed or paused in the last run of the node, sorted by path. A
	// task that never started (its dependencies were not done) is not
	// listed.
	Tasks []NodeTask
	// Subgraph, for a task of a subgraph node, names the checkpoint
	// namespace of its run: pass it to InSubgraph to read the subgraph's
	// own checkpoints with State, StateAt and History.
	Subgraph string
}

// NodeTask is one task a node started with Schedule, as State shows it.
type NodeTask struct {
	Key string
	// Path is the task's path: its node's path (and scope), then its key.
	Path   string
	Status TaskStatus // TaskDone, TaskFailed or TaskInterrupted
	// Error is the failure of a failed task.
	Error string
}

// nodeTasks lists the tasks of the node whose task has path, from its
// journal: entries of tasks are done, and status records say how the
// others ended.
func nodeTasks(path string, journal map[string]json.RawMessage) []NodeTask {
	byKey := map[string]NodeTask{}
	for k, raw := range journal {
		scope, name, ok := strings.Cut(k, "|")
		if !ok || !strings.HasPrefix(name, "task:") {
			continue
		}
		if entry, ok := strings.CutSuffix(k, statusSuffix); ok {
			var rec taskStatusRecord
			if _, done := byKey[entry]; done || json.Unmarshal(raw, &rec) != nil {
				continue
			}
			byKey[entry] = NodeTask(rec)
			continue
		}
		key := strings.TrimPrefix(name, "task:")
		if at := strings.LastIndexByte(key, '#'); at >= 0 {
			key = key[:at]
		}
		byKey[k] = NodeTask{Key: key, Path: path + scope + "/" + segmentReplacer.Replace(key), Status: TaskDone}
	}
	if len(byKey) == 0 {
		return nil
	}
	out := make([]NodeTask, 0, len(byKey))
	for _, nt := range byKey {
		out = append(out, nt)
	}
	slices.SortFunc(out, func(a, b NodeTask) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// recError is the TaskRecord kind of a task's failure: its error message.
const recError = "error"

// stepTasks describes the tasks of the step after the loaded checkpoint,
// from the records loaded for them. With finished set (the step completed
// on some branch), every task is done. It consumes the run's schedule.
func (ru *run) stepTasks(finished bool) []StepTask {
	records := ru.records
	tasks := ru.nextTasks()
	out := make([]StepTask, len(tasks))
	for i, t := range tasks {
		st := StepTask{Node: t.name, Path: t.path, Status: TaskPending}
		if t.node.sub != nil {
			st.Subgraph = subgraphNS(ru.p.ns, t.label, ru.p.cp.ID)
		}
		tr := records[t.label]
		if tr != nil {
			st.Tasks = nodeTasks(t.path, tr.journal)
		}
		switch {
		case finished || t.done != nil:
			st.Status = TaskDone
			if tr != nil {
				st.Interrupts = tr.interrupts // the questions it asked and had answered
			}
		case len(t.waiting) > 0:
			st.Status, st.Interrupts = TaskInterrupted, t.waiting
		case tr != nil && tr.err != "":
			st.Status, st.Error = TaskFailed, tr.err
		}
		out[i] = st
	}
	return out
}
