package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/server"
)

// costlyGraph is workflow "costly": draft and then review, each one call
// of gpt-4o-mini over the OpenAI wire protocol to srv.
func costlyGraph(t *testing.T, srv *openaitest.Server) *graph.Runnable {
	t.Helper()
	m := observedModel(t, srv)
	g := graph.New("costly", textKey, logKey)
	for _, name := range []string{"draft", "review"} {
		g.AddNode(name, func(ctx context.Context, s graph.State) (graph.Command, error) {
			resp, err := m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, name+": "+textKey.Get(s))})
			if err != nil {
				return graph.Command{}, err
			}
			return graph.Update(graph.AppendTo(logKey, resp.Choices[0].Content)), nil
		})
	}
	g.AddEdge(graph.Start, "draft")
	g.AddEdge("draft", "review")
	g.AddEdge("review", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// observedModel is gpt-4o-mini over the OpenAI wire protocol to srv, its
// calls observed (usage, budgets) as a workflow's are.
func observedModel(t *testing.T, srv *openaitest.Server) llms.Model {
	t.Helper()
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: openai\n    model: gpt-4o-mini\n    base_url: " +
		srv.BaseURL() + "\n    max_retries: -1\n"))
	require.NoError(t, err)
	cfg.Getenv = func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-test"}[k] }
	models, err := llm.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, models.Close()) })
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	return llm.Observe(m, models.Profile(llm.TierBasic).Info(llm.TierBasic))
}

func usage(prompt, cached, completion int) *openaitest.Usage {
	return &openaitest.Usage{PromptTokens: prompt, CachedTokens: cached, CompletionTokens: completion}
}

// TestARunBudgetStopsTheRunAndARequestWithAHigherOneContinuesIt: the
// workflow's budget stops the run before its second call with 402
// budget_exceeded and the usage so far; a run that continues the thread
// with a raised budget in its request finishes it, without repeating the
// first call; /v1/usage sums the owner's runs.
func TestARunBudgetStopsTheRunAndARequestWithAHigherOneContinuesIt(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Response{Text: "draft", Usage: usage(1000, 800, 200)},
		openaitest.Response{Text: "review", Usage: usage(300, 0, 50)})
	t.Cleanup(srv.Close)
	e := newEnv(t, server.Config{Workflows: workflows(costlyGraph(t, srv)), Recorder: recorder(t),
		Budgets: map[string]llm.Budget{"costly": {Tokens: 1100}}})
	e.thread(alice, "costly", "t1")

	ru := e.wait(alice, "t1", map[string]any{"input": map[string]any{"text": "caching"}})
	assert.Equal(t, server.StatusError, ru.Status)
	require.NotNil(t, ru.Error)
	assert.Equal(t, server.CodeBudgetExceeded, ru.Error.Code)
	assert.Contains(t, ru.Error.Message, `graph: node "review" (step 1, attempt 1): llm: run budget exceeded: 1200 tokens and $0.0002 spent of a budget of 1100 tokens`)
	assert.Equal(t, 1200, ru.Usage.Tokens())
	assert.Equal(t, 800, ru.Usage.CachedTokens)
	assert.InDelta(t, (200*0.15+800*0.075+200*0.60)/1e6, ru.Usage.CostUSD, 1e-12)
	assert.Equal(t, &llm.Budget{Tokens: 1100}, ru.Budget)
	assert.Len(t, srv.Requests(), 1)
	assert.Equal(t, []string{"review"}, e.state(alice, "t1").Next, "the thread keeps the finished step")

	e.fails("POST", "/v1/threads/t1/runs/wait", alice, map[string]any{"budget": map[string]any{"tokens": -1}}, http.StatusBadRequest,
		server.ErrorDetail{Code: server.CodeInvalidField, Field: "budget", Message: `field "budget" cannot be negative: {"tokens": N, "usd": X, "ask": false}`})

	ru = e.wait(alice, "t1", map[string]any{"budget": map[string]any{"tokens": 5000}})
	assert.Equal(t, server.StatusDone, ru.Status, "%+v", ru.Error)
	assert.Equal(t, 350, ru.Usage.Tokens(), "this run's calls")
	assert.Len(t, srv.Requests(), 2)

	var u server.Usage
	e.call("GET", "/v1/usage", alice, nil, http.StatusOK, &u)
	assert.Equal(t, "alice", u.Owner)
	assert.Equal(t, 2, u.Runs)
	assert.Equal(t, 1550, u.Usage.Tokens())
	assert.Nil(t, u.Budget)
	e.call("GET", "/v1/usage", bob, nil, http.StatusOK, &u)
	assert.Equal(t, 0, u.Usage.Calls, "bob sees only his own")
}

// TestAnOwnerBudgetHoldsAcrossRuns: an owner's budget stops the run that
// would exceed it and then refuses the owner's new runs; another owner is
// not affected.
func TestAnOwnerBudgetHoldsAcrossRuns(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Response{Text: "draft", Usage: usage(1000, 0, 200)},
		openaitest.Response{Text: "bob's draft", Usage: usage(10, 0, 5)},
		openaitest.Response{Text: "bob's review", Usage: usage(10, 0, 5)})
	t.Cleanup(srv.Close)
	e := newEnv(t, server.Config{Workflows: workflows(costlyGraph(t, srv)), Recorder: recorder(t),
		OwnerBudget: llm.Budget{Tokens: 5000}, OwnerBudgets: map[string]llm.Budget{"alice": {Tokens: 1000}}})
	e.thread(alice, "costly", "t1")
	ru := e.wait(alice, "t1", map[string]any{"input": map[string]any{"text": "x"}})
	require.NotNil(t, ru.Error)
	assert.Equal(t, server.CodeBudgetExceeded, ru.Error.Code)
	assert.Contains(t, ru.Error.Message, "llm: owner budget exceeded: 1200 tokens and $0.0003 spent of a budget of 1000 tokens")

	e.thread(alice, "costly", "t2")
	e.fails("POST", "/v1/threads/t2/runs/wait", alice, map[string]any{"input": map[string]any{"text": "y"}}, http.StatusPaymentRequired,
		server.ErrorDetail{Code: server.CodeBudgetExceeded, Message: `owner "alice" has spent its budget of 1000 tokens (1200 tokens, $0.0003): ask the operator to raise it`})

	e.thread(bob, "costly", "t1")
	ru = e.wait(bob, "t1", map[string]any{"input": map[string]any{"text": "z"}})
	assert.Equal(t, server.StatusDone, ru.Status)
	var u server.Usage
	e.call("GET", "/v1/usage", bob, nil, http.StatusOK, &u)
	assert.Equal(t, 30, u.Usage.Tokens())
	assert.Equal(t, &llm.Budget{Tokens: 5000}, u.Budget)
	assert.Len(t, srv.Requests(), 3)
}

func TestOwnerBudgetsNeedARecorder(t *testing.T) {
	_, err := server.New(server.Config{Saver: memory.New(), Tokens: tokens, OwnerBudget: llm.Budget{USD: 1}})
	assert.EqualError(t, err, "server: owner budgets count what the owner's recorded runs spent: set Config.Recorder")
}
