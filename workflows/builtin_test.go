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
	"github.com/coorflow/coorflow/workflows"
)

func TestTheBuiltinFilesLoadToTheGraphsOfTheGoWorkflows(t *testing.T) {
	ms := staticModels(t, scripted.New(scripted.Script{}))
	goWorkflows := map[string]func(workflows.Config) (*graph.Runnable, error){
		"research": workflows.Research,
		"coor":     workflows.Coor,
	}
	require.ElementsMatch(t, []string{"research", "coor"}, workflows.Builtins())
	for _, name := range workflows.Builtins() {
		t.Run(name, func(t *testing.T) {
			f, err := workflows.Builtin(name)
			require.NoError(t, err)
			fromFile, err := f.Compile(t.Context(), workflows.Env{Models: ms})
			require.NoError(t, err)
			fromGo, err := goWorkflows[name](workflows.Config{Models: ms})
			require.NoError(t, err)
			assert.Equal(t, fromGo.Mermaid(), fromFile.Mermaid())
			assert.Equal(t, fromGo.Name(), fromFile.Name())
			var goChannels, fileChannels []string
			for _, c := range fromGo.Channels() {
				goChannels = append(goChannels, c.Name()+" "+c.Reducer()+" "+c.ValueType().String())
			}
			for _, c := range fromFile.Channels() {
				fileChannels = append(fileChannels, c.Name()+" "+c.Reducer()+" "+c.ValueType().String())
			}
			assert.Equal(t, goChannels, fileChannels)
		})
	}
	_, err := workflows.Builtin("deep")
	assert.EqualError(t, err, `workflows: unknown built-in workflow "deep" (built in: coor, research)`)
}

// coorScript answers every agent of the coor workflow once.
func coorScript(t *testing.T) scripted.Script {
	plan := map[string]any{
		"title": "Engines", "thought": "two angles", "locale": "en-US", "has_enough_context": false,
		"new_agents_needed": []any{map[string]any{"name": "perf_analyst", "role": "performance analyst", "capabilities": "benchmarks", "contribution": "numbers"}},
		"steps": []any{
			map[string]any{"id": "s1", "agent_name": "perf_analyst", "title": "Measure", "description": "Measure both.", "step_type": "processing", "need_search": false, "depends_on": []string{}},
			map[string]any{"id": "s2", "agent_name": "researcher", "title": "Survey", "description": "Survey users.", "step_type": "research", "need_search": false, "depends_on": []string{}},
		},
	}
	return scripted.Script{Agents: map[string][]scripted.Reply{
		"coordinator": {handoffReply()},
		"planner":     {jsonReply(t, plan)},
		"builder:perf_analyst": {jsonReply(t, map[string]any{"thought": "needs code", "description": "Measures performance.",
			"tier": "code", "tools": []string{"python"}, "brief": "Benchmark and report numbers."})},
		"metaprompt:perf_analyst": {{Text: "You measure the performance of software systems.\n\n# Steps\n1. Reason about what to measure.\n\n# Output Format\nReasoning, then numbers.\n\n# Notes\n- Show your data."}},
		"perf_analyst":            {answerReply(t, "FAST")},
		"researcher":              {answerReply(t, "LIKED")},
		"reporter":                {{Text: "# Report\nBoth are fine."}},
	}}
}

// runCoor runs a coor graph to its review, accepts the plan, and returns
// the nodes that ran and the answer.
func runCoor(t *testing.T, r *graph.Runnable) ([]string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var path []string
	record := func(ev graph.Event) {
		if ev.Kind == graph.EventNodeStart && !strings.Contains(ev.Path, "step:") {
			path = append(path, ev.Node)
		}
	}
	for ev, err := range r.Stream(ctx, graph.Input(nodes.Input.Set("Compare two engines please")), graph.Thread("t")) {
		require.NoError(t, err)
		record(ev)
	}
	var answer string
	for ev, err := range r.Stream(ctx, nil, graph.Thread("t"), graph.Resume("accept")) {
		require.NoError(t, err)
		record(ev)
		if ev.Kind == graph.EventRunEnd {
			answer = nodes.Answer.Get(ev.State)
		}
	}
	return path, answer
}

func TestTheCoorFileRunsLikeTheGoCoorWorkflow(t *testing.T) {
	newModels := func() *llm.Models { return staticModels(t, scripted.New(coorScript(t))) }
	fromGo, err := workflows.Coor(workflows.Config{Models: newModels(), Tools: shout(t), Store: smem.New(store.Config{}),
		Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	goPath, goAnswer := runCoor(t, fromGo)

	f, err := workflows.Builtin("coor")
	require.NoError(t, err)
	fromFile, err := f.Compile(t.Context(), workflows.Env{Models: newModels(), Store: smem.New(store.Config{}),
		Getenv: env(nil), Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	filePath, fileAnswer := runCoor(t, fromFile)

	assert.Equal(t, []string{"coordinator", "planner", "review", "review", "team", "planner", "reporter"}, goPath)
	assert.Equal(t, goPath, filePath)
	assert.Equal(t, "# Report\nBoth are fine.\n\n## References\n[1] https://example.org/FAST\n[2] https://example.org/LIKED", goAnswer)
	assert.Equal(t, goAnswer, fileAnswer)
}

// The helpers below are this file's own, so that it does not depend on
// the Go workflows' tests.

func staticModels(t *testing.T, m *scripted.Model) *llm.Models {
	t.Helper()
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: m, Profile: llm.Profile{Model: "scripted"}}})
	require.NoError(t, err)
	return ms
}

func jsonReply(t *testing.T, v any) scripted.Reply {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return scripted.Reply{Text: string(b)}
}

func answerReply(t *testing.T, fact string) scripted.Reply {
	return jsonReply(t, map[string]any{"reasoning": "looked it up", "result": "Result: " + fact, "summary": "found " + fact,
		"confidence": 0.9, "sources": []string{"https://example.org/" + fact}})
}

func handoffReply() scripted.Reply {
	return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "handoff_to_planner", Arguments: `{"task":"Compare two engines","locale":"en-US"}`}}}
}
