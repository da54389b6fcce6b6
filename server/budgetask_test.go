package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/server"
)

// fanoutGraph is workflow "fanout": draft, then left and right at once,
// each one call of gpt-4o-mini over the OpenAI wire protocol to srv.
func fanoutGraph(t *testing.T, srv *openaitest.Server) *graph.Runnable {
	t.Helper()
	m := observedModel(t, srv)
	g := graph.New("fanout", textKey, logKey)
	for _, name := range []string{"draft", "left", "right"} {
		g.AddNode(name, func(ctx context.Context, s graph.State) (graph.Command, error) {
			resp, err := m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, name+": "+textKey.Get(s))})
			if err != nil {
				return graph.Command{}, err
			}
			return graph.Update(graph.AppendTo(logKey, name+": "+resp.Choices[0].Content)), nil
		})
	}
	g.AddEdge(graph.Start, "draft")
	g.AddEdge("draft", "left")
	g.AddEdge("draft", "right")
	g.AddEdge("left", graph.End)
	g.AddEdge("right", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// TestABudgetThatAsksIsAnsweredOnceForEveryAgentItBlocks: when a budget
// with Ask blocks two nodes of one step, the thread waits on two budget
// questions, and one {"resume": …} with a new budget answers both (issue
// 30: the server refused it as ambiguous, 409, and a client had to
// answer each by id the same thing); the blocked calls then run once each.
func TestABudgetThatAsksIsAnsweredOnceForEveryAgentItBlocks(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Response{Text: "draft", Usage: usage(1000, 0, 200)},
		openaitest.Response{Text: "fine", Usage: usage(100, 0, 10)},
		openaitest.Response{Text: "fine", Usage: usage(100, 0, 10)})
	t.Cleanup(srv.Close)
	e := newEnv(t, server.Config{Workflows: workflows(fanoutGraph(t, srv)), Recorder: recorder(t),
		Budgets: map[string]llm.Budget{"fanout": {Tokens: 1100, Ask: true}}})
	e.thread(alice, "fanout", "t1")

	ru := e.wait(alice, "t1", map[string]any{"input": map[string]any{"text": "caching"}})
	require.Equal(t, server.StatusInterrupted, ru.Status, "%+v", ru.Error)
	require.Len(t, ru.Interrupts, 2, "each blocked node asks")
	assert.True(t, llm.OneBudgetQuestion(ru.Interrupts), "the same budget question")
	assert.Len(t, srv.Requests(), 1)

	ru = e.wait(alice, "t1", map[string]any{"resume": map[string]any{"tokens": 3000}})
	assert.Equal(t, server.StatusDone, ru.Status, "%+v", ru.Error)
	assert.Empty(t, ru.Interrupts)
	assert.Len(t, srv.Requests(), 3, "left and right called once each")
	var values struct {
		Log []string `json:"log"`
	}
	require.NoError(t, json.Unmarshal(e.state(alice, "t1").Values, &values))
	assert.ElementsMatch(t, []string{"draft: draft", "left: fine", "right: fine"}, values.Log)
}
