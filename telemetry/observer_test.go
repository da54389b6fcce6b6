package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/telemetry"
	"github.com/coorflow/coorflow/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var logKey = graph.NewKey("log", graph.Append[string]())

// recorder returns a tracer whose ended spans the returned recorder holds.
func recorder(t *testing.T) (trace.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	return tp.Tracer(telemetry.TracerName), rec
}

// byName indexes ended spans by name; every name must be unique.
func byName(t *testing.T, spans []sdktrace.ReadOnlySpan) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	out := make(map[string]sdktrace.ReadOnlySpan, len(spans))
	for _, s := range spans {
		require.NotContains(t, out, s.Name(), "span names are unique in this test")
		out[s.Name()] = s
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

func parentOf(t *testing.T, child, parent sdktrace.ReadOnlySpan) {
	t.Helper()
	assert.Equal(t, parent.SpanContext().SpanID(), child.Parent().SpanID(), "%q is a child of %q", child.Name(), parent.Name())
	assert.Equal(t, parent.SpanContext().TraceID(), child.SpanContext().TraceID())
}

func drain(t *testing.T, seq func(func(graph.Event, error) bool)) error {
	t.Helper()
	var last error
	for _, err := range seq {
		last = err
	}
	return last
}

// planCost is what plan's model call cost.
var planCost = 0.25

// agentGraph: plan (a model call of its own) -> work (an agent that calls a
// tool and a model).
func agentGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	g := graph.New("wf", logKey)
	g.AddNode("plan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, llm.ModelCall{
			Tier: "reasoning", Model: "m1", PromptTokens: 12, CachedTokens: 8, CompletionTokens: 5, ReasoningTokens: 3,
			CostUSD: &planCost, Duration: 10 * time.Millisecond,
		})
		return graph.Update(graph.AppendTo(logKey, "plan")), nil
	})
	g.AddNode("work", func(ctx context.Context, s graph.State) (graph.Command, error) {
		ctx = graph.WithScope(ctx, "agent:coder")
		graph.Emit(ctx, agentevent.Started{Agent: "coder", Tier: "code"})
		graph.Emit(ctx, tools.CallEvent{Agent: "coder", ID: "c1", Name: "search"})
		graph.Emit(ctx, tools.ResultEvent{Agent: "coder", ID: "c1", Name: "search", Status: "degraded"})
		graph.Emit(ctx, llm.ModelCall{
			Agent: "coder", Tier: "code", Model: "m2", PromptTokens: 30, CompletionTokens: 7, Err: "rate limited",
		})
		graph.Emit(ctx, agentevent.Ended{Agent: "coder"})
		return graph.Update(graph.AppendTo(logKey, "work")), nil
	})
	g.AddEdge(graph.Start, "plan")
	g.AddEdge("plan", "work")
	g.AddEdge("work", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func TestObserverBuildsASpanTreeParentedByPath(t *testing.T) {
	tracer, rec := recorder(t)
	ctx, caller := tracer.Start(t.Context(), "caller")
	r := agentGraph(t)
	require.NoError(t, drain(t, telemetry.Trace(ctx, tracer, r.Stream(ctx, graph.Input()), attribute.String("coorflow.thread", "t1"))))
	caller.End()

	spans := rec.Ended()
	s := byName(t, spans)
	var names []string
	for _, sp := range spans {
		names = append(names, sp.Name())
	}
	assert.ElementsMatch(t, []string{
		"caller", "run wf", "step 0", "step 1", "node plan", "node work",
		"chat m1", "invoke_agent coder", "execute_tool search", "chat m2",
	}, names)
	assert.Len(t, rec.Started(), len(spans), "every span that started ended")

	parentOf(t, s["run wf"], s["caller"])
	parentOf(t, s["step 0"], s["run wf"])
	parentOf(t, s["step 1"], s["run wf"])
	parentOf(t, s["node plan"], s["step 0"])
	parentOf(t, s["node work"], s["step 1"])
	parentOf(t, s["chat m1"], s["node plan"])
	parentOf(t, s["invoke_agent coder"], s["node work"])
	parentOf(t, s["execute_tool search"], s["invoke_agent coder"])
	parentOf(t, s["chat m2"], s["invoke_agent coder"])

	run := attrs(s["run wf"])
	assert.Equal(t, "wf", run[telemetry.AttrGraph].AsString())
	assert.Equal(t, "done", run[telemetry.AttrRunStatus].AsString())
	assert.Equal(t, "t1", run["coorflow.thread"].AsString(), "the caller's attributes are on the run span")
	assert.Equal(t, int64(1), run[telemetry.AttrModelCalls].AsInt64(), "the failed call is not counted")
	assert.Equal(t, int64(12), run[telemetry.AttrInputTokens].AsInt64())
	assert.Equal(t, int64(8), run[telemetry.AttrCachedInputTokens].AsInt64())
	assert.Equal(t, int64(3), run[telemetry.AttrReasoningTokens].AsInt64())
	assert.InDelta(t, 0.25, run[telemetry.AttrCostUSD].AsFloat64(), 1e-12)

	assert.Equal(t, []string{"plan"}, attrs(s["step 0"])[telemetry.AttrStepNodes].AsStringSlice())
	node := attrs(s["node work"])
	assert.Equal(t, "work", node[telemetry.AttrNode].AsString())
	assert.Equal(t, int64(1), node[telemetry.AttrStep].AsInt64())
	assert.Equal(t, int64(1), node[telemetry.AttrAttempt].AsInt64())
	assert.Equal(t, codes.Unset, s["node work"].Status().Code)

	m1 := attrs(s["chat m1"])
	assert.Equal(t, "m1", m1[telemetry.AttrGenAIModel].AsString())
	assert.Equal(t, "reasoning", m1[telemetry.AttrTier].AsString())
	assert.Equal(t, int64(12), m1[telemetry.AttrGenAIInputTokens].AsInt64())
	assert.Equal(t, int64(5), m1[telemetry.AttrGenAIOutputTokens].AsInt64())
	assert.Equal(t, int64(8), m1[telemetry.AttrCachedInputTokens].AsInt64())
	assert.Equal(t, int64(3), m1[telemetry.AttrReasoningTokens].AsInt64())
	assert.InDelta(t, 0.25, m1[telemetry.AttrCostUSD].AsFloat64(), 1e-12)
	_, priced := attrs(s["chat m2"])[telemetry.AttrCostUSD]
	assert.False(t, priced, "no cost on a call without a price")
	assert.Equal(t, 10*time.Millisecond, s["chat m1"].EndTime().Sub(s["chat m1"].StartTime()), "the span covers the call's duration")
	assert.Equal(t, trace.SpanKindClient, s["chat m1"].SpanKind())

	m2 := s["chat m2"]
	assert.Equal(t, codes.Error, m2.Status().Code)
	assert.Equal(t, "rate limited", m2.Status().Description)
	assert.Equal(t, "coder", attrs(m2)[telemetry.AttrAgent].AsString())

	tool := attrs(s["execute_tool search"])
	assert.Equal(t, "search", tool[telemetry.AttrGenAIToolName].AsString())
	assert.Equal(t, "c1", tool[telemetry.AttrGenAIToolCallID].AsString())
	assert.Equal(t, "degraded", tool[telemetry.AttrToolStatus].AsString())
	assert.Equal(t, codes.Unset, s["execute_tool search"].Status().Code, "a degraded tool call is not an error")
	assert.Equal(t, "coder", attrs(s["invoke_agent coder"])[telemetry.AttrGenAIAgentName].AsString())
}

func TestObserverMarksAFailedNodeAndRun(t *testing.T) {
	boom := errors.New("boom")
	g := graph.New("fails", logKey)
	g.AddNode("flaky", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Command{}, boom
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Microsecond}))
	g.AddEdge(graph.Start, "flaky")
	g.AddEdge("flaky", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	tracer, rec := recorder(t)

	err = drain(t, telemetry.Trace(t.Context(), tracer, r.Stream(t.Context(), graph.Input())))
	require.ErrorIs(t, err, boom)

	s := byName(t, rec.Ended())
	require.Contains(t, s, "node flaky")
	node := s["node flaky"]
	assert.Equal(t, int64(3), attrs(node)[telemetry.AttrAttempt].AsInt64(), "the attempt that failed")
	assert.Equal(t, codes.Error, node.Status().Code)
	assert.Contains(t, node.Status().Description, "boom")
	run := s["run fails"]
	assert.Equal(t, codes.Error, run.Status().Code)
	assert.Equal(t, "error", attrs(run)[telemetry.AttrRunStatus].AsString())
	assert.Len(t, rec.Started(), len(rec.Ended()))
}

func TestObserverRecordsAnInterruptOnTheRunSpan(t *testing.T) {
	g := graph.New("ask", logKey)
	g.AddNode("review", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if _, err := graph.Interrupt(ctx, "ok?"); err != nil {
			return graph.Command{}, err
		}
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "review")
	g.AddEdge("review", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	tracer, rec := recorder(t)

	require.NoError(t, drain(t, telemetry.Trace(t.Context(), tracer, r.Stream(t.Context(), graph.Input(), graph.Thread("t")))))

	s := byName(t, rec.Ended())
	run := s["run ask"]
	assert.Equal(t, "interrupted", attrs(run)[telemetry.AttrRunStatus].AsString())
	assert.Equal(t, codes.Unset, run.Status().Code, "an interrupt is not an error")
	var names []string
	for _, ev := range run.Events() {
		names = append(names, ev.Name)
		if ev.Name == "interrupt" {
			for _, kv := range ev.Attributes {
				if kv.Key == "coorflow.interrupt.paths" {
					assert.Equal(t, []string{"ask/review"}, kv.Value.AsStringSlice())
				}
			}
		}
	}
	assert.Contains(t, names, "interrupt")
	assert.Contains(t, names, "checkpoint")
	assert.Equal(t, codes.Unset, s["node review"].Status().Code)
}

func TestObserverNestsASubgraphRunUnderItsNode(t *testing.T) {
	sub := graph.New("inner", logKey)
	sub.AddNode("x", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(logKey, "x")), nil
	})
	sub.AddEdge(graph.Start, "x")
	sub.AddEdge("x", graph.End)
	inner, err := sub.Compile()
	require.NoError(t, err)
	g := graph.New("outer", logKey)
	g.AddSubgraph("team", inner)
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	tracer, rec := recorder(t)

	require.NoError(t, drain(t, telemetry.Trace(t.Context(), tracer, r.Stream(t.Context(), graph.Input()))))

	var outerStep, innerStep sdktrace.ReadOnlySpan
	s := make(map[string]sdktrace.ReadOnlySpan)
	for _, sp := range rec.Ended() {
		if sp.Name() == "step 0" {
			if attrs(sp)[telemetry.AttrPath].AsString() == "outer" {
				outerStep = sp
			} else {
				innerStep = sp
			}
			continue
		}
		s[sp.Name()] = sp
	}
	require.NotNil(t, outerStep)
	require.NotNil(t, innerStep)
	parentOf(t, s["node team"], outerStep)
	parentOf(t, s["run team"], s["node team"])
	parentOf(t, innerStep, s["run team"])
	parentOf(t, s["node x"], innerStep)
	assert.Equal(t, "outer/team/x", attrs(s["node x"])[telemetry.AttrPath].AsString())
}

func TestTraceEndsOpenSpansWhenTheConsumerStops(t *testing.T) {
	tracer, rec := recorder(t)
	r := agentGraph(t)
	for ev := range telemetry.Trace(t.Context(), tracer, r.Stream(t.Context(), graph.Input())) {
		if _, ok := ev.Data.(tools.CallEvent); ok {
			break
		}
	}
	require.NotEmpty(t, rec.Started())
	assert.Len(t, rec.Ended(), len(rec.Started()), "no span is left open")
	s := byName(t, rec.Ended())
	assert.Equal(t, codes.Error, s["execute_tool search"].Status().Code)
}

func TestObserveFeedsSpansFromEvents(t *testing.T) {
	tracer, rec := recorder(t)
	observe := telemetry.Observe(t.Context(), tracer)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, ev := range []graph.Event{
		{Kind: graph.EventRunStart, Path: "g", Time: at},
		{Kind: graph.EventStepStart, Path: "g", Step: 0, Data: []string{"a"}, Time: at},
		{Kind: graph.EventNodeStart, Path: "g/a", Node: "a", Attempt: 1, Time: at},
		{Kind: graph.EventCustom, Path: "g/a", Node: "a", Time: at.Add(3 * time.Second),
			Data: tools.ResultEvent{ID: "t9", Name: "fetch", Status: "failed", Duration: time.Second}},
		{Kind: graph.EventNodeEnd, Path: "g/a", Node: "a", Attempt: 1, Time: at.Add(4 * time.Second)},
		{Kind: graph.EventStepEnd, Path: "g", Time: at.Add(4 * time.Second)},
		{Kind: graph.EventRunEnd, Path: "g", Data: graph.StatusDone, Time: at.Add(5 * time.Second)},
	} {
		observe(ev)
	}
	s := byName(t, rec.Ended())
	tool := s["execute_tool fetch"]
	parentOf(t, tool, s["node a"])
	assert.Equal(t, at.Add(2*time.Second), tool.StartTime(), "a result without its call covers its duration")
	assert.Equal(t, codes.Error, tool.Status().Code)
	assert.Equal(t, at, s["run g"].StartTime())
	assert.Equal(t, at.Add(5*time.Second), s["run g"].EndTime())
}

func TestObserverAddsAgentsBuiltAndWarningsAsSpanEvents(t *testing.T) {
	tracer, rec := recorder(t)
	g := graph.New("wf")
	g.AddNode("build", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, agentevent.Created{Agent: "analyst", Tier: "reasoning"})
		graph.Emit(ctx, agentevent.Warning{Value: "tools dropped: teleport"})
		graph.Emit(ctx, "a plain value: no span, no span event")
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "build")
	g.AddEdge("build", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	require.NoError(t, drain(t, telemetry.Trace(t.Context(), tracer, r.Stream(t.Context(), graph.Input()))))

	s := byName(t, rec.Ended())
	assert.Len(t, s, 3, "run, step and node: the custom events start no span")
	events := s["node build"].Events()
	require.Len(t, events, 2)
	assert.Equal(t, "agent_created", events[0].Name)
	created := map[attribute.Key]attribute.Value{}
	for _, kv := range events[0].Attributes {
		created[kv.Key] = kv.Value
	}
	assert.Equal(t, "analyst", created[telemetry.AttrGenAIAgentName].AsString())
	assert.Equal(t, "reasoning", created[telemetry.AttrTier].AsString())
	assert.Equal(t, "wf/build", created[telemetry.AttrPath].AsString())
	assert.Equal(t, "warning", events[1].Name)
}
