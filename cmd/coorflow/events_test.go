package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/trace"
	tmemory "github.com/coorflow/coorflow/trace/memory"
)

// deployed is the payload of an event that a package above graph defines:
// neither graph nor the CLI knows it.
type deployed struct {
	Service string `json:"service"`
}

func (deployed) EventName() string { return "deployed" }

// shipRunner runs a graph whose node announces a deployment, and records
// what it asked of the stream: whether it takes tokens and deployments.
func shipRunner(t *testing.T, stdout io.Writer, stream bool, asked *[]bool) (*runner, trace.Store) {
	t.Helper()
	g := graph.New("ship")
	g.AddNode("release", func(ctx context.Context, s graph.State) (graph.Command, error) {
		*asked = []bool{graph.Wants(ctx, llm.EventToken), graph.Wants(ctx, "deployed")}
		graph.Emit(ctx, deployed{Service: "api"})
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "release")
	g.AddEdge("release", graph.End)
	wf, err := g.Compile()
	require.NoError(t, err)
	store := tmemory.New()
	rec := trace.NewRecorder(store, trace.RecorderConfig{Skip: notRecorded})
	t.Cleanup(func() { require.NoError(t, rec.Close(context.Background())) })
	r := &runner{
		app:   &app{stdout: stdout, stderr: io.Discard},
		flags: &runFlags{dbFlags: &dbFlags{owner: "alice"}, json: true, stream: stream},
		wf:    &workflowRef{ref: "ship"}, r: wf, thread: "t1", rec: rec,
	}
	return r, store
}

func TestANewEventFlowsThroughTheJSONLinesAndTheRecordingUnderItsName(t *testing.T) {
	var out bytes.Buffer
	var asked []bool
	r, store := shipRunner(t, &out, false, &asked)
	res, err := r.stream(t.Context(), newJSONPrinter(r), graph.Input(), nil, trace.StartInput)
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.status)
	assert.Equal(t, []bool{false, true}, asked, "no tokens without --stream; every other custom event")

	var kinds []string
	var line map[string]any
	for l := range strings.Lines(out.String()) {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &ev))
		kinds = append(kinds, ev["kind"].(string))
		if ev["kind"] == "deployed" {
			line = ev
		}
	}
	assert.Equal(t, []string{"run_start", "step_start", "node_start", "deployed", "node_end", "values", "step_end", "run_end"}, kinds)
	require.NotNil(t, line)
	assert.Equal(t, "ship/release", line["path"])
	assert.Equal(t, map[string]any{"service": "api"}, line["data"])

	require.NoError(t, r.rec.Close(t.Context()))
	recorded, err := store.Events(t.Context(), r.runID, trace.EventQuery{Kinds: []string{"deployed"}})
	require.NoError(t, err)
	require.Len(t, recorded, 1)
	assert.JSONEq(t, `{"service":"api"}`, string(recorded[0].Payload))
	values, err := store.Events(t.Context(), r.runID, trace.EventQuery{Kinds: []string{"values"}})
	require.NoError(t, err)
	assert.Empty(t, values, "printed, not recorded")
}

func TestTheRunAsksForTokensOnlyWithStream(t *testing.T) {
	var asked []bool
	r, _ := shipRunner(t, io.Discard, true, &asked)
	_, err := r.stream(t.Context(), newJSONPrinter(r), graph.Input(), nil, trace.StartInput)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true}, asked)

	r, _ = shipRunner(t, io.Discard, false, &asked)
	_, err = r.stream(t.Context(), newTextPrinter(r), graph.Input(), nil, trace.StartInput)
	require.NoError(t, err)
	assert.Equal(t, []bool{false, true}, asked, "the text printer shows no deployment, but the recording keeps it")
}
