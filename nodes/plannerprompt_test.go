package nodes_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/window"
)

// fiftyAgents is a registry of 50 agents, as a team builds them over many
// threads: each an expert of one field.
func fiftyAgents() nodes.StaticAgents {
	fields := []string{"tax", "kubernetes", "postgres", "pricing", "marketing", "security", "legal", "frontend", "latency", "hiring"}
	kinds := []string{"analyst", "reviewer", "auditor", "planner", "writer"}
	var out nodes.StaticAgents
	for i := range 50 {
		f, k := fields[i%len(fields)], kinds[i/len(fields)]
		out = append(out, nodes.AgentCard{Name: f + "_" + k,
			Description: fmt.Sprintf("A %s %s: reads the team's %s material and reports what matters, with sources and figures.", f, k, f)})
	}
	return out
}

// plannerTurns runs the planner for n turns of one conversation with the
// agents given and returns each turn's calls.
func plannerTurns(t *testing.T, agents nodes.StaticAgents, n int) [][]scripted.Call {
	t.Helper()
	enough := planMap([]map[string]any{})
	enough["has_enough_context"] = true
	topics := []string{"postgres latency", "kubernetes security", "pricing of the tax service", "frontend hiring", "legal review of pricing",
		"postgres security", "marketing latency", "kubernetes pricing", "tax audit", "frontend latency"}
	var turns []nodes.Turn
	var findings []plan.Finding
	var calls [][]scripted.Call
	for i := range n {
		topic := topics[i%len(topics)]
		n := i + 1
		model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"planner": {planJSON(t, enough)}}})
		req := "What should we know about " + topic + "?"
		_, err := plannerGraph(t, model, nodes.PlannerConfig{Agents: agents, AllowNewAgents: true}).Invoke(t.Context(),
			graph.Input(nodes.Request.Set(req), nodes.CurrentTurn.Set(nodes.Turn{N: n, Input: req}),
				nodes.Turns.Set(turns), nodes.Findings.Set(findings)))
		require.NoError(t, err)
		calls = append(calls, model.CallsFor("planner"))
		field := strings.Fields(topic)[0]
		for j := 1; j <= 2; j++ {
			findings = append(findings, plan.Finding{StepID: fmt.Sprintf("s%d", j), Title: fmt.Sprintf("%s, angle %d", topic, j), Agent: field + "_analyst",
				Status: plan.StepDone, Summary: fmt.Sprintf("Finding %d on %s: the figure is %d.", j, topic, 10*n+j), Confidence: 0.9,
				Ref: fmt.Sprintf("mission/t/outputs/turn%d-s%d", n, j), Turn: n})
		}
		turns = append(turns, nodes.Turn{N: n, Input: req, Request: req, Plan: "Plan for " + topic, Answer: fmt.Sprintf("On %s: the figures are %d and %d.", topic, 10*n+1, 10*n+2)})
	}
	return calls
}

// TestPlannerPromptIsBoundedAndItsPrefixStable: over 10 turns with 50
// agents registered, the planner is shown at most DefaultMaxAgents agents,
// those that fit the request; each turn's prompt begins with the previous
// turn's instructions and earlier turns unchanged (the part a provider's
// prompt cache serves), and only the last message is new.
func TestPlannerPromptIsBoundedAndItsPrefixStable(t *testing.T) {
	calls := plannerTurns(t, fiftyAgents(), 10)
	var meter window.PrefixMeter
	var b strings.Builder
	fmt.Fprintf(&b, "%4s %7s %7s %6s\n", "turn", "prompt", "reused", "share")
	var first, last int
	for i, cs := range calls {
		require.Len(t, cs, 1)
		msgs := cs[0].Messages
		tokens := llm.EstimateMessages(msgs)
		reused := 0
		if i > 0 {
			reused, _ = window.PrefixReuse(calls[i-1][0].Messages, msgs)
			// Every message but the last is the previous call's.
			prevStable := llm.EstimateMessages(calls[i-1][0].Messages[:len(calls[i-1][0].Messages)-1]) - llm.TokensPerReply
			assert.GreaterOrEqual(t, reused, prevStable, "turn %d repeats the previous turn's instructions and earlier turns", i+1)
		}
		meter.Observe("planner", msgs)
		fmt.Fprintf(&b, "%4d %7d %7d %5.1f%%\n", i+1, tokens, reused, 100*float64(reused)/float64(tokens))
		if i == 0 {
			first = tokens
		}
		last = tokens
		listed := 0
		for _, c := range fiftyAgents() {
			if strings.Contains(cs[0].Prompt(), "\n- "+c.Name+": ") {
				listed++
			}
		}
		assert.Equal(t, nodes.DefaultMaxAgents, listed, "turn %d: %d of the 50 agents listed", i+1, nodes.DefaultMaxAgents)
	}
	fmt.Fprintf(&b, "prefix reuse over turns 2-10: %.1f%% of prompt tokens; prompt %d → %d tokens\n", 100*meter.Share(), first, last)
	t.Log("\n" + b.String())

	prompt := calls[0][0].Prompt()
	assert.Contains(t, prompt, "- postgres_analyst:", "the agents that fit the request")
	assert.NotContains(t, prompt, "- hiring_writer:", "not every agent")
	assert.Contains(t, prompt, "The 12 of the team's 50 agents that fit this request best")
	twelve := plannerTurns(t, fiftyAgents()[:nodes.DefaultMaxAgents], 1)
	assert.LessOrEqual(t, first-llm.EstimateMessages(twelve[0][0].Messages), 60, "50 agents cost no more than 12 (and a line that says so)")
	assert.GreaterOrEqual(t, meter.Share(), 0.5, "at least half of each prompt is the previous one's beginning")
}
