package server_test

import (
	"encoding/json"
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
