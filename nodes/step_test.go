package nodes_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/nodes/react"
)

// TestStepReadsTheAnswerAfterChattyJSON: a chatty model's answer cites
// "[1]" and shows an example object before the answer; the step finds the
// JSON that matches the answer's schema and makes no "restate" call (the
// first-value extraction took "[1]", failed, and asked again).
func TestStepReadsTheAnswerAfterChattyJSON(t *testing.T) {
	chatty := "I checked the sources [1] and [2]. The API returns {\"status\": \"ok\"} on success.\n\n" +
		"Here is my answer:\n" +
		`{"reasoning": "read both sources", "result": "The API is stable.", "summary": "stable", "confidence": 0.9, "notes": "an extra field"}` +
		"\nLet me know if you need more."
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"researcher": {{Text: chatty}}}})
	agent, err := react.New(react.Config{Name: "researcher", Model: model})
	require.NoError(t, err)
	res, err := nodes.RunStep(t.Context(), nodes.StepRun{Agent: agent, Step: plan.Step{ID: "s1", Title: "check the API"}})
	require.NoError(t, err)
	assert.Equal(t, plan.StepDone, res.Status, res.Error)
	assert.Equal(t, "The API is stable.", res.Output)
	assert.InDelta(t, 0.9, res.Confidence, 1e-9)
	assert.Len(t, model.Calls(), 1, "no restate call")
}
