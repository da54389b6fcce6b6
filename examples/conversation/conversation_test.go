// Package conversation_test runs examples/conversation offline, on its demo
// script: three turns on one thread, the second building on a fact only
// the first found, the third on another topic.
package conversation_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/clitest"
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
	assert.Contains(t, p2, "# Earlier turns of this conversation")
	assert.Contains(t, p2, "## Turn 1\nUser: "+messages[0])
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
	assert.Contains(t, p3, "## Turn 1")
	assert.Contains(t, p3, "## Turn 2")
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
	assert.Contains(t, outs[0], "✓ coordinator  turn 1;")
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
