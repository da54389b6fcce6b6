package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/server"
)

// refused sends a request that must be refused with 429 and returns the
// error and the Retry-After header.
func (e *env) refused(method, path, token string, body any) (server.ErrorDetail, string) {
	e.t.Helper()
	var got server.ErrorBody
	resp := e.call(method, path, token, body, http.StatusTooManyRequests, &got)
	return got.Error, resp.Header.Get("Retry-After")
}

func TestAnOwnerAtItsActiveRunQuotaGets429(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r, echoGraph(t)), MaxActiveRuns: 1})
	e.thread(alice, "block", "t1")
	e.thread(alice, "echo", "t2")
	var first server.Run
	e.call("POST", "/v1/threads/t1/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &first)
	b.waitEntered(t)

	got, retry := e.refused("POST", "/v1/threads/t2/runs/wait", alice, map[string]any{"input": map[string]any{"text": "x"}})
	assert.Equal(t, server.ErrorDetail{Code: "quota_exceeded", Quota: "active_runs", Limit: 1,
		Message: `owner "alice" has 1 runs in progress, the most allowed: wait for one to end, or cancel one, then try again`}, got)
	assert.Equal(t, "5", retry)
	var runs server.RunList
	e.call("GET", "/v1/threads/t2/runs", alice, nil, http.StatusOK, &runs)
	assert.Empty(t, runs.Runs, "the refused run was not kept")

	e.thread(bob, "echo", "t2")
	assert.Equal(t, "done", e.wait(bob, "t2", map[string]any{"input": map[string]any{"text": "x"}}).Status, "the quota is alice's, not bob's")

	b.open()
	e.stream("GET", "/v1/threads/t1/runs/"+first.ID+"/stream", alice, nil)
	assert.Equal(t, "done", e.wait(alice, "t2", map[string]any{"input": map[string]any{"text": "x"}}).Status, "a run that ended frees its place")
	assert.Empty(t, server.RunCounts(e.srv))
}

func TestAnOwnerAtItsQueuedRunQuotaGets429(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), QueueBusy: true, MaxQueuedRuns: 1})
	e.thread(alice, "block", "t")
	var first, queued server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &first)
	b.waitEntered(t)
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &queued)
	require.Equal(t, "queued", queued.Status)

	got, retry := e.refused("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}})
	assert.Equal(t, server.ErrorDetail{Code: "quota_exceeded", Quota: "queued_runs", Limit: 1,
		Message: `owner "alice" has 1 runs queued, the most allowed: wait for some to start, or cancel one, then try again`}, got)
	assert.Equal(t, "5", retry)

	// Cancelling the queued run frees its place.
	e.call("POST", "/v1/threads/t/runs/"+queued.ID+"/cancel", alice, nil, http.StatusOK, nil)
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &queued)
	assert.Equal(t, "queued", queued.Status)
	assert.Equal(t, map[string][2]int{"alice": {1, 1}}, server.RunCounts(e.srv))
	b.open()
	e.stream("GET", "/v1/threads/t/runs/"+queued.ID+"/stream", alice, nil)
	assert.Empty(t, server.RunCounts(e.srv), "every run that ended was counted out")
}

func TestAnOwnerAtItsStorageQuotaGets429UntilItDeletesThreads(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MaxStoredBytes: 1})
	e.thread(alice, "echo", "t") // stores the thread's record: alice is over

	want := server.ErrorDetail{Code: "quota_exceeded", Quota: "stored_bytes", Limit: 1}
	got, retry := e.refused("POST", "/v1/threads/t/runs/wait", alice, map[string]any{"input": map[string]any{"text": "x"}})
	assert.Regexp(t, `^owner "alice" has stored (\d+) bytes \(checkpoints \d+, recorded runs 0, store items 0\), the most allowed: delete threads that are no longer needed \(DELETE /v1/threads/\{thread\}: their recorded runs go with them\) or store items, then try again$`, got.Message)
	got.Message = ""
	assert.Equal(t, want, got)
	assert.Empty(t, retry, "waiting does not help")
	got, _ = e.refused("POST", "/v1/threads", alice, map[string]any{"workflow": "echo", "thread_id": "u"})
	assert.Equal(t, "stored_bytes", got.Quota)
	e.call("GET", "/v1/threads/t", alice, nil, http.StatusOK, nil) // reading is not refused

	e.thread(bob, "echo", "t") // bob's quota is his own

	e.call("DELETE", "/v1/threads/t", alice, nil, http.StatusNoContent, nil)
	e.thread(alice, "echo", "u")
}
