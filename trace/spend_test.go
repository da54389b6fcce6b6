package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
)

func usd(v float64) *float64 { return &v }

// TestTimelineSumsUsage: the usage of model calls adds up per agent, per
// node and per run; a call of an unpriced model leaves the cost unknown
// rather than zero.
func TestTimelineSumsUsage(t *testing.T) {
	evs := synthetic(t,
		graph.EventRunStart, "wf", 0, nil,
		graph.EventNodeStart, "wf/plan", 0, nil,
		"model_call", "wf/plan", 0, llm.ModelCall{Agent: "planner", Model: "gpt-4o", PromptTokens: 100, CachedTokens: 60,
			CompletionTokens: 10, CostUSD: usd(0.01)},
		"model_call", "wf/plan", 0, llm.ModelCall{Agent: "planner", Model: "gpt-4o", PromptTokens: 100, Replayed: true, CostUSD: usd(0.01)},
		graph.EventNodeEnd, "wf/plan", 0, nil,
		graph.EventNodeStart, "wf/team", 1, nil,
		"agent_start", "wf/team/step:s1/agent:a", 1, nil,
		"model_call", "wf/team/step:s1/agent:a", 1, llm.ModelCall{Agent: "a", Model: "gpt-4o", PromptTokens: 50, CompletionTokens: 5,
			ReasoningTokens: 2, CostUSD: usd(0.02)},
		"agent_start", "wf/team/step:s2/agent:b", 1, nil,
		"model_call", "wf/team/step:s2/agent:b", 1, llm.ModelCall{Agent: "b", Model: "mystery", PromptTokens: 7, CompletionTokens: 3, Estimated: true},
	)
	tl := trace.BuildTimeline(trace.RunInfo{ID: "r", Graph: "wf", Status: trace.StatusDone}, evs)
	plan, team := tl.Steps[0].Nodes[0], tl.Steps[1].Nodes[0]
	assert.Equal(t, 1, plan.Usage.Calls, "a replayed call costs nothing")
	assert.Equal(t, 60, plan.Usage.CachedTokens)
	assert.InDelta(t, 0.01, plan.Usage.CostUSD, 1e-12)
	assert.InDelta(t, 0.02, team.Agents[0].Usage.CostUSD, 1e-12)
	assert.Equal(t, 1, team.Agents[1].Usage.UnpricedCalls)
	assert.Equal(t, []string{"mystery"}, team.Usage.UnpricedModels)
	assert.Equal(t, 3, tl.Usage.Calls)
	assert.Equal(t, 175, tl.Usage.Tokens())
	assert.Equal(t, 2, tl.Usage.ReasoningTokens)
	assert.Equal(t, 1, tl.Usage.EstimatedCalls)
	assert.InDelta(t, 0.03, tl.Usage.CostUSD, 1e-12)
	assert.Contains(t, tl.Usage.String(), "$0.0300 + unknown (1 call of mystery without a price)")
}

// TestTurnAndOwnerSpend: a thread's turn counts its runs back to the
// last one started with an input; an owner's spend counts every run of
// the owner and none of another's.
func TestTurnAndOwnerSpend(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(id, owner, thread, start string, at int, tokens int) {
		require.NoError(t, s.CreateRun(ctx, trace.RunInfo{ID: id, Owner: owner, Thread: thread, Start: start, Status: trace.StatusDone,
			StartedAt: t0.Add(time.Duration(at) * time.Minute)}))
		evs := synthetic(t, "model_call", "wf/n", 0, llm.ModelCall{Model: "gpt-4o", PromptTokens: tokens, CostUSD: usd(float64(tokens) / 1000)})
		evs[0].RunID = id
		require.NoError(t, s.AppendEvents(ctx, evs))
	}
	add("r1", "ann", "t1", trace.StartInput, 1, 100)
	add("r2", "ann", "t1", trace.StartInput, 2, 200)
	add("r3", "ann", "t1", trace.StartResume, 3, 300)
	add("r4", "ann", "t1", trace.StartContinue, 4, 400)
	add("r5", "ann", "t2", trace.StartInput, 5, 1000)
	add("r6", "bob", "t1", trace.StartInput, 6, 5000)

	turn, err := trace.TurnSpend(ctx, s, "ann", "t1")
	require.NoError(t, err)
	assert.Equal(t, 900, turn.Tokens(), "r2, r3 and r4: the turn since the last input")

	thread, n, err := trace.SpendOf(ctx, s, trace.RunQuery{Owner: "ann", Thread: "t1"})
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	assert.Equal(t, 1000, thread.Tokens())

	owner, _, err := trace.SpendOf(ctx, s, trace.RunQuery{Owner: "ann"})
	require.NoError(t, err)
	assert.Equal(t, 2000, owner.Tokens())
	assert.InDelta(t, 2.0, owner.CostUSD, 1e-9)
	assert.Equal(t, 5, owner.Calls, "ann's five runs, not bob's")
}

// TestSpendCountsEveryPageOfARun: a run whose model calls fill several
// pages of events is summed whole, by RunSpend, SpendOf and TurnSpend.
func TestSpendCountsEveryPageOfARun(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	require.NoError(t, s.CreateRun(ctx, trace.RunInfo{ID: "r", Owner: "ann", Thread: "t1", Start: trace.StartInput,
		Status: trace.StatusDone, StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}))
	var specs []any
	for i := range 7 {
		specs = append(specs, "model_call", "wf/n", 0, llm.ModelCall{Model: "gpt-4o", PromptTokens: 10 << i})
		specs = append(specs, "custom", "wf/n", 0, nil)
	}
	require.NoError(t, s.AppendEvents(ctx, synthetic(t, specs...)))
	paged := &meteredStore{Store: s, page: 2}

	run, err := trace.RunSpend(ctx, paged, "r")
	require.NoError(t, err)
	assert.Equal(t, 7, run.Calls)
	assert.Equal(t, 10*127, run.Tokens(), "every call's tokens, the last page's too")
	assert.Greater(t, len(paged.reads), 3, "pages of two events")

	owner, _, err := trace.SpendOf(ctx, paged, trace.RunQuery{Owner: "ann"})
	require.NoError(t, err)
	assert.Equal(t, 10*127, owner.Tokens())
	turn, err := trace.TurnSpend(ctx, paged, "ann", "t1")
	require.NoError(t, err)
	assert.Equal(t, 10*127, turn.Tokens())
}

// runsMeter is a store that records what each Runs call asked and the
// bytes of the large fields of the runs it returned.
type runsMeter struct {
	trace.Store

	mu    sync.Mutex
	asked []trace.RunQuery
	large []int // per call: bytes of Input, Runtime and FinalState
}

func (s *runsMeter) Runs(ctx context.Context, q trace.RunQuery) ([]trace.RunInfo, error) {
	runs, err := s.Store.Runs(ctx, q)
	n := 0
	for _, r := range runs {
		n += len(r.Input) + len(r.FinalState)
		for k, v := range r.Runtime {
			n += len(k) + len(v)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked, s.large = append(s.asked, q), append(s.large, n)
	return runs, err
}

// spendRuns creates n runs of owner ann on thread t1, all started at the
// same time, each with one model call of 10 tokens and a
// final state of 10 KB; the first (by Runs' order, the last) started
// with an input, the others continued it.
func spendRuns(t *testing.T, n int) trace.Store {
	t.Helper()
	ctx := t.Context()
	s := memory.New()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	final := json.RawMessage(`{"s":"` + strings.Repeat("x", 10_000) + `"}`)
	for i := range n {
		id := fmt.Sprintf("r%05d", i)
		start := trace.StartContinue
		if i == 0 {
			start = trace.StartInput
		}
		require.NoError(t, s.CreateRun(ctx, trace.RunInfo{ID: id, Owner: "ann", Thread: "t1", Start: start,
			Status: trace.StatusRunning, StartedAt: at, Input: json.RawMessage(`{"q":"why?"}`)}))
		evs := synthetic(t, "model_call", "wf/n", 0, llm.ModelCall{Model: "gpt-4o", PromptTokens: 10, CostUSD: usd(0.001)})
		evs[0].RunID = id
		require.NoError(t, s.AppendEvents(ctx, evs))
		require.NoError(t, s.FinishRun(ctx, trace.RunInfo{ID: id, Status: trace.StatusDone, FinalState: final}))
	}
	return s
}

// TestSpendOfSumsEveryPageOfRuns: an owner with more runs than a page of
// AllRuns, all started at the same time, is summed whole, each run once,
// by SpendOf and TurnSpend, reading the runs in several pages.
func TestSpendOfSumsEveryPageOfRuns(t *testing.T) {
	const runs = 2*trace.RunPage + 3
	s := &runsMeter{Store: spendRuns(t, runs)}

	sp, n, err := trace.SpendOf(t.Context(), s, trace.RunQuery{Owner: "ann", Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, runs, n, "every run, the query's Limit ignored")
	assert.Equal(t, runs, sp.Calls)
	assert.Equal(t, 10*runs, sp.Tokens())
	assert.Len(t, s.asked, 4, "three pages of runs and the empty one after")

	turn, err := trace.TurnSpend(t.Context(), s, "ann", "t1")
	require.NoError(t, err)
	assert.Equal(t, 10*runs, turn.Tokens(), "the turn reaches its input in the third page")
}

// TestSpendReadsBriefPagesOfRuns: SpendOf and TurnSpend ask for pages of
// RunPage runs at most, without their large fields, and get none of
// their final states, inputs or runtimes.
func TestSpendReadsBriefPagesOfRuns(t *testing.T) {
	s := &runsMeter{Store: spendRuns(t, 3)}
	full, err := s.Store.Runs(t.Context(), trace.RunQuery{})
	require.NoError(t, err)
	require.NotEmpty(t, full[0].FinalState, "precondition: the runs have final states")

	_, _, err = trace.SpendOf(t.Context(), s, trace.RunQuery{Owner: "ann"})
	require.NoError(t, err)
	_, err = trace.TurnSpend(t.Context(), s, "ann", "t1")
	require.NoError(t, err)
	require.NotEmpty(t, s.asked)
	for i, q := range s.asked {
		assert.True(t, q.Brief, "query %d is brief", i)
		assert.LessOrEqual(t, q.Limit, trace.RunPage, "query %d asks for a page", i)
		assert.Zero(t, s.large[i], "query %d returned no large fields", i)
	}
}
