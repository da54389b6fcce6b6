package main

import (
	"flag"
	"time"
)

// temporalTimeouts are the flags of run --temporal and serve --temporal
// that say how soon a step whose worker died runs again elsewhere, and
// where one-task steps run (temporalrun.Config).
type temporalTimeouts struct {
	heartbeat, scheduleToStart time.Duration
	localSteps                 bool
	tasks                      temporalTasks // temporaltaskflags.go
}

// addTemporalTimeouts registers the timeout flags of a command that
// submits runs to Temporal's workers.
func addTemporalTimeouts(fs *flag.FlagSet) *temporalTimeouts {
	t := &temporalTimeouts{}
	fs.DurationVar(&t.heartbeat, "heartbeat-timeout", 5*time.Second,
		"with --temporal, how soon a step whose worker died is noticed and run again on another worker (its steps beat every third of it)")
	fs.DurationVar(&t.scheduleToStart, "schedule-to-start-timeout", 0,
		"with --temporal, how long a step may wait for a worker on its queue before the run fails saying so (0: as long as it takes)")
	fs.BoolVar(&t.localSteps, "local-steps", true,
		"with --temporal, run each step of one node as a local activity, inside the run's workflow task: a fraction of Temporal's cost per step, but such steps stay on the worker of the run's workflow code (--local-steps=false: every step an activity, on any worker)")
	addTemporalTasks(fs, &t.tasks)
	return t
}

// check refuses timeouts that make no sense.
func (t *temporalTimeouts) check(cmd string) error {
	switch {
	case t.heartbeat <= 0:
		return usagef("%s: --heartbeat-timeout must be positive, got %s", cmd, t.heartbeat)
	case t.scheduleToStart < 0:
		return usagef("%s: --schedule-to-start-timeout must be 0 or positive, got %s", cmd, t.scheduleToStart)
	}
	_, err := t.tasks.queueMap(cmd)
	return err
}
