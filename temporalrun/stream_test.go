package temporalrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/graph/runnertest"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/temporalrun"
)

// TestStreamSemantics runs the engine's stream checks on Temporal: Stream
// yields what the engine's Stream yields in process for the same graphs.
func TestStreamSemantics(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	runnertest.RunStreams(t, runnertest.StreamHarness{
		Saver:  e.saver,
		Runner: func(t *testing.T, r *graph.Runnable) runnertest.Streamer { return e.runner(r) },
	})
}

var replyKey = graph.NewKey[string]("reply")

// TestStreamTokensOfAModelCallReachTheCaller: a node calls a model that
// streams (OpenAI's wire protocol); its tokens reach the caller as they
// come, as llm.Token values, with the call's model_call event.
func TestStreamTokensOfAModelCallReachTheCaller(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	srv := openaitest.NewServer(openaitest.Response{Text: "Hello brave new world", Chunks: []string{"Hello", " brave", " new", " world"}})
	defer srv.Close()
	base, err := openai.New(openai.WithBaseURL(srv.BaseURL()), openai.WithToken("test"), openai.WithModel("gpt-4o"))
	require.NoError(t, err)
	model := llm.Observe(base, llm.ModelInfo{Tier: "basic", Model: "gpt-4o"})
	g := graph.New("tokens-"+randomHex(), replyKey)
	g.AddNode("talk", func(ctx context.Context, s graph.State) (graph.Command, error) {
		resp, err := model.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(replyKey.Set(resp.Choices[0].Content)), nil
	})
	g.AddEdge(graph.Start, "talk")
	g.AddEdge("talk", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	var tokens []string
	var call *llm.ModelCall
	var last graph.Event
	for ev, err := range e.runner(r).Stream(t.Context(), graph.Input(), graph.Thread("tokens-"+randomHex())) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case llm.Token:
			assert.Equal(t, r.Name()+"/talk", ev.Path)
			tokens = append(tokens, string(d))
		case llm.ModelCall:
			call = &d
		}
		last = ev
	}
	assert.Equal(t, []string{"Hello", " brave", " new", " world"}, tokens)
	require.NotNil(t, call, "the model call's event")
	assert.Equal(t, "gpt-4o", call.Model)
	assert.Equal(t, graph.EventRunEnd, last.Kind)
	assert.Equal(t, "Hello brave new world", replyKey.Get(last.State))
	assert.Len(t, srv.Requests(), 1)
}

// blocking is a graph whose node says it started (a custom event) and
// waits for its context to end.
func blocking(t *testing.T) *graph.Runnable {
	g := graph.New("block-"+randomHex(), callLog)
	g.AddNode("wait", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, "started")
		<-ctx.Done()
		return graph.Command{}, ctx.Err()
	})
	g.AddEdge(graph.Start, "wait")
	g.AddEdge("wait", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// workflowStatus returns the status of the thread's newest workflow run.
func workflowStatus(t *testing.T, e *env, thread string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	d, err := e.client.DescribeWorkflow(t.Context(), thread, "")
	require.NoError(t, err)
	return d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
}

// TestStreamCancelCancelsTheWorkflow: cancelling the caller's context
// cancels the run's workflow; the stream ends with the error.
func TestStreamCancelCancelsTheWorkflow(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	r := blocking(t)
	thread := "cancel-" + randomHex()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var last graph.Event
	var lastErr error
	for ev, err := range e.runner(r).Stream(ctx, graph.Input(), graph.Thread(thread)) {
		if ev.Data == "started" {
			cancel()
		}
		last, lastErr = ev, err
	}
	assert.Equal(t, graph.EventError, last.Kind)
	require.ErrorIs(t, lastErr, context.Canceled)
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, workflowStatus(t, e, thread))
}

// TestStreamBreakCancelsTheWorkflow: breaking out of the loop cancels the
// run's workflow, as it cancels a run in process.
func TestStreamBreakCancelsTheWorkflow(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	r := blocking(t)
	thread := "break-" + randomHex()
	for ev, err := range e.runner(r).Stream(t.Context(), graph.Input(), graph.Thread(thread)) {
		require.NoError(t, err)
		if ev.Data == "started" {
			break
		}
	}
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, workflowStatus(t, e, thread))
}

// TestStreamFailureEndsWithTheNodeError: a node's failure reaches the
// caller as in process: its node_end carries the error, and the stream
// ends with an EventError whose error is the *graph.NodeError.
func TestStreamFailureEndsWithTheNodeError(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	g := graph.New("fail-"+randomHex(), callLog)
	g.AddNode("bad", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Command{}, errors.New("the tool broke")
	})
	g.AddEdge(graph.Start, "bad")
	g.AddEdge("bad", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	var evs []graph.Event
	var last error
	for ev, err := range e.runner(r).Stream(t.Context(), graph.Input(), graph.Thread("fail-"+randomHex())) {
		evs = append(evs, ev)
		last = err
	}
	require.NotEmpty(t, evs)
	end := evs[len(evs)-1]
	assert.Equal(t, graph.EventError, end.Kind)
	var ne *graph.NodeError
	require.ErrorAs(t, last, &ne)
	assert.Equal(t, "bad", ne.Node)
	i := slices.IndexFunc(evs, func(ev graph.Event) bool { return ev.Kind == graph.EventNodeEnd })
	require.GreaterOrEqual(t, i, 0)
	require.ErrorAs(t, evs[i].Err, &ne, "the node_end carries the node's error")
	assert.ErrorContains(t, evs[i].Err, "the tool broke")
}

// TestStreamSaysWhenTheLogDroppedEvents: beyond the event log's bounds a
// step's events are dropped, the run goes on, and the stream says how
// many at its end.
func TestStreamSaysWhenTheLogDroppedEvents(t *testing.T) {
	e := newEnv(t)
	small := temporalrun.NewEventLog(e.pool, temporalrun.EventLogConfig{Schema: e.schema, MaxFrames: 3})
	require.NoError(t, small.Start(t.Context()))
	defer small.Close()
	e.graphs.StreamTo(small)
	e.startWorker(e.queue, false)
	// One node, as chain's, that also says it ran: the workflow exists.
	ran := make(chan struct{})
	var once sync.Once
	g := graph.New("bounded-"+randomHex(), callLog)
	g.AddNode("n00", func(ctx context.Context, s graph.State) (graph.Command, error) {
		once.Do(func() { close(ran) })
		return graph.Update(graph.AppendTo(callLog, "n00@"+activity.GetInfo(ctx).TaskQueue)), nil
	})
	g.AddEdge(graph.Start, "n00")
	g.AddEdge("n00", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	run := e.runner(r, func(c *temporalrun.Config) { c.Events = small })
	var evs []graph.Event
	thread := "bounded-" + randomHex()
	for ev, err := range run.Stream(t.Context(), graph.Input(), graph.Thread(thread)) {
		require.NoError(t, err)
		if len(evs) == 0 {
			// The run's start, which the caller yields before it reads
			// the log: read nothing until the workflow has ended, so the
			// log holds every frame unread and drops those beyond its
			// bound, however fast the worker and this loop are.
			require.Equal(t, graph.EventRunStart, ev.Kind)
			<-ran
			require.NoError(t, e.client.GetWorkflow(t.Context(), thread, "").Get(t.Context(), nil))
		}
		evs = append(evs, ev)
	}
	require.GreaterOrEqual(t, len(evs), 3)
	// The end: what was dropped, the run's last checkpoint if its event
	// was dropped too (TestStreamSaysTheRunsCheckpointWhenNoEventDid), the
	// run's end.
	before := evs[len(evs)-2]
	if before.Kind == graph.EventCheckpoint {
		before = evs[len(evs)-3]
	}
	dropped, ok := before.Data.(temporalrun.EventsDropped)
	require.True(t, ok, "the events before the end say what was dropped: %v", before)
	assert.Positive(t, dropped.Events)
	assert.Equal(t, graph.EventRunEnd, evs[len(evs)-1].Kind)
	assert.Equal(t, []string{"n00@" + e.queue}, callLog.Get(evs[len(evs)-1].State), "the run lost nothing")
}

// TestStreamSaysTheRunsCheckpointWhenNoEventDid: when no event said which
// checkpoint the run ended at (the log dropped it over its bounds, or the
// worker died after storing the step), the stream says it before the end,
// so a consumer that keeps the last checkpoint it was told of (the
// server) reads the run's state there. Here the caller reads another log
// than the one the worker writes: it sees no event of the steps at all.
func TestStreamSaysTheRunsCheckpointWhenNoEventDid(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	elsewhere := temporalrun.NewEventLog(e.pool, temporalrun.EventLogConfig{Schema: pgtest.Schema(t, e.pool, "coorflow_elsewhere_")})
	require.NoError(t, elsewhere.Start(t.Context()))
	defer elsewhere.Close()
	r := chain("unseen-"+randomHex(), 2)
	run := e.runner(r, func(c *temporalrun.Config) { c.Events = elsewhere })
	thread := "unseen-" + randomHex()
	var kinds []graph.EventKind
	var told string
	for ev, err := range run.Stream(t.Context(), graph.Input(), graph.Thread(thread)) {
		require.NoError(t, err)
		kinds = append(kinds, ev.Kind)
		if ev.Kind == graph.EventCheckpoint {
			told, _ = ev.Data.(string)
			assert.Equal(t, r.Name(), ev.Path)
			assert.Equal(t, 1, ev.Step, "the last step's")
		}
	}
	assert.Equal(t, []graph.EventKind{graph.EventRunStart, graph.EventCheckpoint, graph.EventRunEnd}, kinds)
	head, err := r.State(t.Context(), thread, graph.WithSaver(e.saver))
	require.NoError(t, err)
	assert.Equal(t, head.Checkpoint, told)
}

// TestStreamNeedsTheEventLog: a runner without an event log says what is
// missing.
func TestStreamNeedsTheEventLog(t *testing.T) {
	e := newEnv(t)
	run := e.runner(chain("nolog-"+randomHex(), 1), func(c *temporalrun.Config) { c.Events = nil })
	var last error
	for _, err := range run.Stream(t.Context(), graph.Input(), graph.Thread("nolog")) {
		last = err
	}
	assert.EqualError(t, last, "temporalrun: Stream needs Config.Events: the event log the workers store the run's events in")
}

// BenchmarkStreamedEventLatency measures the time from graph.Emit in a
// node on the worker to the event reaching the caller of Stream, one
// event at a time (the node emits the next once the caller has the last):
// on Temporal through the event log in PostgreSQL, and in process for
// comparison.
func BenchmarkStreamedEventLatency(b *testing.B) {
	ping := func(ack chan struct{}, n int) *graph.Runnable {
		g := graph.New("latency-"+randomHex(), callLog)
		g.AddNode("emit", func(ctx context.Context, s graph.State) (graph.Command, error) {
			for range n {
				graph.Emit(ctx, "ping")
				select {
				case <-ack:
				case <-ctx.Done():
					return graph.Command{}, ctx.Err()
				}
			}
			return graph.Command{}, nil
		})
		g.AddEdge(graph.Start, "emit")
		g.AddEdge("emit", graph.End)
		r, err := g.Compile()
		require.NoError(b, err)
		return r
	}
	measure := func(b *testing.B, stream func(r *graph.Runnable, thread string) func(func(graph.Event, error) bool)) {
		ack := make(chan struct{})
		r := ping(ack, b.N)
		var total, worst time.Duration
		b.ReportAllocs()
		b.ResetTimer()
		for ev, err := range stream(r, "latency-"+randomHex()) {
			require.NoError(b, err)
			if ev.Data != "ping" {
				continue
			}
			d := time.Since(ev.Time)
			total += d
			worst = max(worst, d)
			ack <- struct{}{}
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/event")
		b.ReportMetric(float64(worst.Nanoseconds()), "max-ns")
	}
	b.Run("temporal", func(b *testing.B) {
		e := newBenchEnv(b)
		measure(b, func(r *graph.Runnable, thread string) func(func(graph.Event, error) bool) {
			return e.runner(r).Stream(b.Context(), graph.Input(), graph.Thread(thread), graph.CustomEvents("custom"))
		})
	})
	b.Run("in-process", func(b *testing.B) {
		e := newEnv(b)
		measure(b, func(r *graph.Runnable, thread string) func(func(graph.Event, error) bool) {
			return r.Stream(b.Context(), graph.Input(), graph.Thread(thread), graph.WithSaver(e.saver), graph.CustomEvents("custom"))
		})
	})
}

// milestone is a custom event of the caller's own, which the runner's
// payload decoder (trace.DecodePayload) does not know.
type milestone struct {
	Step string `json:"step"`
}

func (milestone) EventName() string { return "milestone" }

// TestStreamKeepsTheNameOfACustomEventItCannotDecode: a custom event of a
// type Config.Payloads does not decode reaches a stream that selects it
// by name, under its name, with its value as JSON.
func TestStreamKeepsTheNameOfACustomEventItCannotDecode(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	g := graph.New("named-"+randomHex(), callLog)
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, milestone{Step: "half"})
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	var got []graph.Event
	for ev, err := range e.runner(r).Stream(t.Context(), graph.Input(), graph.Thread("named-"+randomHex()),
		graph.Events(graph.EventCustom), graph.CustomEvents("milestone")) {
		require.NoError(t, err)
		got = append(got, ev)
	}
	require.Len(t, got, 1)
	assert.Equal(t, "milestone", got[0].Name())
	data, err := json.Marshal(got[0].Data)
	require.NoError(t, err)
	assert.JSONEq(t, `{"step":"half"}`, string(data))
}
