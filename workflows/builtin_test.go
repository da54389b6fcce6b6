package workflows_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/workflows"
)

// TestTheGoConstructorsCompileTheBuiltinFiles checks that Research and
// Coor are their files: the same graph as Builtin compiles, drawn as the
// hand-wired Go workflows drew it before the files became their one
// definition (testdata/builtin/*.mmd), with the channels of the node
// types each file uses.
func TestTheGoConstructorsCompileTheBuiltinFiles(t *testing.T) {
	ms := staticModels(t, scripted.New(scripted.Script{}))
	constructors := map[string]func(context.Context, workflows.Env, ...workflows.LoadOption) (*graph.Runnable, error){
		"research": workflows.Research,
		"coor":     workflows.Coor,
	}
	channels := map[string][]string{
		"research": {"input", "messages", "request", "locale", "background", "plan", "plan_iterations", "feedback", "current_step", "findings", "answer", "turn", "turns"},
		"coor":     {"input", "messages", "request", "locale", "background", "plan", "plan_iterations", "feedback", "findings", "answer", "turn", "turns"},
	}
	require.ElementsMatch(t, []string{"research", "coor"}, workflows.Builtins())
	for _, name := range workflows.Builtins() {
		t.Run(name, func(t *testing.T) {
			fromGo, err := constructors[name](t.Context(), workflows.Env{Models: ms})
			require.NoError(t, err)
			golden, err := os.ReadFile("testdata/builtin/" + name + ".mmd")
			require.NoError(t, err)
			assert.Equal(t, string(golden), fromGo.Mermaid())
			assert.Equal(t, name, fromGo.Name())
			var got []string
			for _, c := range fromGo.Channels() {
				got = append(got, c.Name())
			}
			assert.Equal(t, channels[name], got)

			f, err := workflows.Builtin(name)
			require.NoError(t, err)
			fromFile, err := f.Compile(t.Context(), workflows.Env{Models: ms})
			require.NoError(t, err)
			assert.Equal(t, fromGo.Mermaid(), fromFile.Mermaid())
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

// TestATeamNodeSaysItStartsTasks: runners that send tasks to other
// processes (Temporal) learn which nodes start them from the graph.
func TestATeamNodeSaysItStartsTasks(t *testing.T) {
	ms := staticModels(t, scripted.New(scripted.Script{}))
	coor, err := workflows.Coor(t.Context(), workflows.Env{Models: ms})
	require.NoError(t, err)
	assert.Equal(t, []string{"team"}, coor.TaskNodes())
	research, err := workflows.Research(t.Context(), workflows.Env{Models: ms})
	require.NoError(t, err)
	assert.Empty(t, research.TaskNodes(), "the research team runs one step at a time, as nodes")
}
