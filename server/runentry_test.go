package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

// TestACronsRunKeepsItsMultitaskStrategy: a cron's run starts through the
// one entry of every run, so the multitask strategy of its payload holds
// as a request's does: "interrupt" cancels the thread's run in progress
// and starts (a cron's run used to be refused as busy, its strategy
// ignored).
func TestACronsRunKeepsItsMultitaskStrategy(t *testing.T) {
	open := make(chan struct{})
	defer close(open)
	e := newEnv(t, server.Config{Workflows: map[string]*graph.Runnable{"gate": gate(t, open)}})
	th := e.platformThread(alice, nil)
	var held map[string]any
	e.call("POST", "/threads/"+th+"/runs", alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "hold"}}, http.StatusOK, &held)
	var c map[string]any
	e.call("POST", "/threads/"+th+"/runs/crons", alice, map[string]any{"assistant_id": "gate", "schedule": "@hourly",
		"input": map[string]any{"text": "x"}, "multitask_strategy": "interrupt"}, http.StatusOK, &c)
	due, err := time.Parse(time.RFC3339Nano, c["next_run_date"].(string))
	require.NoError(t, err)
	server.FireCrons(e.srv, due)

	var runs []map[string]any
	e.call("GET", "/threads/"+th+"/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs, 2, "the cron's run was started beside the one it interrupted")
	byID := map[string]string{}
	for _, r := range runs {
		byID[r["run_id"].(string)] = r["status"].(string)
	}
	assert.Equal(t, "interrupted", byID[held["run_id"].(string)], "the run in progress was cancelled")
	delete(byID, held["run_id"].(string))
	for _, status := range byID {
		assert.Equal(t, "running", status, "the cron's run runs")
	}
}
