package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/trace"
	tracepg "github.com/coorflow/coorflow/trace/postgres"
)

// billingModel is a provider over the OpenAI wire protocol that answers
// every call with about 50 tokens, cut to the call's max_tokens as a
// provider that honours it does, and counts the tokens it reports as
// used: what the owner would be billed, whatever coorflow's meter says.
type billingModel struct {
	*openaitest.Server
	calls, tokens atomic.Int64
}

func newBillingModel(t *testing.T) *billingModel {
	t.Helper()
	b := &billingModel{}
	b.Server = openaitest.NewFunc(func(req openaitest.ChatRequest) openaitest.Response {
		text := strings.TrimSpace(strings.Repeat("word ", 40))
		limit := max(req.MaxTokens, req.MaxCompletionTokens)
		for limit > 0 && llm.EstimateTokens(text) > limit {
			text = text[:strings.LastIndexByte(text, ' ')]
		}
		u := &openaitest.Usage{PromptTokens: llm.TokensPerReply, CompletionTokens: llm.EstimateTokens(text)}
		for _, m := range req.Messages {
			u.PromptTokens += llm.TokensPerMessage + llm.EstimateTokens(m.Text())
		}
		b.calls.Add(1)
		b.tokens.Add(int64(u.PromptTokens + u.CompletionTokens))
		return openaitest.Response{Text: text, Usage: u}
	})
	t.Cleanup(b.Close)
	return b
}

// billedGraph is workflow "billed": draft and then review, each one call
// (max_tokens 60) of gpt-4o-mini over the OpenAI wire protocol to m.
func billedGraph(t *testing.T, m *billingModel) *graph.Runnable {
	t.Helper()
	model := observedModel(t, m.Server)
	g := graph.New("billed", textKey, logKey)
	for _, name := range []string{"draft", "review"} {
		g.AddNode(name, func(ctx context.Context, s graph.State) (graph.Command, error) {
			resp, err := model.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman,
				name+": "+textKey.Get(s))}, llms.WithMaxTokens(60))
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

// billedRuns starts n runs of billed for alice at once, round-robin over
// envs (threads w0, w1, ...), and requires each to end done or refused or
// stopped by the owner's budget with an error that says so; it returns
// how many were done.
func billedRuns(t *testing.T, envs []*env, n int) int {
	t.Helper()
	for i := range n {
		envs[i%len(envs)].thread(alice, "billed", fmt.Sprintf("w%d", i))
	}
	var done atomic.Int64
	var said sync.Map // an error message by status
	var wg sync.WaitGroup
	for i := range n {
		e := envs[i%len(envs)]
		wg.Go(func() {
			resp := e.request("POST", fmt.Sprintf("/v1/threads/w%d/runs/wait", i), alice,
				map[string]any{"input": map[string]any{"text": fmt.Sprintf("topic %d", i)}})
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			if !assert.NoError(t, err) {
				return
			}
			var detail *server.ErrorDetail
			switch resp.StatusCode {
			case http.StatusOK:
				var ru server.Run
				if !assert.NoError(t, json.Unmarshal(data, &ru), "%s", data) {
					return
				}
				if ru.Status == server.StatusDone {
					done.Add(1)
					return
				}
				detail = ru.Error
			case http.StatusPaymentRequired:
				var body server.ErrorBody
				if !assert.NoError(t, json.Unmarshal(data, &body), "%s", data) {
					return
				}
				detail = &body.Error
			default:
				assert.Failf(t, "unexpected answer", "run %d: %d %s", i, resp.StatusCode, data)
				return
			}
			if assert.NotNil(t, detail, "run %d: %s", i, data) {
				assert.Equal(t, server.CodeBudgetExceeded, detail.Code, "run %d: %s", i, data)
				assert.Regexp(t, `owner budget exceeded|owner "alice" has spent its budget`, detail.Message, "run %d: %s", i, data)
				said.LoadOrStore(resp.StatusCode, detail.Message)
			}
		})
	}
	wg.Wait()
	said.Range(func(status, msg any) bool {
		t.Logf("%d: %s", status, msg)
		return true
	})
	return int(done.Load())
}

// TestOwnerBudgetHoldsForParallelRunsOverTheWireAcrossThreeReplicas:
// 120 runs of one owner, fired at once round-robin at three replicas on
// one PostgreSQL database, each making two calls over the OpenAI wire
// protocol, together cost no more than the owner's 3,000 tokens as the
// provider counts them; every run that did not finish was refused or
// stopped with budget_exceeded.
func TestOwnerBudgetHoldsForParallelRunsOverTheWireAcrossThreeReplicas(t *testing.T) {
	const budget = 3000
	m := newBillingModel(t)
	rs := newReplicaSet(t, 0, time.Minute, server.Config{})
	cfg := server.Config{Workflows: workflows(billedGraph(t, m)), MaxActiveRuns: -1,
		OwnerBudgets: map[string]llm.Budget{"alice": {Tokens: budget}}}
	for range 3 {
		store := tracepg.New(rs.pool, tracepg.WithSchema(rs.schema))
		t.Cleanup(func() { require.NoError(t, store.Close()) }) // after the recorder's
		rec := trace.NewRecorder(store, trace.RecorderConfig{})
		t.Cleanup(func() { require.NoError(t, rec.Close(context.Background())) })
		cfg.Recorder = rec
		rs.add(t, time.Minute, cfg)
	}
	done := billedRuns(t, rs.envs, 120)
	billed := m.tokens.Load()
	t.Logf("%d runs done, %d calls billed, %d tokens", done, m.calls.Load(), billed)
	assert.LessOrEqual(t, billed, int64(budget), "the provider billed no more than the owner's budget")
	assert.Greater(t, billed, int64(budget)*8/10, "the budget was used")
	assert.Less(t, done, 120, "the budget stopped some runs")
	var u server.Usage
	rs.envs[1].call("GET", "/v1/usage", alice, nil, http.StatusOK, &u)
	assert.Equal(t, billed, int64(u.Usage.Tokens()), "the owner's usage is what the provider billed")
}

// TestOwnerBudgetHoldsForParallelRunsOverTheWireOnOneServer: the same
// with 120 runs on one server whose owner budgets live in its Recorder's
// SQLite file.
func TestOwnerBudgetHoldsForParallelRunsOverTheWireOnOneServer(t *testing.T) {
	const budget = 3000
	m := newBillingModel(t)
	e := newEnv(t, server.Config{Workflows: workflows(billedGraph(t, m)), Recorder: recorder(t), MaxActiveRuns: -1,
		OwnerBudgets: map[string]llm.Budget{"alice": {Tokens: budget}}})
	done := billedRuns(t, []*env{e}, 120)
	billed := m.tokens.Load()
	t.Logf("%d runs done, %d calls billed, %d tokens", done, m.calls.Load(), billed)
	assert.LessOrEqual(t, billed, int64(budget), "the provider billed no more than the owner's budget")
	assert.Greater(t, billed, int64(budget)*8/10, "the budget was used")
	assert.Less(t, done, 120, "the budget stopped some runs")
	var u server.Usage
	e.call("GET", "/v1/usage", alice, nil, http.StatusOK, &u)
	assert.Equal(t, billed, int64(u.Usage.Tokens()), "the owner's usage is what the provider billed")
}
