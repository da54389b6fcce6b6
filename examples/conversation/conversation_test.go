// Package conversation_test runs examples/conversation offline, on its demo
// script: three turns on one thread, the second building on a fact only
// the first found, the third on another topic.
package conversation_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/clitest"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/workflows"
)

// The three messages of the README's conversation.
var messages = []string{
	"How long does a durable SQLite commit take on a laptop?",
	"Then how long do 10,000 agent steps spend writing checkpoints?",
	"Different question: how big should a PostgreSQL connection pool be for 8 replicas?",
}

func TestAThreadIsAConversationOfTurns(t *testing.T) {
	f, err := workflows.Load("workflow.yaml")
	require.NoError(t, err)
	noEnv := func(string) string { return "" }
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: noEnv})
	require.NoError(t, err)
	require.True(t, ms.Demo)
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, Getenv: noEnv, Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)

	var created [][]string
	var states []graph.State
	for _, msg := range messages {
		var built []string
		var final graph.State
		for ev, err := range r.Stream(t.Context(), graph.Input(nodes.Input.Set(msg)), graph.Thread("chat")) {
			require.NoError(t, err)
			if a, ok := ev.Data.(agentevent.Created); ok {
				built = append(built, a.Agent)
			}
			if ev.Kind == graph.EventRunEnd {
				final = ev.State
			}
		}
		created, states = append(created, built), append(states, final)
	}
	basic, err := ms.Models.Model("basic")
	require.NoError(t, err)
	script := basic.(*workflows.DemoModel).Thread("chat")

	// Each turn plans anew: the planner's rounds count per turn.
	planner := script.CallsFor("planner")
	require.Len(t, planner, 3, "one planner call per turn")
	for i, s := range states {
		assert.Equal(t, i+1, nodes.CurrentTurn.Get(s).N)
		assert.Equal(t, 1, nodes.Iterations.Get(s), "turn %d", i+1)
	}
	turns := nodes.Turns.Get(states[2])
	require.Len(t, turns, 3)
	for i, tu := range turns {
		assert.Equal(t, messages[i], tu.Input)
		assert.NotEmpty(t, tu.Answer)
	}

	// Turn 2 needs turn 1's finding: the planner sees it as a summary with
	// the reference of the full result, and the answer uses it.
	first := nodes.Findings.Get(states[0])
	require.Len(t, first, 1)
	require.NotEmpty(t, first[0].Ref, "the full result is on the mission board")
	p2 := planner[1].Prompt()
	assert.Contains(t, p2, "The earlier turns of this conversation are above")
	assert.Contains(t, p2, "Turn 1. User: "+messages[0])
	assert.Contains(t, p2, "(agent storage_analyst, confidence 0.90): A durable SQLite commit in WAL mode (synchronous=FULL) costs about 1 ms on a laptop SSD: one fsync of the WAL. (ref: "+first[0].Ref+")")
	assert.Contains(t, nodes.Answer.Get(states[1]), "At the **~1 ms per durable commit** found in the first answer")

	// The agent built in turn 1 is reused in turn 2, not built again.
	assert.Equal(t, [][]string{{"storage_analyst"}, nil, nil}, created)
	assert.Len(t, script.CallsFor("builder:storage_analyst"), 1)
	assert.Len(t, script.CallsFor("storage_analyst"), 2)

	// The coordinator sees the conversation.
	c3 := script.CallsFor("coordinator")[2].Prompt()
	assert.Contains(t, c3, messages[0])
	assert.Contains(t, c3, "10 seconds", "turn 2's answer")

	// Turn 3 changes the topic: its planner gets the earlier turns as
	// summaries, not their results, reports or reasoning.
	p3 := planner[2].Prompt()
	assert.Contains(t, p3, "Turn 1. User: ")
	assert.Contains(t, p3, "Turn 2. User: ")
	assert.Contains(t, p3, "10,000 steps spend about 10 s on durable checkpoint commits (1 ms each).")
	for _, transcript := range []string{
		"synchronous=NORMAL skips that fsync: ~20 µs", // turn 1's full result
		"at the risk of losing the last commits",      // turn 1's report
		"laptop NVMe fsync takes 0.5 to 2 ms",         // turn 1's reasoning
		"against hours of model calls",                // turn 2's full result
		"# Results of the steps run so far",           // no results of its own yet
	} {
		assert.NotContains(t, p3, transcript)
	}
	r3 := script.CallsFor("reporter")[2].Prompt()
	assert.Contains(t, r3, "## Step s1: Size the pool")
	assert.NotContains(t, r3, "## Step s1: Measure the durable commit cost", "the report is built from this turn's findings")
	assert.True(t, strings.HasPrefix(nodes.Answer.Get(states[2]), "# PostgreSQL pool size for 8 replicas"))
	for i, f := range nodes.Findings.Get(states[2]) {
		assert.Equal(t, i+1, f.Turn, "finding %d carries its turn", i)
	}
}

func TestTheConversationExampleFromTheCommandLine(t *testing.T) {
	cli := clitest.New(t, "../..")
	var outs []string
	for _, msg := range messages {
		code, out, stderr := cli.Run("run", "examples/conversation", "--thread", "chat", "--input", msg)
		require.Equal(t, 0, code, stderr)
		outs = append(outs, out)
	}
	assert.Contains(t, outs[0], "✓ coordinator  handed off:")
	assert.Contains(t, outs[0], "+ storage_analyst  built")
	assert.Contains(t, outs[1], "✓ coordinator  turn 2;")
	assert.NotContains(t, outs[1], "built", "turn 2 reuses the agent of turn 1")
	assert.Contains(t, outs[1], "At the **~1 ms per durable commit** found in the first answer, 10,000 steps spend about **10 seconds**")
	assert.Contains(t, outs[2], "✓ coordinator  turn 3;")
	assert.Contains(t, outs[2], "Give each replica a pool of **10 connections**")

	code, out, stderr := cli.Run("threads", "show", "chat")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "turns       3\n")
	for i, msg := range messages {
		assert.Regexp(t, `\n  `+string(rune('1'+i))+`   done   r-[0-9a-f]{8}  `+regexp.QuoteMeta(msg)+`\n`, out)
	}
	assert.Contains(t, out, "answer: Checkpoint time of 10,000 steps At the **~1 ms per durable commit**")
}

// TestAConversationOverTheOpenAIProtocol plays two turns of the demo's
// conversation through langchaingo's OpenAI client against a server that
// speaks the chat-completions protocol: the second turn's requests carry
// the conversation and the first turn's finding as a summary.
func TestAConversationOverTheOpenAIProtocol(t *testing.T) {
	demo, err := scripted.LoadFile("demo.yaml")
	require.NoError(t, err)
	reply := func(agent, contains string) openaitest.Response {
		t.Helper()
		var r scripted.Reply
		if contains == "" {
			r = demo.Agents[agent][0]
		} else {
			i := slices.IndexFunc(demo.Rules, func(r scripted.Rule) bool { return r.Agent == agent && r.PromptContains == contains })
			require.GreaterOrEqual(t, i, 0, "%s %q", agent, contains)
			r = demo.Rules[i].Reply
		}
		out := openaitest.Response{Text: r.Text}
		for _, tc := range r.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, openaitest.ToolCall{Name: tc.Name, Arguments: tc.Arguments})
		}
		return out
	}
	const fact = "(agent storage_analyst, confidence 0.90): A durable SQLite commit"
	srv := openaitest.NewServer(
		// Turn 1, one call after the other: one agent to build, one step.
		reply("coordinator", ""), reply("planner", ""), reply("builder:storage_analyst", ""),
		reply("metaprompt:storage_analyst", ""), reply("storage_analyst", ""), reply("reporter", ""),
		// Turn 2 reuses the agent.
		reply("coordinator", "10,000 agent steps"), reply("planner", fact),
		reply("storage_analyst", "Total checkpoint time of 10,000 steps"), reply("reporter", fact),
	)
	defer srv.Close()

	f, err := workflows.Load("workflow.yaml")
	require.NoError(t, err)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.BaseURL()}
	getenv := func(k string) string { return env[k] }
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: getenv})
	require.NoError(t, err)
	require.False(t, ms.Demo)
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, Getenv: getenv, Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	var final graph.State
	for _, msg := range messages[:2] {
		res, err := r.Invoke(t.Context(), graph.Input(nodes.Input.Set(msg)), graph.Thread("chat"))
		require.NoError(t, err)
		final = res.State
	}
	assert.Zero(t, srv.Remaining(), "every scripted response was asked for")
	reqs := srv.Requests()
	require.Len(t, reqs, 10)

	coordinator := reqs[6].Chat.Messages
	require.Len(t, coordinator, 4, "system, turn 1's question and answer, the new message")
	assert.Equal(t, []string{"user", "assistant", "user"}, []string{coordinator[1].Role, coordinator[2].Role, coordinator[3].Role})
	assert.Equal(t, messages[0], coordinator[1].Text())
	assert.Equal(t, messages[1], coordinator[3].Text())

	var planner strings.Builder
	for _, m := range reqs[7].Chat.Messages {
		planner.WriteString(m.Text())
	}
	assert.Contains(t, planner.String(), "Turn 1. User: "+messages[0])
	assert.Contains(t, planner.String(), fact)
	assert.NotContains(t, planner.String(), "synchronous=NORMAL skips that fsync: ~20 µs", "a summary, not turn 1's full result")
	assert.Contains(t, nodes.Answer.Get(final), "At the **~1 ms per durable commit** found in the first answer")
	assert.Len(t, nodes.Turns.Get(final), 2)
}
