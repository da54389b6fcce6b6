package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/workflows"
)

const approveFile = `apiVersion: coorflow/v1
name: approve
config: {reviewer: "ada"}
state:
  draft: {type: string}
  verdict:
    type: object
    properties: {ok: {type: boolean}, note: {type: string}}
    required: [ok]
nodes:
  ask:
    type: interrupt
    payload: '{"question": "Send it?", "draft": state.draft, "to": config.reviewer}'
    output: verdict
edges:
  - {from: start, to: ask}
  - {from: ask, to: end}
`

// TestAnInterruptNodeAsksWithAJSONPayloadAndWritesAnyJSONAnswer: an
// interrupt node pauses the run with its payload's value, and writes the
// answer, an object, to its output channel; an answer that does not fit
// the channel's schema loses nothing: the node asks again, saying why,
// and a fitting answer then goes through.
func TestAnInterruptNodeAsksWithAJSONPayloadAndWritesAnyJSONAnswer(t *testing.T) {
	f, err := workflows.Parse("approve.yaml", []byte(approveFile))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	in, err := f.Input(r, "draft", "Hello")
	require.NoError(t, err)
	thread := graph.Thread("t")

	res, err := r.Invoke(t.Context(), in, thread)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, map[string]any{"question": "Send it?", "draft": "Hello", "to": "ada"}, res.Interrupts[0].Payload)

	res, err = r.Invoke(t.Context(), nil, thread, graph.Resume("yes"))
	require.NoError(t, err, "an answer that does not fit loses nothing")
	require.Equal(t, graph.StatusInterrupted, res.Status, "the run still waits")
	require.Len(t, res.Interrupts, 1)
	again, ok := res.Interrupts[0].Payload.(map[string]any)
	require.True(t, ok, "%#v", res.Interrupts[0].Payload)
	assert.Equal(t, "Send it?", again["question"], "the same question")
	assert.Contains(t, again["error"], "the answer does not fit channel verdict: workflows: node \"ask\" wrote a bad value:")
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, []string{"ask"}, snap.Next)

	res, err = r.Invoke(t.Context(), nil, thread, graph.Resume(map[string]any{"ok": true, "note": "ship it"}))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	v, _ := res.State.Value("verdict")
	assert.Equal(t, map[string]any{"ok": true, "note": "ship it"}, v)
}

// TestAnInterruptNodeAsksAgainOnlyABoundedNumberOfTimes: a client that
// keeps answering what does not fit cannot grow the node's journal
// without end: after 10 such answers the run fails, saying why.
func TestAnInterruptNodeAsksAgainOnlyABoundedNumberOfTimes(t *testing.T) {
	f, err := workflows.Parse("approve.yaml", []byte(approveFile))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	thread := graph.Thread("t")
	res, err := r.Invoke(t.Context(), graph.Input(), thread)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	for i := range 9 {
		res, err = r.Invoke(t.Context(), nil, thread, graph.Resume(i))
		require.NoError(t, err)
		require.Equal(t, graph.StatusInterrupted, res.Status)
		if i == 0 {
			t.Logf("asked again: %v", res.Interrupts[0].Payload)
		}
	}
	_, err = r.Invoke(t.Context(), nil, thread, graph.Resume(9))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `workflows: node "ask": 10 answers in a row do not fit channel verdict`)
}
