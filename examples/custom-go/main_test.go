package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

func TestTheCustomNodeMeasuresAndTheAgentUsesTheCustomTool(t *testing.T) {
	model := scripted.New(demo)
	m, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model}})
	require.NoError(t, err)
	var out strings.Builder
	require.NoError(t, run(t.Context(), &out, "We utilize the engine on every single working day of the week and subsequently we check all of the results.", m, llm.ModelInfo{}))
	assert.Equal(t, `✓ measure
  tool simpler_word → use
  tool simpler_word → then
✓ editor
20 words in 1 sentences
edited: We use the engine every day. Then we check the results.
`, out.String())
	assert.Equal(t, []string{"simpler_word"}, model.CallsFor("editor")[0].ToolNames())
}

func TestShortSentencesSkipTheEditor(t *testing.T) {
	model := scripted.New(scripted.Script{})
	m, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model}})
	require.NoError(t, err)
	var out strings.Builder
	require.NoError(t, run(t.Context(), &out, "Short text. Plain words.", m, llm.ModelInfo{}))
	assert.Equal(t, "✓ measure\n4 words in 2 sentences\n", out.String())
	assert.Empty(t, model.Calls())
}
