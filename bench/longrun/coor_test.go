package longrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
	"github.com/coorflow/coorflow/workflows"
)

// coorSearches is how many searches each research step makes before it
// answers.
const coorSearches = 4

// runCoor runs the coor workflow on the scripted model: a plan of three
// research steps, each searching coorSearches times (results of about
// 3,000 tokens) before it answers, then the report. It returns the model.
func runCoor(t testing.TB) *scripted.Model {
	t.Helper()
	js := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	var steps []any
	for i := 1; i <= 3; i++ {
		steps = append(steps, map[string]any{"id": fmt.Sprintf("s%d", i), "agent_name": "researcher", "title": fmt.Sprintf("Angle %d", i),
			"description": fmt.Sprintf("Research angle %d of the engines.", i), "step_type": "research", "need_search": true, "depends_on": []string{}})
	}
	plan := js(map[string]any{"title": "Engines", "thought": "three angles", "locale": "en-US", "has_enough_context": false,
		"new_agents_needed": []any{}, "steps": steps})
	searched := func(c scripted.Call) int {
		n := 0
		for _, m := range c.Messages {
			for _, p := range m.Parts {
				if r, ok := p.(llms.ToolCallResponse); ok && r.Name == "web_search" {
					n++
				}
			}
		}
		return n
	}
	model := scripted.New(scripted.Script{
		Agents: map[string][]scripted.Reply{
			"coordinator": {{ToolCalls: []scripted.ToolCall{{Name: "handoff_to_planner", Arguments: `{"task":"Compare storage engines","locale":"en-US"}`}}}},
			"planner":     {{Text: plan}},
			"reporter":    {{Text: "# Report\nThree angles compared."}},
		},
		Rules: []scripted.Rule{
			{Agent: "researcher", Match: func(c scripted.Call) bool { return searched(c) < coorSearches },
				Reply: scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "web_search", Arguments: `{"query":"storage engines"}`}}}},
			{Agent: "researcher", Reply: scripted.Reply{Text: js(map[string]any{"reasoning": "searched", "result": "Engines compared.",
				"summary": "compared", "confidence": 0.8})}},
		},
	})
	var n atomic.Int32
	search := tools.Func("web_search", "Searches the web.", json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		func(context.Context, json.RawMessage) (string, error) {
			return document(fmt.Sprintf("coor-search-%d", n.Add(1)), 0)[:12_000], nil
		})
	reg, err := tools.NewRegistry(search)
	require.NoError(t, err)
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model, Profile: llm.Profile{Model: "scripted", MaxInputTokens: 128_000}}})
	require.NoError(t, err)
	r, err := workflows.Coor(t.Context(), workflows.Env{Models: ms, Store: smem.New(store.Config{}), Owner: "acme",
		Getenv: func(string) string { return "" }, AutoAccept: true}, workflows.WithTools(reg))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(nodes.Input.Set("Compare storage engines please")))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	return model
}

// conversationKey says which conversation a call belongs to: its agent
// and its first user message (the task), since a team runs several
// conversations of one agent at once.
func conversationKey(c scripted.Call) string {
	for _, m := range c.Messages {
		if m.Role == llms.ChatMessageTypeHuman {
			return c.Agent + "\x00" + fmt.Sprint(m.Parts)
		}
	}
	return c.Agent
}

func coorReuse(model *scripted.Model) (window.PrefixMeter, int) {
	var m window.PrefixMeter
	prompt := 0
	for _, c := range model.Calls() {
		m.Observe(conversationKey(c), c.Messages)
		prompt += c.PromptTokens
	}
	return m, prompt
}

func TestCoorPrefixReuse(t *testing.T) {
	model := runCoor(t)
	m, prompt := coorReuse(model)
	t.Logf("coor, 3 research steps of %d searches each: %d calls, %d prompt tokens; prefix reuse %.1f%% (%d of %d tokens of the calls that follow one of the same conversation); %.1f%% of each previous prompt repeated",
		coorSearches, m.Calls, prompt, 100*m.Share(), m.Shared, m.Total, 100*m.Kept())
	assert.Len(t, model.CallsFor("researcher"), 3*(coorSearches+1))
	assert.InDelta(t, 1, m.Kept(), 0.001, "each call of a conversation repeats its previous call whole: the history is append-only")
	assert.Greater(t, m.Share(), 0.5)
	for _, c := range model.CallsFor("researcher") {
		if strings.Contains(c.Prompt(), "Angle 1") {
			return
		}
	}
	t.Error("no researcher call was for step s1")
}

func BenchmarkCoorPrefixReuse(b *testing.B) {
	b.ReportAllocs()
	var m window.PrefixMeter
	for b.Loop() {
		m, _ = coorReuse(runCoor(b))
	}
	b.ReportMetric(100*m.Share(), "%prefix-reuse")
	b.ReportMetric(100*m.Kept(), "%previous-repeated")
}
