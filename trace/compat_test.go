package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
	"github.com/coorflow/coorflow/window"
)

// beforeCustomEvents is a run of builtCalc recorded by the engine at
// commit 56d1c10, when graph itself listed the agent kinds (token,
// model_call, tool_call, tool_result, agent_created, agent_start,
// agent_end, snapshot, warning) and their payloads.
const beforeCustomEvents = "testdata/recorded-before-custom-events.json"

// builtCalc is the calc workflow with a solver the node announces as built
// (agent_created), a plain custom value, and a tool that warns.
func builtCalc(t *testing.T, model llms.Model) *graph.Runnable {
	t.Helper()
	add := tools.Typed("add", "Adds two numbers.", addSchema, func(ctx context.Context, a addArgs) (string, error) {
		graph.Emit(ctx, agentevent.Warning{Value: "add: the sum is exact"})
		return fmt.Sprint(a.A + a.B), nil
	})
	reg, err := tools.NewRegistry(add)
	require.NoError(t, err)
	agent, err := react.New(react.Config{
		Name: "solver", Model: model, Window: window.New(window.Config{}), Budget: window.Budget{MaxInputTokens: 8000},
		Info: llm.ModelInfo{Tier: "basic", Model: "scripted"}, SystemPrompt: defaultSystem, Tools: reg,
	})
	require.NoError(t, err)
	g := graph.New("calc", questionKey, answerKey, reportKey)
	g.AddNode("solve", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, agentevent.Created{Agent: "solver", Role: "calculator", Tier: "basic", Tools: []string{"add"}, Summary: "Solves arithmetic."})
		graph.Emit(ctx, map[string]string{"note": "a plain custom value"})
		res, err := agent.Run(ctx, react.Task{Input: "Question: " + questionKey.Get(s), Run: "q1"})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(answerKey.Set(res.Output)), nil
	})
	g.AddNode("report", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(reportKey.Set("Answer: " + answerKey.Get(s))), nil
	})
	g.AddEdge(graph.Start, "solve")
	g.AddEdge("solve", "report")
	g.AddEdge("report", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// storedBefore puts the recording made before custom events into a new
// store, as a database written then would hold it.
func storedBefore(t *testing.T) (trace.Store, *trace.Recording) {
	t.Helper()
	raw, err := os.ReadFile(beforeCustomEvents)
	require.NoError(t, err)
	var rec trace.Recording
	require.NoError(t, json.Unmarshal(raw, &rec))
	s := memory.New()
	require.NoError(t, s.CreateRun(t.Context(), rec.Run))
	require.NoError(t, s.AppendEvents(t.Context(), rec.Events))
	require.NoError(t, s.FinishRun(t.Context(), rec.Run))
	return s, &rec
}

func TestARunRecordedBeforeCustomEventsStillReplays(t *testing.T) {
	s, _ := storedBefore(t)
	rec, err := trace.Load(t.Context(), s, "run-old")
	require.NoError(t, err)
	cas, err := trace.NewCassette(rec)
	require.NoError(t, err)
	rep, err := trace.Replay(t.Context(), builtCalc(t, cas), cas)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "the same model calls, tool results, status and state: %s", rep)
	assert.Equal(t, 2, rep.RecordedCalls)
	assert.Equal(t, 2, rep.ReplayedCalls)
}

func TestARunRecordedBeforeCustomEventsStillShowsInTheViewer(t *testing.T) {
	s, _ := storedBefore(t)
	tl, err := trace.LoadTimeline(t.Context(), s, "run-old")
	require.NoError(t, err)
	require.Len(t, tl.Steps, 2)
	solve := tl.Steps[0].Nodes[0]
	assert.Equal(t, []string{"solver"}, solve.Created, "agent_created")
	require.Len(t, solve.Agents, 1)
	a := solve.Agents[0]
	assert.Equal(t, "solver", a.Name)
	assert.Equal(t, "q1", a.Run, "agent_start")
	assert.Equal(t, trace.ItemDone, a.Status, "agent_end")
	assert.Equal(t, 2, a.ModelCalls)
	assert.Equal(t, 81, a.PromptTokens, "model_call payloads")
	assert.Equal(t, 1, a.ToolCalls)
	assert.Equal(t, 2, a.Snapshots)

	d, err := trace.LoadAgent(t.Context(), s, "run-old", a.ID)
	require.NoError(t, err)
	assert.Equal(t, "Question: What is 2 + 3?", d.Task)
	assert.Equal(t, "2 + 3 = 5", d.Output)
	assert.Equal(t, []string{"add"}, d.Tools)
	assert.Equal(t, []string{"add: the sum is exact"}, d.Warnings)
	require.Len(t, d.ToolCalls, 1)
	assert.Equal(t, "ok", d.ToolCalls[0].Status, "tool_result")
	assert.Equal(t, "5", d.ToolCalls[0].Output)
	require.Len(t, d.ModelCalls, 2)
	assert.Equal(t, "2 + 3 = 5", d.ModelCalls[1].Content, "the bodies of the model call")
	require.Len(t, d.Snapshots, 2)
}

// The engine records a run today as it did before custom events: the same
// names, paths, agents and payloads, event for event (but for times and
// durations).
func TestTheRecordedFormatIsTheOneOfBeforeCustomEvents(t *testing.T) {
	_, before := storedBefore(t)
	s := memory.New()
	rec := trace.NewRecorder(s, trace.RecorderConfig{})
	input := graph.Input(questionKey.Set("What is 2 + 3?"))
	runtime := map[string]any{store.RuntimeOwner: "alice", graph.RuntimeThread: "t1", graph.RuntimeRun: "run-now"}
	for _, err := range rec.Record(t.Context(), trace.RunInfo{ID: "run-now", Graph: "calc"},
		builtCalc(t, script()).Stream(t.Context(), input, graph.WithRuntime(runtime))) {
		require.NoError(t, err)
	}
	require.NoError(t, rec.Close(context.Background()))
	now, err := trace.Load(t.Context(), s, "run-now")
	require.NoError(t, err)
	require.Len(t, now.Events, len(before.Events))
	for i, want := range before.Events {
		got := now.Events[i]
		assert.Equal(t, comparable(t, want), comparable(t, got), "event %d (%s)", want.Seq, want.Kind)
	}
}

// comparable is what a recorded event says but for its run, times and
// durations.
func comparable(t *testing.T, e trace.Event) map[string]any {
	t.Helper()
	out := map[string]any{"kind": e.Kind, "path": e.Path, "node": e.Node, "step": e.Step, "attempt": e.Attempt,
		"agent": e.Agent, "error": e.Error, "hash": e.Hash}
	for name, raw := range map[string]json.RawMessage{"payload": e.Payload, "request": e.Request, "response": e.Response} {
		if len(raw) == 0 {
			continue
		}
		var v any
		require.NoError(t, json.Unmarshal(raw, &v))
		if m, ok := v.(map[string]any); ok && name == "payload" && e.Kind == llm.EventModelCall {
			// Fields added since, which older readers ignore: the usage
			// details and the cost.
			for _, k := range []string{"cached_tokens", "cache_write_tokens", "reasoning_tokens", "estimated", "cost_usd"} {
				delete(m, k)
			}
		}
		out[name] = withoutTimes(v)
	}
	return out
}

func withoutTimes(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "time" || k == "duration" {
				delete(v, k)
				continue
			}
			v[k] = withoutTimes(x)
		}
	case []any:
		for i, x := range v {
			v[i] = withoutTimes(x)
		}
	}
	return v
}
