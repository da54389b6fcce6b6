package eval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/eval"
)

func TestRunGradesEveryCaseAndAnswersQuestions(t *testing.T) {
	f, r := workflow(t, staticModels(t, answers(map[string]string{
		"capital of France": "Paris.",
		"2+2":               "4",
		"approve":           "Approved draft.",
	})))
	ds := dataset(t, f, "cases.yaml", `
graders:
  - {name: nonempty, expr: 'len(state.answer) > 0'}
cases:
  - id: france
    input: What is the capital of France?
    expected: Paris
    graders: [{contains: true}]
  - id: sum
    input: What is 2+2?
    graders: [{exact: "4"}]
  - id: wrong
    input: What is the capital of Peru?
    graders: [{contains: Lima}]
  - id: asks
    input: please approve this
    answers: {approve: yes}
    graders: [{expr: 'state.verdict == "yes"'}]
  - id: waits
    input: approve it, no answer
`)
	res, err := eval.Run(t.Context(), eval.Config{File: f, Runnable: r, Workflow: "echo", Dataset: ds, Repeats: 2, Concurrency: 3})
	require.NoError(t, err)
	by := map[string]eval.CaseResult{}
	for _, c := range res.Cases {
		by[c.Case] = c
	}
	assert.Equal(t, 2, by["france"].Passed)
	assert.Equal(t, 2, by["sum"].Passed)
	assert.Equal(t, 0, by["wrong"].Passed)
	assert.Equal(t, 2, by["wrong"].Statuses[eval.StatusFailed])
	assert.Contains(t, by["wrong"].Trials[0].Grades[1].Reason, `missing "Lima"`)
	assert.Equal(t, 2, by["asks"].Passed, by["asks"].Trials[0].Error)
	assert.Equal(t, 2, by["waits"].Statuses[eval.StatusWaiting])
	assert.Contains(t, by["waits"].Trials[0].Error, "waits for an answer at [approve]")
	assert.Equal(t, 10, res.Total.Trials)
	assert.Equal(t, 6, res.Total.Passed)
	assert.InDelta(t, 0.6, res.Total.PassRate, 1e-9)
	assert.Less(t, res.Total.PassCI[0], 0.6)
	assert.Greater(t, res.Total.PassCI[1], 0.6)
	assert.Positive(t, res.Total.Spend.Tokens())
	t.Log("\n" + res.Table())
}
