package llm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

// fanOut is a graph whose first node sends n tasks to "call"; each makes
// one model call with opts and appends the answer.
func fanOut(t *testing.T, n int, m llms.Model, opts ...llms.CallOption) *graph.Runnable {
	t.Helper()
	item := graph.NewKey[int]("item")
	out := graph.NewKey("out", graph.Append[string]())
	g := graph.New("fan", item, out)
	g.AddNode("fan", func(context.Context, graph.State) (graph.Command, error) {
		ps := make([]graph.Packet, n)
		for i := range ps {
			ps[i] = graph.To("call", item.Set(i))
		}
		return graph.Send(ps...), nil
	}, graph.Destinations("call"))
	g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
		resp, err := m.GenerateContent(ctx, human(fmt.Sprintf("task %d: summarise", item.Get(s))), opts...)
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(out, resp.Choices[0].Content)), nil
	})
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("call", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// inFlight counts the calls of a scripted model in flight and the most at
// once.
type inFlight struct {
	mu       sync.Mutex
	now, max int
}

func (f *inFlight) wrap(m llms.Model) llms.Model {
	return &funcModel{reply: func(ctx context.Context, _ int, co llms.CallOptions) (*llms.ContentResponse, error) {
		f.mu.Lock()
		f.now++
		f.max = max(f.max, f.now)
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.now--
			f.mu.Unlock()
		}()
		return m.GenerateContent(ctx, human("x"), llms.WithMaxTokens(co.MaxTokens))
	}}
}

// TestParallelCallsKeepTheRunBudget: 120 parallel model calls (a Send
// fan-out) under a run budget spend no more than the budget. Each call's
// prompt and its max_tokens are reserved before it is sent; before the
// reservations, every call was admitted by its prompt alone while the
// others were in flight: the run spent all 120 calls, 7,440 tokens of a
// budget of 2,000, and ended done.
func TestParallelCallsKeepTheRunBudget(t *testing.T) {
	const n, budget = 120, 2000
	reply := strings.Repeat("word ", 40) // 50 completion tokens
	// The latency keeps calls in flight together, as a provider does.
	model := scripted.New(scripted.Script{Default: &scripted.Reply{Text: reply}, Latency: 2 * time.Millisecond})
	m := llm.Observe(model, llm.ModelInfo{Model: "scripted"})
	for _, tt := range []struct {
		name string
		opts []llms.CallOption
	}{
		{"max_tokens", []llms.CallOption{llms.WithMaxTokens(60)}},
		{"allowance", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			meter := llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: budget}, llm.Spend{}, nil)
			_, err := fanOut(t, n, m, tt.opts...).Invoke(llm.WithMeter(t.Context(), meter), graph.Input())
			var be *llm.BudgetError
			require.True(t, errors.As(err, &be), "got %v", err)
			spent := meter.Spent()
			assert.LessOrEqual(t, spent.Tokens(), budget, "spent %s", spent)
			assert.Greater(t, spent.Tokens(), budget-200, "the budget was used, not refused early: %s", spent)
			_, reserved, err := meter.Balance(t.Context())
			require.NoError(t, err)
			assert.Equal(t, llm.Reserved{}, reserved, "every reservation was given back")
		})
	}
}

// TestOwnerBudgetHoldsForParallelRuns: 10 runs of 12 parallel calls each
// under one owner meter spend no more than the owner's budget together
// (before the reservations: 7,440 tokens of 3,000).
func TestOwnerBudgetHoldsForParallelRuns(t *testing.T) {
	const budget = 3000
	model := scripted.New(scripted.Script{Default: &scripted.Reply{Text: strings.Repeat("word ", 40)}, Latency: 2 * time.Millisecond})
	m := llm.Observe(model, llm.ModelInfo{Model: "scripted"})
	owner := llm.NewMeter(llm.ScopeOwner, llm.Budget{Tokens: budget}, llm.Spend{}, nil)
	r := fanOut(t, 12, m, llms.WithMaxTokens(60))
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() {
			run := llm.NewMeter(llm.ScopeRun, llm.Budget{}, llm.Spend{}, owner)
			_, errs[i] = r.Invoke(llm.WithMeter(t.Context(), run), graph.Input())
		})
	}
	wg.Wait()
	stopped := 0
	for _, err := range errs {
		var be *llm.BudgetError
		if errors.As(err, &be) {
			assert.Equal(t, llm.ScopeOwner, be.Scope)
			stopped++
		} else {
			require.NoError(t, err)
		}
	}
	assert.Positive(t, stopped, "the owner's budget stopped some runs")
	assert.LessOrEqual(t, owner.Spent().Tokens(), budget, "spent %s", owner.Spent())
}

// TestACallWithoutMaxTokensIsSentWithTheAllowance: under a budget a call
// that sets no max_tokens is sent with CompletionAllowance, cut to what the
// budget has left after its prompt; one that sets max_tokens keeps it, and
// without a budget nothing is added.
func TestACallWithoutMaxTokensIsSentWithTheAllowance(t *testing.T) {
	var sent []int
	inner := &funcModel{reply: func(_ context.Context, _ int, co llms.CallOptions) (*llms.ContentResponse, error) {
		sent = append(sent, co.MaxTokens)
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "ok",
			GenerationInfo: map[string]any{"PromptTokens": 10, "CompletionTokens": 5}}}}, nil
	}}
	m := llm.Observe(inner, llm.ModelInfo{Model: "scripted"})
	prompt := llm.EstimateMessages(human("hi"))

	_, err := m.GenerateContent(t.Context(), human("hi"))
	require.NoError(t, err)
	free := llm.WithMeter(t.Context(), llm.NewMeter(llm.ScopeRun, llm.Budget{}, llm.Spend{}, nil))
	_, err = m.GenerateContent(free, human("hi"))
	require.NoError(t, err)
	big := llm.WithMeter(t.Context(), llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: 1 << 20}, llm.Spend{}, nil))
	_, err = m.GenerateContent(big, human("hi"))
	require.NoError(t, err)
	_, err = m.GenerateContent(big, human("hi"), llms.WithMaxTokens(50))
	require.NoError(t, err)
	small := llm.WithMeter(t.Context(), llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: 500}, llm.Spend{}, nil))
	_, err = m.GenerateContent(small, human("hi"))
	require.NoError(t, err)
	assert.Equal(t, []int{0, 0, llm.CompletionAllowance, 50, 500 - prompt}, sent)

	// A call whose max_tokens does not fit is not made.
	tight := llm.WithMeter(t.Context(), llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: 100}, llm.Spend{}, nil))
	_, err = m.GenerateContent(tight, human("hi"), llms.WithMaxTokens(100))
	var be *llm.BudgetError
	require.True(t, errors.As(err, &be), "got %v", err)
	assert.Equal(t, prompt, be.Next)
	assert.Equal(t, 100, be.Completion)
	assert.Equal(t, "llm: run budget exceeded: 0 tokens and $0.0000 spent of a budget of 100 tokens; the next model call (about "+
		fmt.Sprint(prompt)+" prompt tokens) was not made", be.Error())
	assert.Len(t, sent, 5)
}

// TestACallWaitsForTheCallsInFlight: 100 parallel calls whose
// reservations do not all fit at once, though what they spend does: the
// calls that do not fit wait for those in flight (none is refused while
// another's reservation may still be given back), all are made, and no
// more are ever in flight than their reservations fit.
func TestACallWaitsForTheCallsInFlight(t *testing.T) {
	var f inFlight
	model := f.wrap(scripted.New(scripted.Script{Default: &scripted.Reply{Text: "done"}}))
	m := llm.Observe(model, llm.ModelInfo{Model: "scripted"})
	prompt := llm.EstimateMessages(human("task 0: summarise"))
	// 100 calls of at most prompt+11 fit, but only about 20 reservations
	// of prompt+100 at once.
	budget := 100*(prompt+llm.EstimateTokens("done")+10) + prompt + 100
	meter := llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: budget}, llm.Spend{}, nil)
	res, err := fanOut(t, 100, m, llms.WithMaxTokens(100)).Invoke(llm.WithMeter(t.Context(), meter), graph.Input())
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, 100, meter.Spent().Calls)
	assert.LessOrEqual(t, meter.Spent().Tokens(), budget)
	assert.LessOrEqual(t, f.max, budget/(prompt+100), "no more calls in flight than their reservations fit")
}

// TestAProviderThatIgnoresMaxTokens overshoots by its completion beyond
// max_tokens, and no more: the documented bound.
func TestAProviderThatIgnoresMaxTokens(t *testing.T) {
	inner := &funcModel{reply: func(_ context.Context, _ int, co llms.CallOptions) (*llms.ContentResponse, error) {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "long",
			GenerationInfo: map[string]any{"PromptTokens": 10, "CompletionTokens": co.MaxTokens + 300}}}}, nil
	}}
	m := llm.Observe(inner, llm.ModelInfo{Model: "scripted"})
	meter := llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: 1000}, llm.Spend{}, nil)
	ctx := llm.WithMeter(t.Context(), meter)
	_, err := m.GenerateContent(ctx, human("hi"))
	require.NoError(t, err)
	_, err = m.GenerateContent(ctx, human("hi"))
	var be *llm.BudgetError
	require.True(t, errors.As(err, &be), "got %v", err)
	assert.Equal(t, 1000+300-(llm.EstimateMessages(human("hi"))-10), meter.Spent().Tokens(),
		"over by the completion beyond max_tokens, less what the prompt estimate had over")
}
