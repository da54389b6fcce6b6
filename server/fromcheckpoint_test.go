package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/server"
)

// TestARunCanStartFromAnEarlierCheckpoint: /v1 runs take "checkpoint",
// as the Platform API's take checkpoint_id (issue 31, the viewer's replay
// and fork buttons): without an input the steps after it run again, with
// one the input is applied there; the new checkpoints follow the chosen
// one and the older ones stay. An unknown or oversized id is refused and
// changes nothing.
func TestARunCanStartFromAnEarlierCheckpoint(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "t")
	first := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "a"}})
	require.Equal(t, server.StatusDone, first.Status, "%+v", first.Error)
	var history server.History
	e.call("GET", "/v1/threads/t/history", alice, nil, http.StatusOK, &history)
	var afterUpper server.Snapshot
	for _, cp := range history.Checkpoints {
		if len(cp.Next) == 1 && cp.Next[0] == "tally" {
			afterUpper = cp
		}
	}
	require.NotEmpty(t, afterUpper.Checkpoint, "the checkpoint between upper and tally")
	values := func() map[string]any {
		var v map[string]any
		require.NoError(t, json.Unmarshal(e.state(alice, "t").Values, &v))
		return v
	}

	replay := e.wait(alice, "t", map[string]any{"checkpoint": afterUpper.Checkpoint})
	require.Equal(t, server.StatusDone, replay.Status, "%+v", replay.Error)
	var replayed server.History
	e.call("GET", "/v1/threads/t/history", alice, nil, http.StatusOK, &replayed)
	require.GreaterOrEqual(t, len(replayed.Checkpoints), 2)
	head, branch := replayed.Checkpoints[0], replayed.Checkpoints[1]
	assert.Equal(t, "replay", branch.Source, "the branch starts with a copy of the chosen checkpoint")
	assert.Equal(t, afterUpper.Checkpoint, branch.Parent)
	assert.Equal(t, branch.Checkpoint, head.Parent, "the replayed step follows it")
	assert.Equal(t, []any{"upper", "tally"}, values()["log"], "tally ran again on the state it had")

	fork := e.wait(alice, "t", map[string]any{"checkpoint": afterUpper.Checkpoint, "input": map[string]any{"text": "forked"}})
	require.Equal(t, server.StatusDone, fork.Status, "%+v", fork.Error)
	assert.Equal(t, "FORKED", values()["text"], "the input was given at the chosen checkpoint")
	assert.Equal(t, []any{"upper", "upper", "tally"}, values()["log"], "a new turn on the state the checkpoint held")
	var after server.History
	e.call("GET", "/v1/threads/t/history", alice, nil, http.StatusOK, &after)
	assert.Greater(t, len(after.Checkpoints), len(history.Checkpoints), "the older checkpoints stay")

	before := e.state(alice, "t").Checkpoint
	e.fails("POST", "/v1/threads/t/runs/wait", alice, map[string]any{"checkpoint": "nope"}, http.StatusNotFound,
		server.ErrorDetail{Code: server.CodeUnknownCheckpt, Message: `thread "t" has no checkpoint "nope"`})
	e.fails("POST", "/v1/threads/t/runs/wait", alice, map[string]any{"checkpoint": strings.Repeat("x", 300)}, http.StatusBadRequest,
		server.ErrorDetail{Code: server.CodeInvalidField, Field: "checkpoint", Message: `field "checkpoint" is 300 bytes, more than a checkpoint id has (256)`})
	assert.Equal(t, before, e.state(alice, "t").Checkpoint, "a refused run changes nothing")
	e.fails("POST", "/v1/threads/t/runs/wait", bob, map[string]any{"checkpoint": afterUpper.Checkpoint}, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "t"`})
}
