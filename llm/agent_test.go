package llm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coorflow/coorflow/llm"
)

func TestAgentLabel(t *testing.T) {
	ctx := t.Context()
	assert.Empty(t, llm.AgentFrom(ctx), "unlabelled context")
	ctx = llm.WithAgent(ctx, "researcher")
	assert.Equal(t, "researcher", llm.AgentFrom(ctx))
	assert.Equal(t, "coder", llm.AgentFrom(llm.WithAgent(ctx, "coder")), "inner label wins")
	assert.Equal(t, "researcher", llm.AgentFrom(ctx), "parent keeps its label")
}

func TestParseTier(t *testing.T) {
	for _, name := range []string{"basic", "reasoning", "vision", "code"} {
		tier, err := llm.ParseTier(name)
		assert.NoError(t, err)
		assert.Equal(t, llm.Tier(name), tier)
	}
	_, err := llm.ParseTier("fast")
	assert.ErrorIs(t, err, llm.ErrUnknownTier)
	assert.ErrorContains(t, err, `"fast"`)
	assert.Equal(t, []llm.Tier{llm.TierBasic, llm.TierReasoning, llm.TierVision, llm.TierCode}, llm.Tiers())
}
