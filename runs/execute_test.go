package runs_test

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/trace"
	tracemem "github.com/coorflow/coorflow/trace/memory"
)

// scriptedExecutor yields its events, each with its error, as an
// executor elsewhere (a Temporal worker) would; it keeps what it was
// asked.
type scriptedExecutor struct {
	events []graph.Event
	errs   map[int]error
	input  *[]graph.Write
	opts   *int
}

func (x scriptedExecutor) Stream(_ context.Context, input []graph.Write, opts ...graph.Option) iter.Seq2[graph.Event, error] {
	if x.input != nil {
		*x.input, *x.opts = input, len(opts)
	}
	return func(yield func(graph.Event, error) bool) {
		for i, ev := range x.events {
			if !yield(ev, x.errs[i]) {
				return
			}
		}
	}
}

// workerCalls are the events of a run of graph g whose two model calls
// a worker made.
func workerCalls(g string) []graph.Event {
	return []graph.Event{
		{Kind: graph.EventRunStart, Path: g},
		{Kind: graph.EventCustom, Path: g + "/a", Data: llm.ModelCall{Model: "m", PromptTokens: 100, CompletionTokens: 20}},
		{Kind: graph.EventCustom, Path: g + "/b", Data: llm.ModelCall{Model: "m", PromptTokens: 50, CompletionTokens: 5}},
		{Kind: graph.EventRunEnd, Path: g, Data: graph.StatusDone},
	}
}

// TestExecuteCountsARemoteExecutorsModelCalls: the model calls of an
// executor marked Remote count in the run's meter and its parents (the
// turn's, the owner's); an executor in process is left to count its own
// (its calls go through the meter of the context it is given).
func TestExecuteCountsARemoteExecutorsModelCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remote bool
		calls  int
	}{{"remote", true, 2}, {"in process", false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			owner := llm.NewMeter(llm.ScopeOwner, llm.Budget{}, llm.Spend{}, nil)
			_, turn, own := runs.Meter(t.Context(), llm.Budget{Tokens: 1000}, llm.Spend{}, owner)
			var x runs.Executor = scriptedExecutor{events: workerCalls("g")}
			if tc.remote {
				x = runs.Remote(x)
			}
			assert.Equal(t, tc.remote, runs.IsRemote(x))
			out := runs.Execute(t.Context(), &runs.Run{ID: "r", Thread: "t", Graph: "g"}, runs.Execution{Executor: x, Meter: own})
			require.NoError(t, out.Err)
			assert.Equal(t, graph.StatusDone, out.Status)
			for _, m := range []*llm.Meter{own, turn, owner} {
				assert.Equal(t, tc.calls, m.Spent().Calls, m.Scope())
			}
			if tc.remote {
				assert.Equal(t, 175, own.Spent().Tokens())
			}
		})
	}
}

// TestExecuteRecordsTheRunAndMapsItsFailure: Execute gives the executor
// the run's input and options, records the run (its index entry and
// events), gives each event to Observe in order with the executor's own
// error, and the failure as Failure maps it to the recording, the event
// and the outcome.
func TestExecuteRecordsTheRunAndMapsItsFailure(t *testing.T) {
	st := tracemem.New()
	rec := trace.NewRecorder(st, trace.RecorderConfig{})
	defer func() { require.NoError(t, rec.Close(context.WithoutCancel(t.Context()))) }()
	boom := errors.New("disk on fire")
	evs := []graph.Event{{Kind: graph.EventRunStart, Path: "g"}, {Kind: graph.EventError, Path: "g", Err: boom}}
	var input []graph.Write
	var nopts int
	x := scriptedExecutor{events: evs, errs: map[int]error{1: boom}, input: &input, opts: &nopts}
	r := &runs.Run{ID: "r1", Thread: "t", Owner: "ann", Workflow: "wf", Graph: "g", Input: graph.Input(graph.NewKey[string]("k").Set("v"))}
	var seen []string
	var raw error
	out := runs.Execute(t.Context(), r, runs.Execution{
		Executor: x, Options: []graph.Option{graph.DiscardUnfinished()}, Recorder: rec,
		Failure: func(err error) error { return errors.New("internal error (request abc)") },
		Observe: func(ev graph.Event, err error) {
			seen = append(seen, ev.Name())
			if err != nil {
				raw = err
				assert.EqualError(t, ev.Err, "internal error (request abc)", "the event carries the mapped failure")
			}
		},
	})
	assert.Equal(t, r.Input, input)
	assert.Equal(t, len(r.Options())+1, nopts, "the run's options, then the execution's")
	assert.Equal(t, []string{"run_start", "error"}, seen)
	assert.Same(t, boom, raw)
	assert.Same(t, boom, out.Cause)
	assert.EqualError(t, out.Err, "internal error (request abc)")
	assert.Empty(t, out.Status)
	assert.Equal(t, "r1", out.Recording)

	info, err := st.Run(t.Context(), "r1")
	require.NoError(t, err)
	assert.Equal(t, "ann", info.Owner)
	assert.Equal(t, "error", info.Status)
	assert.Equal(t, "internal error (request abc)", info.Error, "the recording keeps the mapped failure, not the detail")
	recorded, err := st.Events(t.Context(), "r1", trace.EventQuery{})
	require.NoError(t, err)
	assert.Len(t, recorded, 2)
}

// TestExecuteReportsAnInterrupt: a run that ends on its root's interrupt
// is interrupted, with its questions.
func TestExecuteReportsAnInterrupt(t *testing.T) {
	ins := []graph.InterruptInfo{{ID: "q1"}}
	x := scriptedExecutor{events: []graph.Event{
		{Kind: graph.EventInterrupt, Path: "g/sub", Data: []graph.InterruptInfo{{ID: "inner"}}},
		{Kind: graph.EventInterrupt, Path: "g", Data: ins},
		{Kind: graph.EventRunEnd, Path: "g", Data: graph.StatusInterrupted},
	}}
	out := runs.Execute(t.Context(), &runs.Run{ID: "r", Graph: "g"}, runs.Execution{Executor: x})
	require.NoError(t, out.Err)
	assert.Equal(t, graph.StatusInterrupted, out.Status)
	assert.Equal(t, ins, out.Interrupts)
	assert.Equal(t, graph.EventRunEnd, out.End.Kind)
	assert.Empty(t, out.Recording, "no recorder, no recording")
}
