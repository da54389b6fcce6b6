package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/trace"
)

// stepsGraph is the workflow "steps": its node work runs the agent
// "worker" once per plan step, each with the step's id as its run id
// (as examples/coor's plan steps), then once more without one, twice.
func stepsGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"worker": {
		{Text: "Compared."}, {Text: "Recommended."}, {Text: "Checked."}, {Text: "Checked again."},
	}}})
	agent, err := react.New(react.Config{Name: "worker", Model: model, Info: llm.ModelInfo{Tier: "basic", Model: "scripted"},
		SystemPrompt: "You work on a plan step."})
	require.NoError(t, err)
	g := graph.New("steps", questionKey, answerKey)
	g.AddNode("work", func(ctx context.Context, s graph.State) (graph.Command, error) {
		var out string
		for _, run := range []string{"s1-compare", "s2-recommend", "", ""} {
			res, err := agent.Run(ctx, react.Task{Input: "Do " + run, Run: run})
			if err != nil {
				return graph.Command{}, err
			}
			out = res.Output
		}
		return graph.Update(answerKey.Set(out)), nil
	})
	g.AddEdge(graph.Start, "work")
	g.AddEdge("work", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func TestViewerTellsAgentsApartAndSaysUsageOnceInChromium(t *testing.T) {
	e, ru := recordedRun(t, stepsGraph(t), "s", map[string]any{"question": "Plan it."})
	var tl trace.Timeline
	e.call("GET", "/v1/trace/runs/"+ru.ID+"/timeline", alice, nil, http.StatusOK, &tl)
	agents := tl.Steps[0].Nodes[0].Agents
	require.Len(t, agents, 4)
	require.Equal(t, "s1-compare", agents[0].Run)
	var d trace.AgentDetail
	e.call("GET", fmt.Sprintf("/v1/trace/runs/%s/agents/%d", ru.ID, agents[0].ID), alice, nil, http.StatusOK, &d)

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"#token="+alice),
		chromedp.WaitVisible(`button.agent[data-name="worker"][data-status="done"]`),
		chromedp.WaitVisible(`#timeline .run-usage`),
	))
	names, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#timeline button.agent .agent-name")].map((n) => n.textContent)`))
	require.NoError(t, err)
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll(".gantt-row.gantt-agent .gantt-label")].map((n) => n.textContent)`))
	require.NoError(t, err)
	runUsage := text(t, ctx, `#timeline .run-usage`)
	screenshot(t, ctx, "viewer-agents.png")

	assert.Equal(t, []string{"worker · s1-compare", "worker · s2-recommend", "worker #1", "worker #2"}, names,
		"each card says which step it was, or which time")
	assert.Equal(t, names, bars, "so does each time bar")
	assert.Contains(t, runUsage, "Usage 4 calls ·")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(fmt.Sprintf(`button.agent[data-agent-id="%d"]`, agents[0].ID)),
		chromedp.WaitVisible(`#detail .agent-head`),
	))
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#detail .agent-head .facts > span")].map((n) => n.textContent)`))
	require.NoError(t, err)
	screenshot(t, ctx, "viewer-agent-head.png")
	require.Equal(t, 1, d.Usage.Calls)
	assert.Equal(t, []string{"run s1-compare", "tier basic",
		fmt.Sprintf("1 model call · 0 tool calls · %d tokens in, %d out · $0.0000", d.Usage.PromptTokens, d.Usage.CompletionTokens)}, facts,
		"the header says the agent's calls, tokens and cost once, in the singular for one call")
}

func TestViewerSaysOneCallInTheSingularInChromium(t *testing.T) {
	e, ru := recordedRun(t, answerGraph(t, "Noted."), "n", map[string]any{"question": "Note it."})

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"#token="+alice),
		chromedp.WaitVisible(`#timeline .run-usage`),
	))
	runUsage := text(t, ctx, `#timeline .run-usage`)
	screenshot(t, ctx, "viewer-one-call.png")
	assert.Regexp(t, `^Usage 1 call · \d+ tokens in, \d+ out · \$0\.0000$`, runUsage)
}
