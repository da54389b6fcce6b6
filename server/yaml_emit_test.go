package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/server"
	wf "github.com/coorflow/coorflow/workflows"
)

// TestAWorkflowFilesEmitReachesThePlatformCustomModeAsEmitted: the event a
// workflow file's node emits (its emit field) streams in the Platform
// API's custom mode as the value itself, the way a LangGraph node's
// stream writer value does.
func TestAWorkflowFilesEmitReachesThePlatformCustomModeAsEmitted(t *testing.T) {
	f, err := wf.Parse("emitting.yaml", []byte(`apiVersion: coorflow/v1
name: emitting
config: {label: "tick"}
state:
  n: {type: integer}
nodes:
  tick:
    type: router
    emit: '{"stage": config.label, "n": state.n}'
    routes: [{to: end}]
edges:
  - {from: start, to: tick}
`))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), wf.Env{})
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r)})
	id := e.platformThread(alice, nil)
	var got []any
	for _, ev := range e.stream("POST", "/threads/"+id+"/runs/stream", alice, map[string]any{
		"assistant_id": "emitting", "input": map[string]any{}, "stream_mode": "custom",
		"config": map[string]any{"configurable": map[string]any{"label": "from config"}},
	}) {
		if ev.Event == "custom" {
			var v any
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &v))
			got = append(got, v)
		}
	}
	assert.Equal(t, []any{map[string]any{"stage": "from config", "n": float64(0)}}, got)
}

// TestAWorkflowFilesInterruptTakesAPlatformResumeOfAnyJSON: a workflow
// file's interrupt node, served, asks with its JSON payload; a Platform
// resume whose answer does not fit the output channel is asked again
// (the run still waits, the new interrupt says why), and an object answer
// that fits is written to the channel.
func TestAWorkflowFilesInterruptTakesAPlatformResumeOfAnyJSON(t *testing.T) {
	f, err := wf.Parse("approve.yaml", []byte(`apiVersion: coorflow/v1
name: approve
state:
  draft: {type: string}
  verdict: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
nodes:
  ask: {type: interrupt, payload: '{"question": "Send it?", "draft": state.draft}', output: verdict}
edges:
  - {from: start, to: ask}
  - {from: ask, to: end}
`))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), wf.Env{})
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r)})
	id := e.platformThread(alice, nil)

	var out map[string]any
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "approve", "input": map[string]any{"draft": "Hello"}}, http.StatusOK, &out)
	ins := out["__interrupt__"].([]any)
	require.Len(t, ins, 1)
	q := ins[0].(map[string]any)
	assert.Equal(t, map[string]any{"question": "Send it?", "draft": "Hello"}, q["value"])

	out = nil
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "approve", "command": map[string]any{"resume": "yes"}}, http.StatusOK, &out)
	ins = out["__interrupt__"].([]any)
	require.Len(t, ins, 1, "an answer that does not fit: the run still waits")
	again := ins[0].(map[string]any)["value"].(map[string]any)
	assert.Equal(t, "Send it?", again["question"])
	assert.Contains(t, again["error"], "the answer does not fit channel verdict")

	out = nil
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "approve", "command": map[string]any{"resume": map[string]any{"ok": true}}}, http.StatusOK, &out)
	assert.Nil(t, out["__interrupt__"], "%v", out)
	assert.Equal(t, map[string]any{"ok": true}, out["verdict"])
}
