package factory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/tools"
)

// answer is a step agent's final JSON answer.
func answer(fact string, confidence float64) scripted.Reply {
	b, _ := json.Marshal(map[string]any{
		"reasoning": "checked two sources for " + fact, "result": "The result is " + fact + ".",
		"summary": "found " + fact, "confidence": confidence, "sources": []string{"https://example.org/" + fact},
	})
	return scripted.Reply{Text: string(b)}
}

// buildReply is the builder's choice for an agent.
func buildReply(name string, toolNames ...string) scripted.Reply {
	if toolNames == nil {
		toolNames = []string{}
	}
	b, _ := json.Marshal(map[string]any{
		"thought": "the " + name + " needs to analyse", "description": "An expert " + name + ".",
		"tier": "reasoning", "tools": toolNames, "brief": "You are the " + name + ". Analyse and report.",
	})
	return scripted.Reply{Text: string(b)}
}

// metaReply is a system prompt that passes metaprompt.Check.
func metaReply(name string) scripted.Reply {
	return scripted.Reply{Text: fmt.Sprintf("You are %s and you analyse one question at a time.\n\n# Steps\n1. Reason about the question first.\n2. Gather facts.\n\n# Output Format\nReasoning first, then the answer.\n\n# Notes\n- Be precise.", name)}
}

// env is a team over a scripted model.
type env struct {
	model *scripted.Model
	store store.Store
	reg   *factory.Registry
	tools *tools.Registry
}

func newEnv(t *testing.T, s store.Store, script scripted.Script) *env {
	t.Helper()
	m := scripted.New(script)
	reg := factory.NewRegistry(s, "acme")
	search := tools.Func("web_search", "Searches the web.", nil, func(ctx context.Context, args json.RawMessage) (string, error) {
		return "1. A result", nil
	})
	tr, err := tools.NewRegistry(search, nodes.AskHumanTool())
	require.NoError(t, err)
	return &env{model: m, store: s, reg: reg, tools: tr}
}

func (e *env) models(t *testing.T) *llm.Models {
	t.Helper()
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{
		llm.TierBasic:     {Model: e.model, Profile: llm.Profile{Model: "scripted-basic"}},
		llm.TierReasoning: {Model: e.model, Profile: llm.Profile{Model: "scripted-reasoning"}},
	})
	require.NoError(t, err)
	return ms
}

// team compiles Start -> team -> End over the env (with a builder of the
// env's model unless cfg has one).
func (e *env) team(t *testing.T, cfg factory.TeamConfig, opts ...graph.Option) *graph.Runnable {
	t.Helper()
	exp, err := metaprompt.New(metaprompt.Config{Model: e.model, ModelName: "scripted-reasoning", Cache: e.store, Owner: "acme"})
	require.NoError(t, err)
	cfg.Registry, cfg.Models, cfg.Tools, cfg.Store = e.reg, e.models(t), e.tools, e.store
	if cfg.Builder == nil {
		cfg.Builder = &factory.Builder{Model: e.model, Tools: e.tools, WritePrompt: factory.ExpandWith(exp, e.tools)}
	}
	node, err := factory.Team(cfg)
	require.NoError(t, err)
	g := graph.New("coor", nodes.Channels()...)
	g.AddNode("team", node)
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile(opts...)
	require.NoError(t, err)
	return r
}

// twoBranches is a 6-step plan: a1 -> a2 -> a3 and b1 -> b2 -> b3, with
// two new agents.
func twoBranches() *plan.Plan {
	step := func(id, agent string, deps ...string) plan.Step {
		return plan.Step{ID: id, AgentName: agent, Title: "Step " + id, Description: "Do " + id + ".", StepType: plan.StepResearch, DependsOn: deps}
	}
	return &plan.Plan{
		Title: "Market and technology", Locale: "en-US",
		NewAgentsNeeded: []plan.AgentSpec{
			{Name: "market_analyst", Role: "market analyst", Capabilities: "market data", Contribution: "market view"},
			{Name: "tech_analyst", Role: "technology analyst", Capabilities: "technical papers", Contribution: "tech view"},
		},
		Steps: []plan.Step{
			step("a1", "market_analyst"), step("a2", "market_analyst", "a1"), step("a3", "researcher", "a2"),
			step("b1", "tech_analyst"), step("b2", "tech_analyst", "b1"), step("b3", "coder", "b2"),
		},
	}
}

// toolResults returns the contents of the tool results in a call.
func toolResults(c scripted.Call) []string {
	var out []string
	for _, m := range c.Messages {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				out = append(out, r.Content)
			}
		}
	}
	return out
}
