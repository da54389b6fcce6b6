package workflows_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/workflows"
)

const budgetFile = `apiVersion: coorflow/v1
name: budgeted
input: text
output: summary
models:
  basic:
    provider: openai
    model: my-finetune
    price: {input: 3, output: 12}
  reasoning:
    provider: openai
    model: gpt-4o
    price: {input: 2, cached_input: 0.5, output: 8}
settings:
  budget: {tokens: 5000, usd: 0.25, on_exceed: ask}
state:
  text: {type: string}
  summary: {type: string}
nodes:
  summarize:
    type: llm
    prompt: "Summarize: {{ state.text }}"
    output: summary
edges:
  - {from: start, to: summarize}
  - {from: summarize, to: end}
`

func TestBudgetAndPricesComeFromTheFile(t *testing.T) {
	f, err := workflows.Parse("budget.yaml", []byte(budgetFile))
	require.NoError(t, err)
	assert.Equal(t, llm.Budget{Tokens: 5000, USD: 0.25, Ask: true}, f.Budget())
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(map[string]string{"OPENAI_API_KEY": "sk"})})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ms.Close() })
	assert.Equal(t, &llm.Price{Input: 3, CachedInput: 3, Output: 12}, ms.Profile(llm.TierBasic).Price, "cached input defaults to the input price")
	assert.Equal(t, &llm.Price{Input: 2, CachedInput: 0.5, Output: 8}, ms.Profile(llm.TierReasoning).Price)
	info := ms.Profile(llm.TierBasic).Info(llm.TierBasic)
	assert.Equal(t, llm.ModelInfo{Tier: "basic", Model: "my-finetune", Provider: llm.ProviderOpenAI, Price: &llm.Price{Input: 3, CachedInput: 3, Output: 12}}, info)

	noBudget, err := workflows.Parse("none.yaml", []byte(strings.Replace(budgetFile, "  budget: {tokens: 5000, usd: 0.25, on_exceed: ask}\n", "  max_turns: 3\n", 1)))
	require.NoError(t, err)
	assert.True(t, noBudget.Budget().IsZero())
}

func TestABadBudgetOrPriceIsRefusedWithItsPlace(t *testing.T) {
	cases := []struct{ name, from, to, want string }{
		{"unknown on_exceed", "on_exceed: ask", "on_exceed: warn", `workflows: budget.yaml:15:48: settings.budget.on_exceed: "warn" is not one of stop, ask`},
		{"negative price", "price: {input: 3, output: 12}", "price: {input: -3, output: 12}", "workflows: budget.yaml:9:20: models.basic.price.input: must be >= 0 but found -3"},
		{"price without output", "price: {input: 3, output: 12}", "price: {input: 3}", `workflows: budget.yaml:9:5: models.basic.price: missing required field "output"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := workflows.Parse("budget.yaml", []byte(strings.Replace(budgetFile, c.from, c.to, 1)))
			require.Error(t, err)
			assert.EqualError(t, err, c.want)
		})
	}
}
