package react_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/tools"
)

// TestReActOverTheOpenAIWireProtocol drives langchaingo's real OpenAI
// client against a server speaking the chat-completions protocol: a reply
// with two parallel tool calls, streamed as deltas, then the answer.
func TestReActOverTheOpenAIWireProtocol(t *testing.T) {
	srv := openaitest.NewServer(
		openaitest.ToolCalls(
			openaitest.ToolCall{Name: "add", Arguments: `{"a":40,"b":2}`},
			openaitest.ToolCall{Name: "capital", Arguments: `{"country":"France"}`},
		),
		openaitest.Text("42, and Paris."),
	)
	defer srv.Close()
	client, err := openai.New(openai.WithBaseURL(srv.BaseURL()), openai.WithToken("test"), openai.WithModel("gpt-4o"))
	require.NoError(t, err)

	var calls atomic.Int32
	a, err := react.New(react.Config{
		Name: "solver", Model: llm.WithRetry(client, llm.RetryPolicy{}), Info: llm.ModelInfo{Tier: "basic", Model: "gpt-4o"},
		SystemPrompt: "Use tools.", Tools: toolbox(t, &calls, nil),
	})
	require.NoError(t, err)
	q, out := graph.NewKey[string]("q"), graph.NewKey[string]("out")
	g := graph.New("http", q, out)
	g.AddNode("agent", a.TextNode(q, out))
	g.AddEdge(graph.Start, "agent")
	g.AddEdge("agent", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	var tokens string
	var results []tools.ResultEvent
	var usage []llm.ModelCall
	var final graph.State
	for ev, err := range r.Stream(t.Context(), graph.Input(q.Set("40+2 and the capital of France?"))) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case llm.Token:
			tokens += string(d)
		case tools.ResultEvent:
			results = append(results, d)
		case llm.ModelCall:
			usage = append(usage, d)
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	assert.Equal(t, "42, and Paris.", out.Get(final))
	assert.Equal(t, "42, and Paris.", tokens, "the answer was streamed as tokens")
	require.Len(t, results, 2)
	outputs := map[string]string{results[0].Name: results[0].Output, results[1].Name: results[1].Output}
	assert.Equal(t, map[string]string{"add": "42", "capital": "Paris"}, outputs)
	assert.Equal(t, int32(2), calls.Load())
	require.Len(t, usage, 2)
	assert.Positive(t, usage[0].PromptTokens, "usage reported by the server")

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.ElementsMatch(t, []string{"add", "boom", "capital"}, reqs[0].Chat.ToolNames())
	second := reqs[1].Chat.Messages
	require.Len(t, second, 5)
	assert.Equal(t, "tool", second[3].Role)
	assert.Equal(t, "42", second[3].Text())
	assert.Equal(t, second[2].ToolCalls[0].ID, second[3].ToolCallID, "each result answers its call")
	assert.Equal(t, "Paris", second[4].Text())
}
