package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
)

// TestCronsFireNoMoreOftenThanTheMinimum: a schedule that fires more
// often than Config.MinCronInterval is refused (issue 26, finding 12:
// "@every 1s" made 150 runs in 15 s), and a cron stored before the
// minimum fires no sooner than it after its last run.
func TestCronsFireNoMoreOftenThanTheMinimum(t *testing.T) {
	st := storemem.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Store: st})
	for schedule, gap := range map[string]string{"@every 1s": "1s", "@every 59s": "59s"} {
		e.fails("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": schedule}, http.StatusBadRequest,
			server.ErrorDetail{Code: server.CodeInvalidField, Field: "schedule",
				Message: `field "schedule" "` + schedule + `" fires ` + gap + ` after a firing, more often than this server allows: at most once every 1m0s (Config.MinCronInterval)`})
	}
	c := e.cronOf(map[string]any{"assistant_id": "echo", "schedule": "* * * * *", "input": map[string]any{"text": "x"}})
	e.fails("PATCH", "/runs/crons/"+c["cron_id"].(string), alice, map[string]any{"schedule": "@every 10s"}, http.StatusBadRequest,
		server.ErrorDetail{Code: server.CodeInvalidField, Field: "schedule",
			Message: `field "schedule" "@every 10s" fires 10s after a firing, more often than this server allows: at most once every 1m0s (Config.MinCronInterval)`})

	// A longer minimum refuses field schedules too, however their gaps
	// fall: once a year, two minutes apart.
	slow := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MinCronInterval: 5 * time.Minute})
	for schedule, gap := range map[string]string{"*/2 * * * *": "2m0s", "0,3 0 1 1 *": "3m0s", "59 23 * * *": ""} {
		if gap == "" {
			slow.cronOf(map[string]any{"assistant_id": "echo", "schedule": schedule})
			continue
		}
		slow.fails("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": schedule}, http.StatusBadRequest,
			server.ErrorDetail{Code: server.CodeInvalidField, Field: "schedule",
				Message: `field "schedule" "` + schedule + `" fires ` + gap + ` after a firing, more often than this server allows: at most once every 5m0s (Config.MinCronInterval)`})
	}

	// A cron stored by a server without a minimum keeps to this one's.
	loose := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Store: st, MinCronInterval: -1})
	fast := loose.cronOf(map[string]any{"assistant_id": "echo", "schedule": "@every 1s", "input": map[string]any{"text": "x"}, "enabled": false})
	require.NoError(t, loose.srv.Shutdown(t.Context())) // its scheduler no longer fires
	e.call("PATCH", "/runs/crons/"+fast["cron_id"].(string), alice, map[string]any{"enabled": true}, http.StatusOK, &fast)
	due, err := time.Parse(time.RFC3339Nano, fast["next_run_date"].(string))
	require.NoError(t, err)
	server.FireCrons(e.srv, due) // or e's scheduler did, a little later
	var list []map[string]any
	e.call("POST", "/runs/crons/search", alice, map[string]any{}, http.StatusOK, &list)
	var next time.Time
	for _, c := range list {
		if c["cron_id"] == fast["cron_id"] {
			next, err = time.Parse(time.RFC3339Nano, c["next_run_date"].(string))
			require.NoError(t, err)
		}
	}
	assert.False(t, next.Before(due.Add(time.Minute)), "fired at %v or later, it fires next a minute later, not at %v", due, next)
	server.FireCrons(e.srv, due.Add(30*time.Second))
	var made []map[string]any
	e.call("POST", "/threads/search", alice, map[string]any{"metadata": map[string]any{"cron_id": fast["cron_id"]}}, http.StatusOK, &made)
	assert.Len(t, made, 1, "one run in the minute after its firing")
}

// TestCronRunsCountInTheOwnersQuotas: a cron's run is admitted as a
// request's: an owner at MaxActiveRuns gets no cron run either.
func TestCronRunsCountInTheOwnersQuotas(t *testing.T) {
	open := make(chan struct{})
	e := newEnv(t, server.Config{Workflows: map[string]*graph.Runnable{"echo": echoGraph(t), "gate": gate(t, open)}, MaxActiveRuns: 1})
	held := e.platformThread(alice, nil)
	e.call("POST", "/threads/"+held+"/runs", alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "hold"}}, http.StatusOK, nil)
	c := e.cronOf(map[string]any{"assistant_id": "echo", "schedule": "@hourly", "input": map[string]any{"text": "x"}})
	due, err := time.Parse(time.RFC3339Nano, c["next_run_date"].(string))
	require.NoError(t, err)
	server.FireCrons(e.srv, due)
	var runs []map[string]any
	var made []map[string]any
	e.call("POST", "/threads/search", alice, map[string]any{"metadata": map[string]any{"cron_id": c["cron_id"]}}, http.StatusOK, &made)
	require.Len(t, made, 1, "the cron made its thread")
	for _, th := range made {
		e.call("GET", "/threads/"+th["thread_id"].(string)+"/runs", alice, nil, http.StatusOK, &runs)
		assert.Empty(t, runs, "alice is at her one active run: the cron's run is refused")
	}
	close(open)
}
