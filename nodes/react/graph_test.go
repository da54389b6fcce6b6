package react_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/tools"
)

// role and text summarise a message for comparison: "ai: add {...}" for
// a tool call, "tool: 5" for its result.
func summary(m llms.MessageContent) string {
	out := string(m.Role) + ":"
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			out += " " + p.Text
		case llms.ToolCall:
			out += " " + p.FunctionCall.Name + " " + p.FunctionCall.Arguments
		case llms.ToolCallResponse:
			out += " " + p.Name + "=" + p.Content
		}
	}
	return out
}

func summaries(msgs []llms.MessageContent) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, summary(m))
	}
	return out
}

func ask(text string) []graph.Write {
	return graph.Input(graph.AppendTo(react.Messages, llms.TextParts(llms.ChatMessageTypeHuman, text)))
}

func TestGraphKeepsAConversationAcrossTurnsOfAThread(t *testing.T) {
	var toolRuns atomic.Int32
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"solver": {
		{ToolCalls: []scripted.ToolCall{{Name: "add", Arguments: `{"a":2,"b":3}`}}},
		{Text: "2 + 3 = 5."},
		{ToolCalls: []scripted.ToolCall{{Name: "add", Arguments: `{"a":5,"b":4}`}}},
		{Text: "5 + 4 = 9."},
	}}})
	cfg := react.Config{Name: "solver", Model: model, Info: llm.ModelInfo{Tier: "basic", Model: "scripted"},
		SystemPrompt: "You solve problems with tools.", Tools: toolbox(t, &toolRuns, nil)}
	saver := memory.New()

	chat, err := react.Graph(cfg, graph.WithSaver(saver))
	require.NoError(t, err)
	assert.Equal(t, "solver", chat.Name())
	var events []string
	var final graph.State
	for ev, err := range chat.Stream(t.Context(), ask("What is 2 + 3?"), graph.Thread("chat")) {
		require.NoError(t, err)
		switch ev.Data.(type) {
		case agentevent.Started, tools.CallEvent, tools.ResultEvent, agentevent.Ended:
			events = append(events, ev.Name()+" "+ev.Path)
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	assert.Equal(t, []string{
		"agent_start solver/agent/agent:solver",
		"tool_call solver/agent/agent:solver",
		"tool_result solver/agent/agent:solver",
		"agent_end solver/agent/agent:solver",
	}, events)
	turn1 := []string{
		"human: What is 2 + 3?",
		`ai: add {"a":2,"b":3}`,
		"tool: add=5",
		"ai: 2 + 3 = 5.",
	}
	assert.Equal(t, turn1, summaries(react.Messages.Get(final)), "the agent's tool call, its result and the answer are appended")

	// Turn 2 runs on a graph compiled again over the same saver, as a new
	// process would: the conversation comes back from the checkpoint.
	again, err := react.Graph(cfg, graph.WithSaver(saver))
	require.NoError(t, err)
	res, err := again.Invoke(t.Context(), ask("And that plus 4?"), graph.Thread("chat"))
	require.NoError(t, err)
	sent := model.CallsFor("solver")[2].Messages
	assert.Equal(t, append(append([]string{"system: You solve problems with tools."}, turn1...), "human: And that plus 4?"),
		summaries(sent), "turn 2's first model call sees turn 1, tool call and result included")
	assert.Equal(t, append(append(turn1, "human: And that plus 4?"), `ai: add {"a":5,"b":4}`, "tool: add=9", "ai: 5 + 4 = 9."),
		summaries(react.Messages.Get(res.State)))
	assert.Equal(t, int32(2), toolRuns.Load(), "one tool call per turn")
}

func TestGraphOnAnEmptyConversationSaysWhatToWrite(t *testing.T) {
	model := scripted.New(scripted.Script{})
	chat, err := react.Graph(react.Config{Name: "solver", Model: model})
	require.NoError(t, err)
	_, err = chat.Invoke(t.Context(), graph.Input(graph.AppendTo(react.Messages)))
	require.ErrorIs(t, err, react.ErrNoMessages)
	assert.EqualError(t, err, `graph: node "agent" (step 0, attempt 1): react: no messages: agent "solver" has no conversation to answer: write the user's message to react.Messages`)
	assert.Empty(t, model.Calls())

	_, err = react.Graph(react.Config{Name: "solver"})
	assert.ErrorIs(t, err, react.ErrNoModel)
}
