package openaitest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// TestUsageOverTheWire reads cached and reasoning tokens from OpenAI's
// usage object, streamed and not, and prices the call at gpt-4o-mini's
// list price with the cached tokens at the cached price.
func TestUsageOverTheWire(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "streamed"}[stream], func(t *testing.T) {
			srv := newServer(t, openaitest.Response{Text: "42", Usage: &openaitest.Usage{
				PromptTokens: 1000, CachedTokens: 800, CompletionTokens: 200, ReasoningTokens: 50}})
			models := newModels(t, srv, "", nil)
			m, err := models.Model(llm.TierBasic)
			require.NoError(t, err)
			meter := llm.NewMeter(llm.ScopeRun, llm.Budget{}, llm.Spend{}, nil)
			obs := llm.Observe(m, models.Profile(llm.TierBasic).Info(llm.TierBasic))
			var opts []llms.CallOption
			if stream {
				opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, _ []byte) error { return nil }))
			}
			resp, err := obs.GenerateContent(llm.WithMeter(t.Context(), meter), human("hi"), opts...)
			require.NoError(t, err)

			u := llm.ReadUsage(resp, human("hi"))
			assert.Equal(t, llm.TokenUsage{PromptTokens: 1000, CachedTokens: 800, CompletionTokens: 200, ReasoningTokens: 50}, u)
			s := meter.Spent()
			assert.Equal(t, 1, s.Calls)
			assert.Equal(t, 800, s.CachedTokens)
			assert.Equal(t, 50, s.ReasoningTokens)
			assert.Zero(t, s.EstimatedCalls)
			// 200 fresh input at $0.15, 800 cached at $0.075, 200 output at $0.60 per million.
			assert.InDelta(t, (200*0.15+800*0.075+200*0.60)/1e6, s.CostUSD, 1e-12)
		})
	}
}

// TestBudgetStopsBeforeTheNextCall: the first call is made and spends
// more than the budget; the second is not sent, and the error says
// what was spent against which limit.
func TestBudgetStopsBeforeTheNextCall(t *testing.T) {
	srv := newServer(t,
		openaitest.Response{Text: "one", Usage: &openaitest.Usage{PromptTokens: 900, CompletionTokens: 300}},
		openaitest.Text("two"))
	models := newModels(t, srv, "", nil)
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	obs := llm.Observe(m, models.Profile(llm.TierBasic).Info(llm.TierBasic))
	meter := llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: 1100}, llm.Spend{}, nil)
	ctx := llm.WithMeter(t.Context(), meter)

	_, err = obs.GenerateContent(ctx, human("first"))
	require.NoError(t, err)
	_, err = obs.GenerateContent(ctx, human("second"))
	require.ErrorIs(t, err, llm.ErrBudgetExceeded)
	var be *llm.BudgetError
	require.True(t, errors.As(err, &be))
	assert.Equal(t, llm.ScopeRun, be.Scope)
	assert.Equal(t, 1200, be.Spent.Tokens())
	assert.Equal(t, 1100, be.Limit.Tokens)
	assert.ErrorContains(t, err, "llm: run budget exceeded: 1200 tokens and $0.0003 spent of a budget of 1100 tokens; the next model call (about 9 prompt tokens) was not made")
	assert.Len(t, srv.Requests(), 1, "the call over budget never reached the server")
	assert.Equal(t, 1, meter.Spent().Calls)
}

// TestUSDBudgetNeedsAPrice: a dollar budget cannot be kept for a model
// without a price; the call is refused with a message naming the model
// and the fix.
func TestUSDBudgetNeedsAPrice(t *testing.T) {
	srv := newServer(t, openaitest.Text("never sent"))
	models := newModels(t, srv, "", nil)
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	obs := llm.Observe(m, llm.ModelInfo{Tier: "basic", Model: "my-finetune", Provider: llm.ProviderOpenAI})
	ctx := llm.WithMeter(t.Context(), llm.NewMeter(llm.ScopeRun, llm.Budget{USD: 1}, llm.Spend{}, nil))
	_, err = obs.GenerateContent(ctx, human("hi"))
	require.ErrorIs(t, err, llm.ErrUnpriced)
	assert.Contains(t, err.Error(), "model my-finetune has no price; give its price in the workflow file (models.TIER.price")
	assert.Empty(t, srv.Requests())
}

// TestUSDBudgetRefusesAnUnlistedRelative: a dollar budget for a model the
// price table does not list — here a relative of a listed one, which the
// old prefix match priced as its cheaper sibling — is refused, not
// allowed at the sibling's price.
func TestUSDBudgetRefusesAnUnlistedRelative(t *testing.T) {
	srv := newServer(t, openaitest.Text("never sent"))
	models := newModels(t, srv, "", nil)
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	obs := llm.Observe(m, llm.ModelInfo{Tier: "basic", Model: "o3-deep-research", Provider: llm.ProviderOpenAI})
	ctx := llm.WithMeter(t.Context(), llm.NewMeter(llm.ScopeRun, llm.Budget{USD: 1}, llm.Spend{}, nil))
	_, err = obs.GenerateContent(ctx, human("hi"))
	require.ErrorIs(t, err, llm.ErrUnpriced)
	assert.Contains(t, err.Error(), "model o3-deep-research has no price")
	assert.Empty(t, srv.Requests())
}
