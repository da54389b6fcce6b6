package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/server"
)

func TestThreadStreamJoinsTheRunInProgressThenTheOneQueuedBehindIt(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r)})
	id := e.platformThread(alice, nil)
	var first, second statelessRun
	e.call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "block", "input": map[string]any{}}, http.StatusOK, &first)
	b.waitEntered(t)
	e.call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "block", "input": map[string]any{},
		"multitask_strategy": "enqueue", "stream_mode": []string{"updates"}}, http.StatusOK, &second)

	resp := e.request("GET", "/threads/"+id+"/stream", alice, nil)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	head := readEvents(t, resp.Body, func(ev sse) bool { return ev.Event == "metadata" })
	require.Len(t, head, 1)
	assert.JSONEq(t, `{"run_id":"`+first.RunID+`","attempt":1}`, head[0].Data)
	b.open()
	rest := readEvents(t, resp.Body, nil) // to the end: no run left
	// The first run in its mode (values), then the second's metadata and
	// its events in its mode (updates).
	var modes []string
	for _, ev := range rest {
		if len(modes) == 0 || modes[len(modes)-1] != ev.Event {
			modes = append(modes, ev.Event)
		}
	}
	assert.Equal(t, []string{"values", "metadata", "updates"}, modes)
	var meta map[string]any
	for _, ev := range rest {
		if ev.Event == "metadata" {
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &meta))
		}
	}
	assert.Equal(t, second.RunID, meta["run_id"])
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(rest[len(rest)-1].Data), &last))
	assert.Contains(t, last, "c", "the second run's last update")
}

func TestThreadStreamOfAnIdleThreadEndsAtOnce(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	id := e.platformThread(alice, nil)
	assert.Empty(t, e.stream("GET", "/threads/"+id+"/stream", alice, nil))
}

func TestThreadStreamErrorsSayWhatIsWrong(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	id := e.platformThread(alice, nil)
	e.fails("GET", "/threads/"+id+"/stream?stream_mode=lifecycle", alice, nil, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_query", Field: "stream_mode",
		Message: `query parameter "stream_mode": a thread's stream serves run_modes, not "lifecycle"`})
	e.fails("GET", "/threads/nope/stream", alice, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "nope"`})
	e.fails("GET", "/threads/"+id+"/stream", bob, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "` + id + `"`})
	resp := e.request("GET", "/threads/"+id+"/stream", alice, nil, "Last-Event-ID", "x")
	defer resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Empty(t, e.stream("GET", "/threads/"+id+"/stream?stream_mode=run_modes", alice, nil))
}
