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

// TestARunBudgetStopsARunOnTheWorkers: the caller's run budget holds on
// Temporal's workers: what the run spent survives from one step activity
// to the next, and 120 parallel calls (12 tasks of 10) keep within it.
// Before, the workers enforced no budget: all 121 calls were made, 7,602
// tokens of 2,000.
func TestARunBudgetStopsARunOnTheWorkers(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	model := newCountingModel()
	m := llm.Observe(model, llm.ModelInfo{Model: "scripted"})
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
	run := e.runner(r)

	const budget = 2000
	meter := llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: budget}, llm.Spend{Calls: 1, PromptTokens: 100}, nil)
	_, err = run.Invoke(llm.WithMeter(t.Context(), meter), graph.Input(), graph.Thread("b-"+randomHex()))
	var be *llm.BudgetError
	require.True(t, errors.As(err, &be), "got %v", err)
	assert.Equal(t, llm.ScopeRun, be.Scope)
	assert.Equal(t, budget, be.Limit.Tokens)
	spent := 100 + int(model.tokens.Load())
	assert.LessOrEqual(t, spent, budget, "the turn's 100 tokens before and the run's calls")
	assert.Greater(t, spent, budget-200, "the budget was used")
	assert.Less(t, model.calls.Load(), int64(121), "the budget stopped calls")
}
