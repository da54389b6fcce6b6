package server_test

import (
	"context"
	"iter"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
)

// elsewhere is an executor that runs a workflow step by step with
// graph.Step, as a runner outside the process does (temporalrun's
// workers), streaming each step's events; it says so with a custom event.
type elsewhere struct {
	r     *graph.Runnable
	saver graph.Saver
}

func (x elsewhere) Stream(ctx context.Context, input []graph.Write, opts ...graph.Option) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		if !yield(graph.Event{Kind: graph.EventCustom, Path: x.r.Name(), Data: "elsewhere"}, nil) {
			return
		}
		stopped := false
		sink := graph.StreamTo(func(ev graph.Event) bool {
			stopped = stopped || !yield(ev, nil)
			return !stopped
		})
		res, err := x.r.Step(ctx, input, append(opts, sink)...)
		for err == nil && res.More && !stopped {
			spec, _ := x.r.Spec(opts...)
			res, err = x.r.Step(ctx, nil, graph.WithSaver(x.saver), graph.Thread(spec.Thread), sink)
		}
		if err != nil && !stopped {
			yield(graph.Event{Kind: graph.EventError, Path: x.r.Name(), Err: err}, err)
		}
	}
}

// TestExecutorsRunTheirWorkflowsRuns: a workflow with an executor has its
// runs run by it, whose events the stream shows.
func TestExecutorsRunTheirWorkflowsRuns(t *testing.T) {
	saver := memory.New()
	echo := echoGraph(t)
	e := newEnv(t, server.Config{Saver: saver, Workflows: workflows(echo),
		Executors: map[string]server.Executor{"echo": elsewhere{echo, saver}}})
	e.thread(alice, "echo", "t")
	evs := e.stream("POST", "/v1/threads/t/runs/stream", alice, map[string]any{"input": map[string]any{"text": "hi"}})
	assert.Equal(t, []string{
		"custom", "run_start", "checkpoint",
		"step_start", "node_start", "tool_call", "tool_result", "node_end", "checkpoint", "update", "values", "step_end",
		"run_start", "step_start", "node_start", "model_call", "node_end", "checkpoint", "update", "values", "step_end",
		"run_end", "end",
	}, names(evs))
	assert.Equal(t, "elsewhere", evs[0].event(t).Data)
	final := evs[len(evs)-1].run(t)
	assert.Equal(t, "done", final.Status)
	assert.JSONEq(t, `{"text": "HI", "log": ["upper", "tally"], "count": 1}`, string(final.Values))
}

// TestExecutorsMustNameServedWorkflows: an executor of a workflow the
// server does not serve is refused.
func TestExecutorsMustNameServedWorkflows(t *testing.T) {
	_, err := server.New(server.Config{Saver: memory.New(), Tokens: tokens, Workflows: workflows(echoGraph(t)),
		Executors: map[string]server.Executor{"other": elsewhere{}}})
	require.EqualError(t, err, `server: Config.Executors: "other" must name a workflow of Config.Workflows, mapped to an executor`)
}

// TestRemoteExecutorsCountTheirModelCalls: a run whose model calls an
// executor makes elsewhere (a Temporal worker: runs.Remote) reports them
// in its usage, as the stream's end and the run's view show; the meters
// of this process never saw them.
func TestRemoteExecutorsCountTheirModelCalls(t *testing.T) {
	saver := memory.New()
	echo := echoGraph(t)
	e := newEnv(t, server.Config{Saver: saver, Workflows: workflows(echo),
		Executors: map[string]server.Executor{"echo": runs.Remote(elsewhere{echo, saver})}})
	e.thread(alice, "echo", "t")
	evs := e.stream("POST", "/v1/threads/t/runs/stream", alice, map[string]any{"input": map[string]any{"text": "hi"}})
	require.Contains(t, names(evs), "model_call")
	final := evs[len(evs)-1].run(t)
	assert.Equal(t, "done", final.Status)
	assert.Equal(t, 1, final.Usage.Calls, "the worker's call")
	assert.Equal(t, 5, final.Usage.Tokens())

	var got server.Run
	e.call("GET", "/v1/threads/t/runs/"+final.ID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, final.Usage, got.Usage)
}
