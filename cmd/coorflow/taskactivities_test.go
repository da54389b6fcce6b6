//go:build temporal

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/coorflow/coorflow/internal/temporaltest"
	"github.com/coorflow/coorflow/temporalrun"
)

// TestTaskActivitiesFlagsRunATeamsStepsAsActivities: run --temporal
// --task-queue step:=agents runs the coor team's plan steps as task
// activities (the default) on the agents' queue, and its other tasks
// (agent builds) on the team node's (in the workflow's history); the run
// ends as before; --task-activities, the former opt-in, is still
// accepted. --task-queue tier:reasoning=agents places each step by its
// agent's tier. Nonsense is refused before anything starts.
func TestTaskActivitiesFlagsRunATeamsStepsAsActivities(t *testing.T) {
	srv := temporaltest.Start(t, temporaltest.Options{})
	c := newCLI(t)
	startWorker(t, c, "--temporal", srv.HostPort, "--queue", "teams", "--demo", "../../examples/coor")
	agents := &cli{t: t, db: c.db, env: map[string]string{}}
	startWorker(t, agents, "--temporal", srv.HostPort, "--queue", "team-agents", "--demo", "../../examples/coor")
	cr := &cli{t: t, db: c.db, env: map[string]string{}}
	code, stdout, stderr := cr.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "teams", "--demo",
		"--task-activities", "--task-queue", "step:=team-agents", "--thread", "tasks-1", "--input", "Compare SQLite and PostgreSQL")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "# SQLite or PostgreSQL")
	queues := taskQueuesOf(t, srv, "tasks-1")
	steps := 0
	for key, queue := range queues {
		if strings.HasPrefix(key, "step:") {
			steps++
			assert.Equal(t, "team-agents", queue, key)
		} else {
			assert.Equal(t, "teams", queue, key)
		}
	}
	assert.Positive(t, steps, "the team's steps ran as task activities: %v", queues)
	t.Logf("task activities: %v", queues)

	// By the agents' tier: the analysts the first run built (this run
	// reuses them: no build) are of tier reasoning, the researcher is
	// basic.
	code, stdout, stderr = cr.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "teams", "--demo",
		"--task-queue", "tier:reasoning=team-agents", "--thread", "tasks-2", "--input", "Compare SQLite and PostgreSQL")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "# SQLite or PostgreSQL")
	queues = taskQueuesOf(t, srv, "tasks-2")
	t.Logf("task activities by tier: %v", queues)
	assert.Equal(t, map[string]string{"step:s1": "team-agents", "step:s2": "team-agents", "step:s3": "teams"}, queues)

	for _, bad := range [][]string{{"--tasks-in-node", "--task-queue", "step:=x"}, {"--task-queue", "step:"}, {"--task-queue", "=x"}} {
		code, _, stderr = cr.run(append([]string{"run", "../../examples/coor", "--temporal", srv.HostPort, "--demo", "--input", "x"}, bad...)...)
		assert.Equal(t, exitUsage, code, stderr)
		assert.Contains(t, stderr, "--task-queue")
	}
}

// taskQueuesOf returns the queue of each task activity of thread's
// workflow, by the task's key.
func taskQueuesOf(t *testing.T, srv *temporaltest.Server, thread string) map[string]string {
	t.Helper()
	it := srv.Client(t).GetWorkflowHistory(t.Context(), thread, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	queues := map[string]string{}
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == temporalrun.ScheduledTaskActivityName {
			var in struct {
				Call struct{ Key string }
			}
			require.NoError(t, json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &in))
			queues[in.Call.Key] = a.GetTaskQueue().GetName()
		}
	}
	return queues
}
