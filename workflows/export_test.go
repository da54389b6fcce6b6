package workflows_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/workflows"
)

// production is what a run of coor planned: a new agent and a built-in
// one, the request quoted in one step only.
func production() workflows.Production {
	return workflows.Production{
		Name: "bikes", Description: "Bikes, planned once.", Comment: "Exported for a test.\nSecond line.",
		Plan: &plan.Plan{Title: "City bikes", Thought: "Two steps.", Locale: "en-US",
			NewAgentsNeeded: []plan.AgentSpec{{Name: "market_analyst", Role: "Market analyst"}},
			Steps: []plan.Step{
				{ID: "s1", AgentName: "market_analyst", Title: "Study the market", StepType: plan.StepResearch, NeedSearch: true,
					Description: "Study the market for: compare city bikes in Lyon. Keep {{braces}} as they are.",
					Result:      &plan.StepResult{Status: plan.StepDone, Summary: "done"}},
				{ID: "s2", AgentName: "researcher", Title: "Recommend", StepType: plan.StepProcessing, DependsOn: []string{"s1"},
					Description: "Recommend one.\nShort.", Note: "Be brief."},
			}},
		Agents: []factory.Agent{
			{Name: "market_analyst", Role: "Market analyst", Description: "Studies markets.", Tier: "reasoning", Tools: []string{"http_fetch", "ask_human"},
				Prompt: "You study one market at a time.\n\n# Steps\n1. Read.\n2. Reason."},
			factory.DefaultAgents()[0],
		},
		Request: []string{"Compare city bikes in Lyon", "compare city bikes in Lyon", ""},
	}
}

func TestExportWritesAFixedPlanThatLoadsAndRunsOnNewInputWithoutAPlanner(t *testing.T) {
	src, err := workflows.Builtin("coor")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "bikes.yaml")
	out, err := src.Export(path, production())
	require.NoError(t, err)
	text := string(out)
	assert.True(t, strings.HasPrefix(text, "# Exported for a test.\n# Second line.\napiVersion: coorflow/v1\nname: bikes\n"), text)
	assert.Contains(t, text, "input: request # coorflow run --input writes the request; steps read it as {{ state.request }}\n")
	assert.Contains(t, text, "models:\n  basic: {provider: openai, model: gpt-4o-mini}\n", "the source's models")
	assert.Contains(t, text, "tools:\n  web_search:\n    provider: tavily\n    api_key: ${TAVILY_API_KEY}\n    optional: true\n  http_fetch: {}\n  ask_human: {}\nnodes:\n",
		"the tools the agents use, as the source declares them or by default")
	assert.NotContains(t, text, "python", "tools no agent uses are left out")
	assert.NotContains(t, text, "settings:", "the planner's, the review's and the builder's settings are left out")
	assert.Contains(t, text, `description: 'Study the market for: {{ state.request }}. Keep {{ "{{" }}braces}} as they are.'`)
	assert.Contains(t, text, "description: |-\n            Recommend one.\n            Short.\n\n            # Request\n            {{ state.request }}\n")
	assert.Contains(t, text, "        system: |-\n          You study one market at a time.\n")
	assert.Contains(t, text, "      researcher:\n        role: researcher\n")
	assert.NotContains(t, text, "result", "results are left out")
	assert.Contains(t, text, "edges:\n  - {from: start, to: team}\n  - {from: team, to: reporter}\n  - {from: reporter, to: end}\n")

	require.NoError(t, os.WriteFile(path, out, 0o644))
	f, err := workflows.Load(path)
	require.NoError(t, err, "the exported file loads")
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"market_analyst": {stepAnswer(t, "city bikes sell best")},
		"researcher":     {stepAnswer(t, "buy a city bike")},
		"reporter":       {{Text: "# Report\nBuy one."}},
	}})
	r, err := f.Compile(t.Context(), workflows.Env{Models: models(t, model), Store: smem.New(store.Config{})})
	require.NoError(t, err)
	in, err := f.Input(r, f.InputChannel(), "Compare cargo bikes in Bern")
	require.NoError(t, err)
	path2, final, err := runPath(t, r, in)
	require.NoError(t, err)
	assert.Equal(t, []string{"team", "reporter"}, path2)
	assert.Equal(t, []string{"market_analyst", "reporter", "researcher"}, model.Agents())
	assert.Contains(t, model.CallsFor("market_analyst")[0].Prompt(), "Study the market for: Compare cargo bikes in Bern. Keep {{braces}} as they are.")
	assert.Contains(t, model.CallsFor("researcher")[0].Prompt(), "Recommend one.\nShort.\n\n# Request\nCompare cargo bikes in Bern\n")
	assert.Contains(t, nodes.Answer.Get(final), "# Report\nBuy one.")
}

func TestExportRefusesAPlanWithoutSteps(t *testing.T) {
	src, err := workflows.Builtin("coor")
	require.NoError(t, err)
	p := production()
	p.Plan.Steps = nil
	_, err = src.Export("x.yaml", p)
	assert.EqualError(t, err, "workflows: export: the plan has no steps")
}
