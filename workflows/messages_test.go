package workflows_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/workflows"
)

// messagesFile keeps a LangGraph message list: draft writes a message,
// revise writes one of the same id (replacing it) and a removal of the
// user's.
const messagesFile = `apiVersion: coorflow/v1
name: chat
input: topic
state:
  topic: {type: string}
  messages: {type: array, items: {type: object}, reducer: messages}
nodes:
  draft:
    type: router
    routes: [{to: revise}]
    set: {messages: '[{"id": "u1", "type": "human", "content": state.topic}, {"id": "a1", "type": "ai", "content": "first draft"}]'}
  revise:
    type: router
    routes: [{to: end}]
    set: {messages: '[{"id": "a1", "type": "ai", "content": "revised"}, {"id": "u1", "type": "remove"}, {"type": "ai", "content": "no id"}]'}
edges:
  - {from: start, to: draft}
`

// TestAFilesMessagesReducerReplacesByIDAndRemoves: a channel declared
// with reducer messages has LangGraph's add_messages semantics, from a
// node's set and from an update of the thread's state.
func TestAFilesMessagesReducerReplacesByIDAndRemoves(t *testing.T) {
	f, err := workflows.Parse("chat.yaml", []byte(messagesFile))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	in, err := f.Input(r, f.InputChannel(), "graphs")
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(in...), graph.Thread("t"))
	require.NoError(t, err)
	v, _ := res.State.Value("messages")
	require.Len(t, v, 2)
	given, _ := v.([]any)[1].(map[string]any)["id"].(string)
	assert.Len(t, given, 36, "a message without an id is given one, as add_messages does")
	assert.Equal(t, []any{
		map[string]any{"id": "a1", "type": "ai", "content": "revised"},
		map[string]any{"id": given, "type": "ai", "content": "no id"},
	}, v, "a1 replaced in place, u1 removed, the message without an id appended")

	ws, err := r.DecodeInput(map[string]json.RawMessage{"messages": json.RawMessage(`{"id": "a1", "type": "ai", "content": "edited by a client"}`)})
	require.NoError(t, err)
	_, err = r.UpdateState(t.Context(), "t", "", ws)
	require.NoError(t, err)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	v, _ = snap.State.Value("messages")
	assert.Equal(t, []any{
		map[string]any{"id": "a1", "type": "ai", "content": "edited by a client"},
		map[string]any{"id": given, "type": "ai", "content": "no id"},
	}, v)
}

func TestTheMessagesReducerNeedsAListChannel(t *testing.T) {
	_, err := workflows.Parse("bad.yaml", []byte(`apiVersion: coorflow/v1
name: bad
state:
  log: {type: string, reducer: messages}
nodes:
  a: {type: router, routes: [{to: end}]}
edges:
  - {from: start, to: a}
`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.yaml:4")
	assert.Contains(t, err.Error(), "reducer messages needs a channel of type array, but log has type string")
}
