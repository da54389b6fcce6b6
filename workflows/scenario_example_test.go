package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/workflows"
)

// TestTheLangGraphScenarioExampleRunsToItsFinalMessage runs
// examples/langgraph-scenario: its custom events carry the run's config,
// the model is asked in the configured tone, the run pauses with a JSON
// payload, and a JSON answer leads to the final message.
func TestTheLangGraphScenarioExampleRunsToItsFinalMessage(t *testing.T) {
	f, err := workflows.Load("../examples/langgraph-scenario/workflow.yaml")
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"write": {{Text: "Graphs add up."}}}})
	r, err := f.Compile(t.Context(), workflows.Env{Models: models(t, model), Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	c, _, err := runs.ParseConfig([]byte(`{"tone": "formal", "delay": 0.01}`))
	require.NoError(t, err)
	in, err := f.Input(r, f.InputChannel(), "graph engines")
	require.NoError(t, err)

	var custom []any
	run := func(in []graph.Write, opts ...graph.Option) graph.State {
		var final graph.State
		for ev, err := range r.Stream(t.Context(), in, append(opts, graph.Thread("t"), c.Option())...) {
			require.NoError(t, err)
			switch ev.Kind {
			case graph.EventCustom:
				if ev.Name() != "custom" {
					continue // coorflow's own events (model calls), not the workflow's
				}
				custom = append(custom, ev.Data)
			case graph.EventRunEnd:
				final = ev.State
			}
		}
		return final
	}
	run(in)
	assert.Contains(t, model.CallsFor("write")[0].Prompt(), "In a formal tone, write one sentence about graph engines.")
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, map[string]any{"question": "Publish this draft?", "draft": "Graphs add up."}, snap.Interrupts[0].Payload)

	final := run(nil, graph.Resume(map[string]any{"approved": true, "note": "fine"}))
	v, _ := final.Value("final")
	assert.Equal(t, "Published: Graphs add up.", v)
	msgs, _ := final.Value("messages")
	require.Len(t, msgs, 2)
	humanID, _ := msgs.([]any)[0].(map[string]any)["id"].(string)
	assert.Len(t, humanID, 36, "a message without an id gets one, as add_messages gives it")
	assert.Equal(t, []any{
		map[string]any{"id": humanID, "type": "human", "content": "graph engines"},
		map[string]any{"id": "draft", "type": "ai", "content": "Published: Graphs add up."},
	}, msgs, "LangGraph's message list: the final message replaced the draft's, of the same id")
	assert.Equal(t, []any{
		map[string]any{"stage": "started", "tone": "formal"},
		map[string]any{"stage": "finished", "approved": true},
	}, custom)
}
