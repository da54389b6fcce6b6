package temporalrun_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/runs/accounts"
)

// countingModel is a scripted model answering 50 completion tokens that
// adds up the tokens its calls report.
type countingModel struct {
	llms.Model
	tokens, calls atomic.Int64
}

func newCountingModel() *countingModel {
	return &countingModel{Model: scripted.New(scripted.Script{Default: &scripted.Reply{Text: strings.Repeat("word ", 40)}})}
}

func (m *countingModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	resp, err := m.Model.GenerateContent(ctx, msgs, opts...)
	if err == nil {
		u := llm.ReadUsage(resp, msgs)
		m.tokens.Add(int64(u.PromptTokens + u.CompletionTokens))
		m.calls.Add(1)
	}
	return resp, err
}

// callNode is a node that makes calls model calls at once.
func callNode(m llms.Model, calls int) graph.NodeFunc {
	return func(ctx context.Context, _ graph.State) (graph.Command, error) {
		errs := make([]error, calls)
		var wg sync.WaitGroup
		for j := range calls {
			wg.Go(func() {
				ctx := graph.WithScope(ctx, fmt.Sprintf("c%d", j))
				_, errs[j] = m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman,
					fmt.Sprintf("call %d: summarise", j))}, llms.WithMaxTokens(60))
			})
		}
		wg.Wait()
		return graph.Command{}, errors.Join(errs...)
	}
}

// budgetGraph is a graph that makes one model call, then 120 at once (12
// tasks of 10), on m.
func budgetGraph(t *testing.T, m llms.Model) *graph.Runnable {
	t.Helper()
	item := graph.NewKey[int]("item")
	g := graph.New("budget-"+randomHex(), item)
	g.AddNode("one", callNode(m, 1))
	g.AddNode("fan", func(context.Context, graph.State) (graph.Command, error) {
		ps := make([]graph.Packet, 12)
		for i := range ps {
			ps[i] = graph.To("call", item.Set(i))
		}
		return graph.Send(ps...), nil
	}, graph.Destinations("call"))
	g.AddNode("call", callNode(m, 10))
	g.AddEdge(graph.Start, "one")
	g.AddEdge("one", "fan")
	g.AddEdge("call", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// TestARunBudgetStopsARunOnTheWorkers: the caller's run budget holds on
// Temporal's workers: what the run spent survives from one step activity
// to the next, and 120 parallel calls (12 tasks of 10) keep within it.
// Before, the workers enforced no budget: all 121 calls were made, 7,602
// tokens of 2,000.
func TestARunBudgetStopsARunOnTheWorkers(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	model := newCountingModel()
	run := e.runner(budgetGraph(t, llm.Observe(model, llm.ModelInfo{Model: "scripted"})))

	const budget = 2000
	meter := llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: budget}, llm.Spend{Calls: 1, PromptTokens: 100}, nil)
	_, err := run.Invoke(llm.WithMeter(t.Context(), meter), graph.Input(), graph.Thread("b-"+randomHex()))
	var be *llm.BudgetError
	require.True(t, errors.As(err, &be), "got %v", err)
	assert.Equal(t, llm.ScopeRun, be.Scope)
	assert.Equal(t, budget, be.Limit.Tokens)
	spent := 100 + int(model.tokens.Load())
	t.Logf("spent %d of %d tokens in %d calls", spent, budget, model.calls.Load())
	assert.LessOrEqual(t, spent, budget, "the turn's 100 tokens before and the run's calls")
	assert.Greater(t, spent, budget-200, "the budget was used")
}

// TestAnOwnerBudgetHoldsOnTheWorkers: an owner's budget kept in the
// saver's database (as the server keeps it) holds on the workers.
func TestAnOwnerBudgetHoldsOnTheWorkers(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	model := newCountingModel()
	run := e.runner(budgetGraph(t, llm.Observe(model, llm.ModelInfo{Model: "scripted"})))

	const budget = 2000
	owners := runs.NewOwnerBudgets(accounts.Of(e.saver), func(context.Context, string) (llm.Spend, error) {
		return llm.Spend{Calls: 1, PromptTokens: 300}, nil
	})
	require.True(t, owners.Shared())
	owner, err := owners.Meter(t.Context(), "ann-"+randomHex(), llm.Budget{Tokens: budget})
	require.NoError(t, err)
	meter := llm.NewMeter(llm.ScopeRun, llm.Budget{}, llm.Spend{}, owner)
	_, err = run.Invoke(llm.WithMeter(t.Context(), meter), graph.Input(), graph.Thread("b-"+randomHex()))
	var be *llm.BudgetError
	require.True(t, errors.As(err, &be), "got %v", err)
	assert.Equal(t, llm.ScopeOwner, be.Scope)
	spent, _, err := owner.Balance(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 300+int(model.tokens.Load()), spent.Tokens(), "the workers counted their calls in the owner's account")
	assert.LessOrEqual(t, spent.Tokens(), budget)
	assert.Greater(t, spent.Tokens(), budget-200, "the budget was used")
}
