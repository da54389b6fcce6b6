package main

import (
	"flag"
	"strings"
)

// temporalTasks are the flags of run --temporal and serve --temporal that
// run the tasks a node starts (a team's builds and steps) as activities
// of their own (temporalrun.Config.TaskActivities, TaskQueues).
type temporalTasks struct {
	activities bool
	queues     multiFlag // PREFIX=QUEUE
}

// addTemporalTasks registers the flags of temporalTasks.
func addTemporalTasks(fs *flag.FlagSet, t *temporalTasks) {
	fs.BoolVar(&t.activities, "task-activities", false,
		"with --temporal, run each task a node starts (a team's agent builds and steps) as an activity of its own, on any worker, with its own heartbeat")
	fs.Var(&t.queues, "task-queue", "PREFIX=QUEUE: with --task-activities, the queue of the tasks whose key starts with PREFIX (step:, build:; repeatable; default: their node's queue)")
}

// queueMap returns the --task-queue flags as a map, or a usage error.
func (t *temporalTasks) queueMap(cmd string) (map[string]string, error) {
	if len(t.queues) == 0 {
		return nil, nil
	}
	if !t.activities {
		return nil, usagef("%s: --task-queue needs --task-activities", cmd)
	}
	m := make(map[string]string, len(t.queues))
	for _, kv := range t.queues {
		prefix, queue, ok := strings.Cut(kv, "=")
		if !ok || queue == "" {
			return nil, usagef("%s: --task-queue takes PREFIX=QUEUE, got %q", cmd, kv)
		}
		m[prefix] = queue
	}
	return m, nil
}
