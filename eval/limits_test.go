package eval_test

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

	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

// manyCases is a dataset of n cases, each graded by contains: ok.
func manyCases(n int) string {
	var b strings.Builder
	b.WriteString("graders: [{contains: ok}]\ncases:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: c%d, input: question %d}\n", i, i)
	}
	return b.String()
}

func TestRunHonoursTheConcurrencyLimit(t *testing.T) {
	const limit = 3
	barrier := scripted.NewBarrier(limit) // opens only when 3 calls are in flight at once
	m := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "ok", Wait: barrier.Wait}})
	f, r := workflow(t, staticModels(t, m))
	ds := dataset(t, f, "many.yaml", manyCases(20))
	var mu sync.Mutex
	maxRunning := 0
	res, err := eval.Run(t.Context(), eval.Config{File: f, Runnable: r, Dataset: ds, Concurrency: limit, Progress: func(p eval.Progress) {
		mu.Lock()
		maxRunning = max(maxRunning, p.Running+1)
		mu.Unlock()
	}})
	require.NoError(t, err)
	assert.Equal(t, 20, res.Total.Passed)
	assert.Equal(t, limit, m.MaxInFlight(), "never more than the limit at once, and the limit reached")
	assert.LessOrEqual(t, maxRunning, limit)
}

func TestTheTotalBudgetHoldsOverManyParallelCases(t *testing.T) {
	const cases = 120
	m := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "ok"}})
	f, r := workflow(t, staticModels(t, m))
	ds := dataset(t, f, "many.yaml", manyCases(cases))
	budget := llm.Budget{Tokens: 400}
	res, err := eval.Run(t.Context(), eval.Config{File: f, Runnable: r, Dataset: ds, Concurrency: cases, TotalBudget: budget})
	require.NoError(t, err)
	st := res.Total.Statuses
	assert.Equal(t, cases, st[eval.StatusPassed]+st[eval.StatusOverBudget], st)
	assert.Positive(t, st[eval.StatusPassed])
	assert.Positive(t, st[eval.StatusOverBudget])
	assert.LessOrEqual(t, res.Total.Spend.Tokens(), budget.Tokens, "the total budget is never exceeded")
	assert.LessOrEqual(t, m.Usage().PromptTokens+m.Usage().CompletionTokens, budget.Tokens, "what the model counted too")
	assert.Equal(t, st[eval.StatusPassed], len(m.Calls()), "a case over budget made no call")
	for _, c := range res.Cases {
		for _, tr := range c.Trials {
			if tr.Status == eval.StatusOverBudget {
				assert.Contains(t, tr.Error, "llm: eval budget exceeded")
			}
		}
	}
}

func TestACaseThatFailsTimesOutOrOverspendsIsReportedAndTheOthersGoOn(t *testing.T) {
	never := make(chan struct{})
	m := scripted.New(scripted.Script{
		Rules: []scripted.Rule{
			{PromptContains: "hang", Reply: scripted.Reply{Wait: scripted.Until(never)}},
			{PromptContains: "explode", Reply: scripted.Reply{Err: graph.Permanent(errors.New("the provider refused"))}},
		},
		Default: &scripted.Reply{Text: "ok"},
	})
	f, r := workflow(t, staticModels(t, m))
	ds := dataset(t, f, "mixed.yaml", `
graders: [{contains: ok}]
cases:
  - {id: good, input: a short question}
  - {id: slow, input: please hang}
  - {id: bad, input: explode now}
  - {id: long, input: "`+strings.Repeat("many words here ", 40)+`"}
  - {id: good2, input: another short one}
`)
	custom := eval.GraderFunc{Label: "short", Func: func(_ context.Context, o *eval.Output) (eval.Grade, error) {
		return eval.Grade{Pass: len(o.Answer) < 10, Score: 1}, nil
	}}
	res, err := eval.Run(t.Context(), eval.Config{File: f, Runnable: r, Dataset: ds, Concurrency: 5,
		Timeout: 2 * time.Second, CaseBudget: llm.Budget{Tokens: 80}, Graders: []eval.Grader{custom}})
	require.NoError(t, err)
	got := map[string]*eval.Trial{}
	for _, c := range res.Cases {
		got[c.Case] = c.Trials[0]
	}
	assert.Equal(t, eval.StatusPassed, got["good"].Status)
	assert.Equal(t, eval.StatusPassed, got["good2"].Status)
	assert.Equal(t, eval.StatusTimeout, got["slow"].Status)
	assert.Equal(t, "the run took longer than 2s", got["slow"].Error)
	assert.Equal(t, eval.StatusError, got["bad"].Status)
	assert.Contains(t, got["bad"].Error, "the provider refused")
	assert.Equal(t, eval.StatusOverBudget, got["long"].Status)
	assert.Contains(t, got["long"].Error, "llm: run budget exceeded")
	require.Len(t, got["good"].Grades, 2)
	assert.Equal(t, "short", got["good"].Grades[1].Grader)
	assert.True(t, got["good"].Grades[1].Pass)
}
