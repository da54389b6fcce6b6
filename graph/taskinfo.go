package graph

import "context"

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
