package eval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/eval"
)

func TestCompareSaysWhatGotBetterOrWorseAndChecksTheGates(t *testing.T) {
	const cases = `
cases:
  - {id: fr, input: France, expected: Paris, graders: [{contains: true}]}
  - {id: pe, input: Peru, expected: Lima, graders: [{contains: true}]}
  - {id: jp, input: Japan, expected: Tokyo, graders: [{contains: true}]}
`
	run := func(label string, kv map[string]string) *eval.Result {
		f, r := workflow(t, staticModels(t, answers(kv)))
		res, err := eval.Run(t.Context(), eval.Config{ID: "e-" + label, Label: label, File: f, Runnable: r, Dataset: dataset(t, f, "c.yaml", cases)})
		require.NoError(t, err)
		return res
	}
	a := run("v1", map[string]string{"France": "Paris", "Peru": "Cusco", "Japan": "Tokyo"})
	b := run("v2", map[string]string{"France": "Lyon", "Peru": "Lima", "Japan": "Tokyo"})
	c := eval.Compare(a, b)
	changes := map[string]string{}
	for _, ch := range c.Cases {
		changes[ch.Case] = ch.Change
	}
	assert.Equal(t, map[string]string{"fr": eval.Worse, "pe": eval.Better, "jp": eval.Same}, changes)
	assert.Equal(t, 1, c.Worse)
	assert.Empty(t, c.Check(eval.Gates{FailUnder: 0.6, MaxRegressions: 1}))
	assert.Equal(t, []string{"the pass rate 66.7% is under 90.0% (--fail-under)", "1 case(s) got worse, more than 0 (--max-regressions)"},
		c.Check(eval.Gates{FailUnder: 0.9, MaxRegressions: 0}))
	table := c.Table()
	assert.Contains(t, table, "A: e-v1 (v1)   B: e-v2 (v2)")
	assert.Regexp(t, `fr\s+worse\s+1/1→0/1`, table)
	assert.Regexp(t, `TOTAL\s+1 better, 1 worse\s+67%→67%`, table)
}
