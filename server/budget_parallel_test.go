package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/trace"
	tracepg "github.com/coorflow/coorflow/trace/postgres"
)

// fanGraph is a workflow "fan" whose first node sends tasks tasks that
// each make calls model calls at once (max_tokens 60) on a scripted model
// answering 50 completion tokens, 2 ms later (calls stay in flight
// together, as a provider's do).
func fanGraph(t *testing.T, tasks, calls int) *graph.Runnable {
	t.Helper()
	m := llm.Observe(scripted.New(scripted.Script{Default: &scripted.Reply{Text: strings.Repeat("word ", 40)},
		Latency: 2 * time.Millisecond}), llm.ModelInfo{Model: "scripted"})
	item := graph.NewKey[int]("item")
	g := graph.New("fan", textKey, logKey, item)
	g.AddNode("fan", func(context.Context, graph.State) (graph.Command, error) {
		ps := make([]graph.Packet, tasks)
		for i := range ps {
			ps[i] = graph.To("call", item.Set(i))
		}
		return graph.Send(ps...), nil
	}, graph.Destinations("call"))
	g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
		answers := make([]string, calls)
		errs := make([]error, calls)
		var wg sync.WaitGroup
		for j := range calls {
			wg.Go(func() {
				ctx := graph.WithScope(ctx, fmt.Sprintf("c%d", j))
				resp, err := m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman,
					fmt.Sprintf("task %d.%d: summarise", item.Get(s), j))}, llms.WithMaxTokens(60))
				if errs[j] = err; err == nil {
					answers[j] = resp.Choices[0].Content
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, answers...)), nil
	})
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("call", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// fanRuns starts one run of fan per env at once (threads f0, f1, ...),
// waits for them, and returns what alice's recorded runs spent.
func fanRuns(t *testing.T, envs []*env, body map[string]any) llm.Spend {
	t.Helper()
	var wg sync.WaitGroup
	for i, e := range envs {
		th := fmt.Sprintf("f%d", i)
		e.thread(alice, "fan", th)
		wg.Go(func() {
			ru := e.wait(alice, th, body)
			if ru.Status != server.StatusDone {
				assert.Equal(t, server.CodeBudgetExceeded, ru.Error.Code, "%+v", ru.Error)
			}
		})
	}
	wg.Wait()
	var u server.Usage
	envs[0].call("GET", "/v1/usage", alice, nil, http.StatusOK, &u)
	t.Logf("spent %s", u.Usage)
	return u.Usage
}

// TestParallelCallsKeepTheRunBudgetOnTheServer: a run of 120 parallel
// model calls under a request's budget of 2,000 tokens spends no more
// (before: 7,440, every call admitted by its prompt alone).
func TestParallelCallsKeepTheRunBudgetOnTheServer(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(fanGraph(t, 12, 10)), Recorder: recorder(t)})
	spent := fanRuns(t, []*env{e}, map[string]any{"input": map[string]any{"text": "x"}, "budget": map[string]any{"tokens": 2000}})
	assert.LessOrEqual(t, spent.Tokens(), 2000, "spent %s", spent)
	assert.Greater(t, spent.Tokens(), 1800, "the budget was used: %s", spent)
}

// TestParallelRunsKeepTheOwnerBudgetOnOneServer: three runs of 40
// parallel model calls each, on one server whose owner budgets live in its
// Recorder's SQLite file, spend no more than the owner's 3,000 tokens
// together (before: all 120 calls, 7,440 tokens).
func TestParallelRunsKeepTheOwnerBudgetOnOneServer(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(fanGraph(t, 4, 10)), Recorder: recorder(t),
		OwnerBudgets: map[string]llm.Budget{"alice": {Tokens: 3000}}})
	spent := fanRuns(t, []*env{e, e, e}, map[string]any{"input": map[string]any{"text": "x"}})
	assert.LessOrEqual(t, spent.Tokens(), 3000, "spent %s", spent)
	assert.Greater(t, spent.Tokens(), 2800, "the budget was used: %s", spent)
}

// TestOwnerBudgetHoldsAcrossThreeReplicas: three replicas on one
// PostgreSQL database, each recording into it with a Recorder of its own,
// run 40 parallel model calls each (4 tasks of 10) for one owner: together they spend no
// more than the owner's 3,000 tokens (before: each replica kept its own
// meter, each could spend the whole budget, and all 120 calls were made:
// 7,440 tokens).
func TestOwnerBudgetHoldsAcrossThreeReplicas(t *testing.T) {
	rs := newReplicaSet(t, 0, time.Minute, server.Config{})
	cfg := server.Config{Workflows: workflows(fanGraph(t, 4, 10)), OwnerBudgets: map[string]llm.Budget{"alice": {Tokens: 3000}}}
	for range 3 {
		store := tracepg.New(rs.pool, tracepg.WithSchema(rs.schema))
		t.Cleanup(func() { require.NoError(t, store.Close()) }) // after the recorder's
		rec := trace.NewRecorder(store, trace.RecorderConfig{})
		t.Cleanup(func() { require.NoError(t, rec.Close(context.Background())) })
		cfg.Recorder = rec
		rs.add(t, time.Minute, cfg)
	}
	spent := fanRuns(t, rs.envs, map[string]any{"input": map[string]any{"text": "x"}})
	assert.LessOrEqual(t, spent.Tokens(), 3000, "spent %s", spent)
	assert.Greater(t, spent.Tokens(), 2800, "the budget was used: %s", spent)
}

// TestSharedRunsReportTheirUsage: a /v1 run on PostgreSQL replicas shows
// what its model calls spent, and its budget, as a lone server's does
// (before: usage 0 for every run).
func TestSharedRunsReportTheirUsage(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Response{Text: "draft", Usage: usage(100, 0, 20)},
		openaitest.Response{Text: "review", Usage: usage(100, 0, 20)})
	t.Cleanup(srv.Close)
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(costlyGraph(t, srv))})
	a, b := rs.envs[0], rs.envs[1]
	a.thread(alice, "costly", "u")
	ru := a.wait(alice, "u", map[string]any{"input": map[string]any{"text": "x"}, "budget": map[string]any{"tokens": 5000}})
	require.Equal(t, server.StatusDone, ru.Status)
	assert.Equal(t, 2, ru.Usage.Calls)
	assert.Equal(t, 240, ru.Usage.Tokens())
	assert.Equal(t, &llm.Budget{Tokens: 5000}, ru.Budget)
	var got server.Run
	b.call("GET", "/v1/threads/u/runs/"+ru.ID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, ru.Usage, got.Usage, "another replica shows it too")
	assert.Equal(t, ru.Budget, got.Budget)
}
