package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/server"
	wf "github.com/coorflow/coorflow/workflows"
)

// TestAPlatformStateUpdateReplacesAMessageOfItsID: a workflow file's
// channel with reducer messages, served: a client's state update with a
// message of an existing id replaces it, a remove message removes one,
// as on LangGraph's server.
func TestAPlatformStateUpdateReplacesAMessageOfItsID(t *testing.T) {
	f, err := wf.Parse("chat.yaml", []byte(`apiVersion: coorflow/v1
name: chat
state:
  messages: {type: array, items: {type: object}, reducer: messages}
nodes:
  reply:
    type: router
    routes: [{to: end}]
    set: {messages: '{"id": "a1", "type": "ai", "content": "hello"}'}
edges:
  - {from: start, to: reply}
`))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), wf.Env{})
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r)})
	id := e.platformThread(alice, nil)
	var out map[string]any
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "chat",
		"input": map[string]any{"messages": []any{map[string]any{"id": "h1", "type": "human", "content": "hi"}}}}, http.StatusOK, &out)
	assert.Equal(t, []any{
		map[string]any{"id": "h1", "type": "human", "content": "hi"},
		map[string]any{"id": "a1", "type": "ai", "content": "hello"},
	}, out["messages"])

	e.call("POST", "/threads/"+id+"/state", alice, map[string]any{"values": map[string]any{"messages": []any{
		map[string]any{"id": "a1", "type": "ai", "content": "hello, edited"},
		map[string]any{"id": "h1", "type": "remove"},
	}}}, http.StatusOK, nil)
	var st map[string]any
	e.call("GET", "/threads/"+id+"/state", alice, nil, http.StatusOK, &st)
	assert.Equal(t, []any{map[string]any{"id": "a1", "type": "ai", "content": "hello, edited"}}, st["values"].(map[string]any)["messages"])
}
