package main

import (
	"flag"
	"strings"
)

// temporalTasks are the flags of run --temporal and serve --temporal
// that say where the tasks a node starts (a team's builds and steps) run:
// by default each is an activity of its own, placed by --task-queue;
// --tasks-in-node keeps them inside their node's activity
// (temporalrun.Config.TasksInNode, TaskQueues).
type temporalTasks struct {
	inNode bool
	queues multiFlag // SELECTOR=QUEUE
}

// addTemporalTasks registers the flags of temporalTasks.
func addTemporalTasks(fs *flag.FlagSet, t *temporalTasks) {
	fs.BoolVar(&t.inNode, "tasks-in-node", false,
		"with --temporal, run the tasks a node starts (a team's agent builds and steps) inside the node's activity, on its worker, instead of each as an activity of its own")
	// The default since the tasks became activities by default; accepted
	// so that scripts written for the earlier opt-in keep working.
	fs.BoolFunc("task-activities", "with --temporal, each task a node starts an activity of its own (the default)", func(string) error { return nil })
	fs.Var(&t.queues, "task-queue", "SELECTOR=QUEUE: with --temporal, the queue of the tasks a selector matches: a label NAME:VALUE they carry (tier:reasoning: a team's agents of that tier) or a prefix of their key (step:, build:); repeatable; default: their node's queue")
}

// queueMap returns the --task-queue flags as a map, or a usage error.
func (t *temporalTasks) queueMap(cmd string) (map[string]string, error) {
	if len(t.queues) == 0 {
		return nil, nil
	}
	if t.inNode {
		return nil, usagef("%s: --task-queue places tasks that run as activities of their own: drop --tasks-in-node", cmd)
	}
	m := make(map[string]string, len(t.queues))
	for _, kv := range t.queues {
		selector, queue, ok := strings.Cut(kv, "=")
		if !ok || selector == "" || queue == "" {
			return nil, usagef("%s: --task-queue takes SELECTOR=QUEUE (tier:reasoning=gpu, step:=agents), got %q", cmd, kv)
		}
		m[selector] = queue
	}
	return m, nil
}
