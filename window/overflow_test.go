package window_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/window"
)

// overflow is how an OpenAI-compatible provider refuses a long prompt.
var overflow = &llm.APIError{Provider: "openai", StatusCode: 400, Code: "context_length_exceeded",
	Message: "This model's maximum context length is 8192 tokens."}

// agentModel answers researcher-1's calls with replies and the
// summarizer's with a fixed summary.
func agentModel(replies ...scripted.Reply) *scripted.Model {
	return scripted.New(scripted.Script{
		Agents: map[string][]scripted.Reply{"researcher-1": replies},
		Rules:  []scripted.Rule{{Agent: window.DefaultSummarizerAgent, Reply: scripted.Reply{Text: "summary of the earlier work"}}},
	})
}

func TestOverflowSummarizesAndRetriesOnce(t *testing.T) {
	model := agentModel(scripted.Reply{Err: overflow}, scripted.Reply{Text: "Chi wins."})
	b, _ := newBuilder(t, model, nil)
	ctx := llm.WithAgent(t.Context(), "researcher-1")
	resp, res, err := b.Generate(ctx, model, agentRequest(conversation(10, 200), window.Budget{MaxInputTokens: 100_000}))
	require.NoError(t, err)
	assert.Equal(t, "Chi wins.", resp.Choices[0].Content)

	calls := model.CallsFor("researcher-1")
	require.Len(t, calls, 2)
	assert.Less(t, calls[1].PromptTokens, calls[0].PromptTokens/2)
	assert.Equal(t, res.Messages, calls[1].Messages)
	assert.True(t, res.Snapshot.Forced)
	applied := res.Snapshot.PoliciesOf(window.PolicySummarizeHistory)
	require.Len(t, applied, 1)
	assert.Contains(t, applied[0].Detail, "after a context overflow")
	assert.Contains(t, res.Compacted, "history")
	assert.Len(t, model.CallsFor(window.DefaultSummarizerAgent), 1)
}

func TestOverflowTwiceIsAnError(t *testing.T) {
	model := agentModel(scripted.Reply{Err: overflow}, scripted.Reply{Err: overflow})
	b, _ := newBuilder(t, model, nil)
	ctx := llm.WithAgent(t.Context(), "researcher-1")
	_, res, err := b.Generate(ctx, model, agentRequest(conversation(10, 200), window.Budget{MaxInputTokens: 100_000}))
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrContextOverflow)
	var oe *window.OverflowError
	require.ErrorAs(t, err, &oe)
	assert.True(t, oe.Retried)
	assert.Equal(t, "researcher-1", oe.Agent)
	assert.Equal(t, res.Snapshot.TotalTokens, oe.Tokens)
	assert.Len(t, model.CallsFor("researcher-1"), 2, "one retry, no more")
}

func TestOverflowWithNothingToSummarizeIsNotRetried(t *testing.T) {
	model := agentModel(scripted.Reply{Err: overflow})
	b, _ := newBuilder(t, model, nil)
	ctx := llm.WithAgent(t.Context(), "researcher-1")
	_, res, err := b.Generate(ctx, model, agentRequest([]llms.MessageContent{toolCall("c", "f", "{}"), toolResult("c", "f", "x")},
		window.Budget{MaxInputTokens: 100_000}))
	var oe *window.OverflowError
	require.ErrorAs(t, err, &oe)
	assert.False(t, oe.Retried)
	assert.ErrorIs(t, err, llm.ErrContextOverflow)
	assert.Len(t, model.CallsFor("researcher-1"), 1)
	skipped := res.Snapshot.PoliciesOf(window.PolicySkipped)
	require.Len(t, skipped, 1)
	assert.Contains(t, skipped[0].Detail, "nothing to summarize")
}

func TestOtherErrorsAreNotRetried(t *testing.T) {
	limited := &llm.APIError{Provider: "openai", StatusCode: 429, Message: "slow down"}
	model := agentModel(scripted.Reply{Err: limited})
	b, _ := newBuilder(t, model, nil)
	ctx := llm.WithAgent(t.Context(), "researcher-1")
	_, _, err := b.Generate(ctx, model, agentRequest(conversation(10, 200), window.Budget{MaxInputTokens: 100_000}))
	assert.ErrorIs(t, err, limited)
	assert.Len(t, model.CallsFor("researcher-1"), 1)
	assert.Empty(t, model.CallsFor(window.DefaultSummarizerAgent))
}

func TestCallWithOverflowRetryPassesBuildErrors(t *testing.T) {
	model := agentModel(scripted.Reply{Err: overflow})
	boom := errors.New("boom")
	builds := 0
	_, _, err := window.CallWithOverflowRetry(llm.WithAgent(t.Context(), "researcher-1"), model,
		func(_ context.Context, force bool) (window.Result, error) {
			builds++
			if force {
				return window.Result{}, boom
			}
			return window.Result{Messages: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}}, nil
		})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 2, builds)
}
