package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

// deployed is the payload of an event that a package above graph defines:
// neither graph nor the server knows it.
type deployed struct {
	Service string `json:"service"`
}

func (deployed) EventName() string { return "deployed" }

// shipGraph: release, which announces a deployment and emits a plain value.
func shipGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	g := graph.New("ship")
	g.AddNode("release", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, deployed{Service: "api"})
		graph.Emit(ctx, "a plain value")
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "release")
	g.AddEdge("release", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func TestANewEventFlowsThroughTheStreamUnderItsName(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(shipGraph(t)), Recorder: recorder(t), EventNames: []string{"deployed"}})
	e.thread(alice, "ship", "t")

	evs := e.stream("POST", "/v1/threads/t/runs/stream", alice, map[string]any{"input": map[string]any{}})
	assert.Equal(t, []string{"run_start", "checkpoint", "step_start", "node_start", "deployed", "custom", "node_end", "checkpoint", "values", "step_end", "run_end", "end"}, names(evs))
	ev := evs[4].event(t)
	assert.Equal(t, "deployed", ev.Kind)
	assert.Equal(t, "ship/release", ev.Path)
	assert.Equal(t, map[string]any{"service": "api"}, ev.Data)
	runID := ev.RunID

	evs = e.stream("POST", "/v1/threads/t/runs/stream?kinds=deployed", alice, map[string]any{"input": map[string]any{}})
	assert.Equal(t, []string{"deployed", "end"}, names(evs), "selected by its name")

	// A finished run's events come back from the recording, named as
	// they were.
	evs = e.stream("GET", "/v1/threads/t/runs/"+runID+"/stream?kinds=deployed", alice, nil)
	assert.Equal(t, []string{"deployed", "end"}, names(evs))
	assert.Equal(t, map[string]any{"service": "api"}, evs[0].event(t).Data)
	var recorded server.TraceEventList
	e.call("GET", "/v1/trace/runs/"+runID+"/events?kinds=deployed", alice, nil, http.StatusOK, &recorded)
	require.Len(t, recorded.Events, 1)
	assert.Equal(t, "ship/release", recorded.Events[0].Path)
	assert.JSONEq(t, `{"service": "api"}`, string(recorded.Events[0].Payload))
}

func TestAStreamSelectsOnlyTheEventNamesItKnows(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(shipGraph(t))})
	e.thread(alice, "ship", "t")
	e.fails("POST", "/v1/threads/t/runs/stream?kinds=deployed", alice, `{"input": {}}`, http.StatusBadRequest, server.ErrorDetail{
		Code: "invalid_query", Field: "kinds",
		Message: `query parameter "kinds": unknown event kind "deployed" (known: agent_created, agent_end, agent_start, checkpoint, custom, error, interrupt, model_call, node_end, node_start, run_end, run_start, snapshot, step_end, step_start, token, tool_call, tool_result, update, values, warning)`,
	})
	evs := e.stream("POST", "/v1/threads/t/runs/stream", alice, map[string]any{"input": map[string]any{}})
	assert.Contains(t, names(evs), "deployed", "unnamed in the config, it is still streamed")
}
