package anthropictest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/anthropictest"
)

// TestUsageWithCacheReadsAndWrites: Anthropic counts cache reads and
// writes apart from input_tokens; the usage adds them to the prompt
// tokens and prices each at its own rate.
func TestUsageWithCacheReadsAndWrites(t *testing.T) {
	srv := newServer(t, anthropictest.Response{Body: `{"id":"msg_1","type":"message","role":"assistant","model":"` + model +
		`","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":100,"output_tokens":20,` +
		`"cache_read_input_tokens":900,"cache_creation_input_tokens":50}}`})
	m := llm.Observe(newModel(t, srv, "", nil), llm.ModelInfo{Tier: "basic", Model: model, Provider: llm.ProviderAnthropic})
	meter := llm.NewMeter(llm.ScopeRun, llm.Budget{}, llm.Spend{}, nil)
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}
	resp, err := m.GenerateContent(llm.WithMeter(t.Context(), meter), msgs)
	require.NoError(t, err)
	assert.Equal(t, llm.TokenUsage{PromptTokens: 1050, CachedTokens: 900, CacheWriteTokens: 50, CompletionTokens: 20},
		llm.ReadUsage(resp, msgs))
	s := meter.Spent()
	// claude-sonnet-4: $3 input, $0.30 cache read, $3.75 cache write, $15 output per million.
	assert.InDelta(t, (100*3+900*0.30+50*3.75+20*15.0)/1e6, s.CostUSD, 1e-12)
	assert.Equal(t, 900, s.CachedTokens)
}
