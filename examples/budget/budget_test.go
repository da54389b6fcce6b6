// Package budget_test runs examples/budget offline, on its demo script:
// the draft and the review each make one model call, a budget smaller
// than the two stops the run before the review with the budget's error,
// and a run with a raised budget continues the thread from its
// checkpoint.
package budget_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/workflows"
)

func TestTheBudgetExampleStopsAndContinuesOffline(t *testing.T) {
	f, err := workflows.Load("workflow.yaml")
	require.NoError(t, err)
	assert.Equal(t, llm.Budget{Tokens: 20000, USD: 0.05}, f.Budget())
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	require.True(t, ms.Demo, "no provider: the demo script")
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, Getenv: func(string) string { return "" },
		Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	input, err := f.Input(r, f.InputChannel(), "prompt caching")
	require.NoError(t, err)

	small := llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: 60}, llm.Spend{}, nil)
	_, err = r.Invoke(llm.WithMeter(t.Context(), small), input, graph.Thread("t1"))
	var be *llm.BudgetError
	require.True(t, errors.As(err, &be), "got %v", err)
	assert.Equal(t, 1, be.Spent.Calls, "the draft was written")
	assert.Zero(t, be.Spent.CostUSD, "the demo model costs nothing")

	raised := llm.NewMeter(llm.ScopeRun, llm.Budget{Tokens: 1000}, small.Spent(), nil)
	res, err := r.Invoke(llm.WithMeter(t.Context(), raised), nil, graph.Thread("t1"))
	require.NoError(t, err)
	review, _ := res.State.Value("review")
	assert.Contains(t, review, "The draft explains the mechanism")
	assert.Equal(t, 2, raised.Spent().Calls, "the turn's two calls, the draft made once")
}
