package workflows_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/workflows"
)

func reply(t *testing.T, v any) scripted.Reply {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return scripted.Reply{Text: string(b)}
}

func stepAnswer(t *testing.T, fact string) scripted.Reply {
	return reply(t, map[string]any{"reasoning": "looked it up", "result": "Result: " + fact, "summary": "found " + fact,
		"confidence": 0.9, "sources": []string{"https://example.org/" + fact}})
}

func models(t *testing.T, m *scripted.Model) *llm.Models {
	t.Helper()
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: m, Profile: llm.Profile{Model: "scripted"}}})
	require.NoError(t, err)
	return ms
}

func handoff() scripted.Reply {
	return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "handoff_to_planner", Arguments: `{"task":"Compare two engines","locale":"en-US"}`}}}
}

func TestCoorRunsFromRequestToReportWithDynamicAgents(t *testing.T) {
	plan := map[string]any{
		"title": "Engines", "thought": "two angles", "locale": "en-US", "has_enough_context": false,
		"new_agents_needed": []any{map[string]any{"name": "perf_analyst", "role": "performance analyst", "capabilities": "benchmarks", "contribution": "numbers"}},
		"steps": []any{
			map[string]any{"id": "s1", "agent_name": "perf_analyst", "title": "Measure", "description": "Measure both.", "step_type": "processing", "need_search": false, "depends_on": []string{}},
			map[string]any{"id": "s2", "agent_name": "researcher", "title": "Survey", "description": "Survey users.", "step_type": "research", "need_search": true, "depends_on": []string{}},
		},
	}
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"coordinator": {handoff()},
		"planner":     {reply(t, plan)},
		"builder:perf_analyst": {reply(t, map[string]any{"thought": "needs code", "description": "Measures performance.",
			"tier": "code", "tools": []string{"python"}, "brief": "Benchmark and report numbers."})},
		"metaprompt:perf_analyst": {{Text: "You measure the performance of software systems.\n\n# Steps\n1. Reason about what to measure.\n\n# Output Format\nReasoning, then numbers.\n\n# Notes\n- Show your data."}},
		"perf_analyst":            {stepAnswer(t, "FAST")},
		"researcher":              {stepAnswer(t, "LIKED")},
		"reporter":                {{Text: "# Report\nBoth are fine."}},
	}})
	py := tools.Func("python", "Runs Python.", nil, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	reg, err := tools.NewRegistry(py)
	require.NoError(t, err)
	st := smem.New(store.Config{})
	r, err := workflows.Coor(t.Context(), workflows.Env{Models: models(t, model), Store: st, Owner: "acme", Getenv: env(nil),
		Graph: []graph.Option{graph.WithSaver(memory.New())}}, workflows.WithTools(reg))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := r.Invoke(ctx, graph.Input(nodes.Input.Set("Compare two engines please")), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status, "the plan waits for review")
	assert.Equal(t, "Engines", res.Interrupts[0].Payload.(nodes.ReviewRequest).Plan.Title)

	var path []string
	for ev, err := range r.Stream(ctx, nil, graph.Thread("t"), graph.Resume("accept")) {
		require.NoError(t, err)
		if ev.Kind == graph.EventNodeStart && !strings.Contains(ev.Path, "step:") {
			path = append(path, ev.Node)
		}
		if ev.Kind == graph.EventRunEnd {
			res.State = ev.State
		}
	}
	assert.Equal(t, []string{"review", "team", "planner", "reporter"}, path)
	assert.Equal(t, "# Report\nBoth are fine.\n\n## References\n[1] https://example.org/FAST\n[2] https://example.org/LIKED", nodes.Answer.Get(res.State))
	assert.Len(t, nodes.Findings.Get(res.State), 2)
	assert.Len(t, model.CallsFor("planner"), 1, "the second visit to the planner used no model: one iteration")
	rep := model.CallsFor("reporter")[0].Prompt()
	assert.Contains(t, rep, "Result: FAST", "the reporter read the full output from the board")
	assert.NotContains(t, model.CallsFor("planner")[0].Prompt(), "please", "the planner sees the handed-off task, not the chat")
}

func TestResearchRunsStepsOneAtATimeThroughTheRouter(t *testing.T) {
	plan := map[string]any{
		"title": "Rates", "thought": "t", "locale": "en-US", "has_enough_context": false, "new_agents_needed": []any{},
		"steps": []any{
			map[string]any{"id": "s1", "agent_name": "researcher", "title": "Find", "description": "Find rates.", "step_type": "research", "need_search": true, "depends_on": []string{}},
			map[string]any{"id": "s2", "agent_name": "coder", "title": "Compute", "description": "Average them.", "step_type": "processing", "need_search": false, "depends_on": []string{"s1"}},
		},
	}
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"coordinator": {handoff()},
		"planner":     {reply(t, plan)},
		"researcher":  {stepAnswer(t, "RATES")},
		"coder":       {stepAnswer(t, "AVERAGE")},
		"reporter":    {{Text: "# Rates report"}},
	}})
	var searched []string
	search := tools.Func("web_search", "Searches.", json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			searched = append(searched, string(args))
			return "1. Rates are 4%", nil
		})
	reg, err := tools.NewRegistry(search)
	require.NoError(t, err)
	r, err := workflows.Research(t.Context(), workflows.Env{Models: models(t, model), Getenv: env(nil), AutoAccept: true}, workflows.WithTools(reg))
	require.NoError(t, err)

	var path []string
	var final graph.State
	for ev, err := range r.Stream(t.Context(), graph.Input(nodes.Input.Set("What are rates?"))) {
		require.NoError(t, err)
		if ev.Kind == graph.EventNodeStart {
			path = append(path, ev.Node)
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	assert.Equal(t, []string{"coordinator", "background_investigator", "planner", "human_feedback",
		"research_team", "researcher", "research_team", "coder", "research_team", "planner", "reporter"}, path)
	assert.Equal(t, []string{`{"query":"Compare two engines"}`}, searched)
	assert.Contains(t, model.CallsFor("planner")[0].Prompt(), "Rates are 4%", "the background reached the planner")
	assert.Contains(t, model.CallsFor("coder")[0].Prompt(), "Result: RATES", "s2 got s1's result")
	assert.Equal(t, "# Rates report\n\n## References\n[1] https://example.org/RATES\n[2] https://example.org/AVERAGE", nodes.Answer.Get(final))
}
