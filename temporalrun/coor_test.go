package temporalrun_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	spostgres "github.com/coorflow/coorflow/store/postgres"
	"github.com/coorflow/coorflow/temporalrun"
	"github.com/coorflow/coorflow/workflows"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestCoorRunsOnTemporalEndToEnd runs the built-in coor workflow on
// Temporal against the OpenAI wire protocol (llm/openaitest): the
// coordinator hands off, the planner plans, the human review pauses the
// run (a Temporal update answers it), the team's researcher answers and
// the reporter writes the report. Every model call is made once.
func TestCoorRunsOnTemporalEndToEnd(t *testing.T) {
	runCoor(t, nil)
}

// runCoor runs the coor workflow as TestCoorRunsOnTemporalEndToEnd says,
// on a runner configured by what setup returns (setup may start workers
// of other queues), and returns the env and the thread.
func runCoor(t *testing.T, setup func(e *env) func(*temporalrun.Config)) (*env, string) {
	e := newEnv(t)
	pl := map[string]any{
		"title": "Engines", "thought": "one angle", "locale": "en-US", "has_enough_context": false, "new_agents_needed": []any{},
		"steps": []any{map[string]any{"id": "s1", "agent_name": "researcher", "title": "Survey", "description": "Survey users.",
			"step_type": "research", "need_search": false, "depends_on": []string{}}},
	}
	srv := openaitest.NewServer(
		openaitest.ToolCalls(openaitest.ToolCall{Name: "handoff_to_planner", Arguments: `{"task":"Compare two engines","locale":"en-US"}`}),
		openaitest.Text(mustJSON(t, pl)),
		openaitest.Text(mustJSON(t, map[string]any{"reasoning": "asked around", "result": "Result: LIKED", "summary": "users like both",
			"confidence": 0.9, "sources": []string{"https://example.org/liked"}})),
		openaitest.Text("# Report\nBoth are fine."),
	)
	defer srv.Close()
	getenv := func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.BaseURL()}[k]
	}
	f, err := workflows.Builtin("coor")
	require.NoError(t, err)
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: getenv})
	require.NoError(t, err)
	require.False(t, ms.Demo)
	pool := pgtest.Pool(t)
	st := spostgres.New(pool, spostgres.WithSchema(pgtest.Schema(t, pool, "coorflow_temporal_store_")))
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, Store: st, Getenv: getenv})
	require.NoError(t, err)
	e.startWorker(e.queue, false)
	var mod []func(*temporalrun.Config)
	if setup != nil {
		mod = append(mod, setup(e))
	}
	run := e.runner(r, mod...)
	thread := "coor-" + randomHex()

	res, err := run.Invoke(t.Context(), graph.Input(nodes.Input.Set("Compare two engines")), graph.Thread(thread))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status, "the human review waits")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "review", res.Interrupts[0].Node)

	res, err = run.Invoke(t.Context(), nil, graph.Thread(thread), graph.Resume("accept"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.True(t, strings.HasPrefix(nodes.Answer.Get(res.State), "# Report"), nodes.Answer.Get(res.State))
	p := nodes.PlanKey.Get(res.State)
	require.NotNil(t, p)
	require.Len(t, p.Steps, 1)
	assert.Equal(t, plan.StepDone, p.Steps[0].Result.Status)
	assert.Len(t, srv.Requests(), 4, "each model call was made once")
	assert.Zero(t, srv.Remaining())
	return e, thread
}
