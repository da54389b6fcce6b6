package llm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

func TestLookupPrice(t *testing.T) {
	tests := []struct {
		provider llm.Provider
		model    string
		want     llm.Price
		known    bool
	}{
		{llm.ProviderOpenAI, "gpt-4o-mini-2024-07-18", llm.Price{Input: 0.15, CachedInput: 0.075, Output: 0.60}, true},
		{llm.ProviderOpenAI, "gpt-4o", llm.Price{Input: 2.50, CachedInput: 1.25, Output: 10}, true},
		{llm.ProviderOpenAI, "openai/gpt-4.1-mini", llm.Price{Input: 0.40, CachedInput: 0.10, Output: 1.60}, true},
		{llm.ProviderAnthropic, "claude-sonnet-4-5-20250929", llm.Price{Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15}, true},
		{llm.ProviderAnthropic, "claude-opus-4-5", llm.Price{Input: 5, CachedInput: 0.50, CacheWrite: 6.25, Output: 25}, true},
		{llm.ProviderGoogleAI, "gemini-2.5-flash", llm.Price{Input: 0.30, CachedInput: 0.075, Output: 2.50}, true},
		{llm.ProviderOpenAI, "deepseek-reasoner", llm.Price{Input: 0.55, CachedInput: 0.14, Output: 2.19}, true},
		{llm.ProviderOllama, "llama3.1:8b", llm.Price{}, true},
		{llm.ProviderOpenAI, "o30", llm.Price{}, false},
		{llm.ProviderOpenAI, "my-finetune", llm.Price{}, false},
		// Dated snapshots and aliases take the price of the model they pin.
		{llm.ProviderOpenAI, "o3-pro-2025-06-10", llm.Price{Input: 20, CachedInput: 20, Output: 80}, true},
		{llm.ProviderOpenAI, "gpt-5-pro-2025-10-06", llm.Price{Input: 15, CachedInput: 15, Output: 120}, true},
		{llm.ProviderOpenAI, "gpt-5-2025-08-07", llm.Price{Input: 1.25, CachedInput: 0.125, Output: 10}, true},
		{llm.ProviderOpenAI, "GPT-4.1-2025-04-14", llm.Price{Input: 2, CachedInput: 0.50, Output: 8}, true},
		{llm.ProviderAnthropic, "claude-opus-4-1-20250805", llm.Price{Input: 15, CachedInput: 1.50, CacheWrite: 18.75, Output: 75}, true},
		{llm.ProviderAnthropic, "claude-haiku-4-5@20251001", llm.Price{Input: 1, CachedInput: 0.10, CacheWrite: 1.25, Output: 5}, true},
		{llm.ProviderAnthropic, "claude-3-5-haiku-latest", llm.Price{Input: 0.80, CachedInput: 0.08, CacheWrite: 1, Output: 4}, true},
		{llm.ProviderGoogleAI, "models/gemini-2.5-pro", llm.Price{Input: 1.25, CachedInput: 0.31, Output: 10}, true},
		// A snapshot listed with its own price keeps it.
		{llm.ProviderOpenAI, "gpt-4o-2024-05-13", llm.Price{Input: 5, CachedInput: 5, Output: 15}, true},
		{llm.ProviderOpenAI, "gpt-4o-2024-11-20", llm.Price{Input: 2.50, CachedInput: 1.25, Output: 10}, true},
		// Unlisted relatives are unknown, never a cheaper relative's price.
		{llm.ProviderOpenAI, "o3-deep-research", llm.Price{}, false},
		{llm.ProviderOpenAI, "gpt-5-pro-preview", llm.Price{}, false},
		{llm.ProviderOpenAI, "gpt-4o-audio-preview", llm.Price{}, false},
		{llm.ProviderOpenAI, "chatgpt-4o-latest", llm.Price{}, false},
		{llm.ProviderAnthropic, "claude-opus-4-7", llm.Price{}, false},
		{llm.ProviderGoogleAI, "gemini-2.5-flash-preview-09-2025", llm.Price{}, false},
		{llm.ProviderOpenAI, "gpt-4o-mini-2024-07-18-ft-mine", llm.Price{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			p, ok := llm.LookupPrice(tt.provider, tt.model)
			assert.Equal(t, tt.known, ok)
			assert.Equal(t, tt.want, p)
		})
	}
}

func TestSpendString(t *testing.T) {
	one := 0.5
	var s llm.Spend
	assert.Equal(t, "no model calls", s.String())
	s.Add(llm.ModelCall{Model: "gpt-4o", PromptTokens: 100, CachedTokens: 40, CompletionTokens: 10, CostUSD: &one})
	s.Add(llm.ModelCall{Model: "gpt-4o", PromptTokens: 100, Replayed: true, CostUSD: &one})
	s.Add(llm.ModelCall{Model: "gpt-4o", Err: "boom"})
	assert.Equal(t, "1 call, 110 tokens (in 100 of which 40 cached, out 10), $0.5000", s.String(), "replayed and failed calls cost nothing")
	s.Add(llm.ModelCall{Model: "my-model", PromptTokens: 5, CompletionTokens: 5, Estimated: true})
	assert.Equal(t, "2 calls, 120 tokens (in 105 of which 40 cached, out 15), 1 estimated, $0.5000 + unknown (1 call of my-model without a price)", s.String())
}

func TestReadUsageEstimatesWhatIsNotReported(t *testing.T) {
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "four score and seven"}}}
	u := llm.ReadUsage(resp, human("hello there"))
	assert.True(t, u.Estimated)
	assert.Equal(t, llm.EstimateMessages(human("hello there")), u.PromptTokens)
	assert.Equal(t, llm.EstimateTokens("four score and seven"), u.CompletionTokens)
}

// budgetGraph is a one-node graph whose node makes two model calls, each
// reporting 700 prompt and 200 completion tokens.
func budgetGraph(t *testing.T, m llms.Model) *graph.Runnable {
	t.Helper()
	out := graph.NewKey("out", graph.Append[string]())
	g := graph.New("budget", out)
	g.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Command, error) {
		var got []string
		for _, q := range []string{"one", "two"} {
			resp, err := m.GenerateContent(ctx, human(q))
			if err != nil {
				return graph.Command{}, err
			}
			got = append(got, resp.Choices[0].Content)
		}
		return graph.Update(graph.AppendTo(out, got...)), nil
	})
	g.AddEdge(graph.Start, "work")
	g.AddEdge("work", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func usageResponse(s string) *llms.ContentResponse {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: s,
		GenerationInfo: map[string]any{"PromptTokens": 700, "CompletionTokens": 200}}}}
}

// TestBudgetAsks: a run budget that says Ask pauses the run before the
// call that would exceed it; answered with a higher budget, the run goes
// on from its checkpoint without calling the model again for what it
// already had.
func TestBudgetAsks(t *testing.T) {
	inner := &funcModel{reply: func(_ context.Context, n int, _ llms.CallOptions) (*llms.ContentResponse, error) {
		return usageResponse([]string{"", "first", "second"}[n]), nil
	}}
	m := llm.Observe(inner, llm.ModelInfo{Tier: "basic", Model: "scripted"})
	r := budgetGraph(t, m)
	saver := memory.New()
	budget := llm.Budget{Tokens: 800, Ask: true}

	meter := llm.NewMeter(llm.ScopeRun, budget, llm.Spend{}, nil)
	res, err := r.Invoke(llm.WithMeter(t.Context(), meter), graph.Input(), graph.WithSaver(saver), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	q, err := graph.InterruptPayload[llm.BudgetQuestion](res.Interrupts[0])
	require.NoError(t, err)
	assert.Equal(t, llm.ScopeRun, q.Scope)
	assert.Equal(t, 900, q.Spent.Tokens())
	assert.Contains(t, q.Question, "The run budget of 800 tokens would be exceeded")
	assert.Equal(t, 1, inner.Calls())

	// The next run of the thread starts from what the thread spent.
	meter = llm.NewMeter(llm.ScopeRun, budget, meter.Spent(), nil)
	res, err = r.Invoke(llm.WithMeter(t.Context(), meter), nil, graph.WithSaver(saver), graph.Thread("t"),
		graph.Resume(map[string]any{"tokens": 5000}))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, 2, inner.Calls(), "the first call was replayed from the journal")
	assert.Equal(t, 1800, meter.Spent().Tokens())
	assert.Equal(t, 5000, meter.Budget().Tokens)
}

// TestBudgetStopsTheRun: without Ask the node fails with the budget
// error, the checkpoint before it stays, and the thread continues under
// a raised budget.
func TestBudgetStopsTheRun(t *testing.T) {
	inner := &funcModel{reply: func(_ context.Context, n int, _ llms.CallOptions) (*llms.ContentResponse, error) {
		return usageResponse([]string{"", "first", "second"}[n]), nil
	}}
	r := budgetGraph(t, llm.Observe(inner, llm.ModelInfo{Tier: "basic", Model: "scripted"}))
	saver := memory.New()
	meter := llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: 800}, llm.Spend{}, nil)
	_, err := r.Invoke(llm.WithMeter(t.Context(), meter), graph.Input(), graph.WithSaver(saver), graph.Thread("t"))
	var be *llm.BudgetError
	require.True(t, errors.As(err, &be), "got %v", err)
	assert.Equal(t, 800, be.Limit.Tokens)
	snap, err := r.State(t.Context(), "t", graph.WithSaver(saver))
	require.NoError(t, err)
	assert.Equal(t, []string{"work"}, snap.Next, "the node is still to run")

	meter = llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: 2000}, meter.Spent(), nil)
	res, err := r.Invoke(llm.WithMeter(t.Context(), meter), nil, graph.WithSaver(saver), graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, 2, inner.Calls(), "the call made before the stop was not repeated")
}

// TestOwnerBudgetIsShared: two runs under one owner meter share its
// budget.
func TestOwnerBudgetIsShared(t *testing.T) {
	owner := llm.NewMeter(llm.ScopeOwner, llm.Budget{Tokens: 800}, llm.Spend{}, nil)
	inner := &funcModel{reply: func(context.Context, int, llms.CallOptions) (*llms.ContentResponse, error) {
		return usageResponse("ok"), nil
	}}
	m := llm.Observe(inner, llm.ModelInfo{Model: "scripted"})
	a := llm.WithMeter(t.Context(), llm.NewMeter(llm.ScopeRun, llm.Budget{}, llm.Spend{}, owner))
	b := llm.WithMeter(t.Context(), llm.NewMeter(llm.ScopeRun, llm.Budget{}, llm.Spend{}, owner))
	_, err := m.GenerateContent(a, human("x"))
	require.NoError(t, err)
	_, err = m.GenerateContent(b, human("y"))
	var be *llm.BudgetError
	require.True(t, errors.As(err, &be), "got %v", err)
	assert.Equal(t, llm.ScopeOwner, be.Scope)
	assert.Equal(t, 900, owner.Spent().Tokens())
}
