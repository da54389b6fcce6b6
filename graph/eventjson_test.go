package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// greeting is a named custom payload.
type greeting struct {
	Text string `json:"text"`
}

func (greeting) EventName() string { return "greeting" }

// streamedGraph has a parallel step, custom events and a subgraph.
func streamedGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	out := graph.NewKey("out", graph.Append[string]())
	sub := graph.New("inner", out)
	sub.AddNode("x", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, greeting{Text: "from x"})
		return graph.Update(graph.AppendTo(out, "x")), nil
	})
	sub.AddEdge(graph.Start, "x")
	sub.AddEdge("x", graph.End)
	inner, err := sub.Compile()
	require.NoError(t, err)
	g := graph.New("outer", out)
	for _, n := range []string{"a", "b"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
			graph.Emit(ctx, "plain "+n)
			return graph.Update(graph.AppendTo(out, n)), nil
		})
	}
	g.AddSubgraph("sub", inner)
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge("a", "sub")
	g.AddEdge("sub", graph.End)
	g.AddEdge("b", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// TestStepStreamsToWhatStreamYields drives a thread Step by Step, the
// parallel step's tasks with RunTasks, with StreamTo: the events, once
// the run_start of every Step but the first is left out, are Stream's,
// path by path and in order on each path.
func TestStepStreamsToWhatStreamYields(t *testing.T) {
	r := streamedGraph(t)
	want := collect(t, r, graph.Input(), graph.WithSaver(memory.New()), graph.Thread("t"))

	var got []graph.Event
	sink := graph.StreamTo(func(ev graph.Event) bool {
		if ev.Kind != graph.EventRunStart || ev.Path != r.Name() || len(got) == 0 {
			got = append(got, ev)
		}
		return true
	})
	opts := []graph.Option{graph.WithSaver(memory.New()), graph.Thread("t"), sink}
	res, err := r.Step(t.Context(), graph.Input(), opts...)
	require.NoError(t, err)
	for res.More {
		if len(res.NextTasks) > 1 {
			for _, label := range res.NextTasks {
				_, err := r.RunTasks(t.Context(), res.Checkpoint, []string{label}, opts...)
				require.NoError(t, err)
			}
		}
		res, err = r.Step(t.Context(), nil, opts...)
		require.NoError(t, err)
	}
	assert.Equal(t, byPath(want), byPath(got))
	assert.ElementsMatch(t, describe(want), describe(got))
}

// byPath groups the names of events by path, in order.
func byPath(evs []graph.Event) map[string][]string {
	out := make(map[string][]string)
	for _, ev := range evs {
		if ev.Kind == graph.EventCheckpoint {
			continue // checkpoint ids differ from run to run
		}
		out[ev.Path] = append(out[ev.Path], ev.Name())
	}
	return out
}

// TestStepStreamsOnlyTheSelectedEvents: WithEvents carries a Stream's
// selection (Spec) to Step.
func TestStepStreamsOnlyTheSelectedEvents(t *testing.T) {
	r := streamedGraph(t)
	spec, err := r.Spec(graph.Events(graph.EventNodeEnd), graph.CustomEvents("greeting"))
	require.NoError(t, err)
	var names []string
	opts := []graph.Option{graph.WithSaver(memory.New()), graph.Thread("t"), graph.WithEvents(spec.Events),
		graph.StreamTo(func(ev graph.Event) bool { names = append(names, ev.Name()); return true })}
	res, err := r.Step(t.Context(), graph.Input(), opts...)
	for err == nil && res.More {
		res, err = r.Step(t.Context(), nil, opts...)
	}
	require.NoError(t, err)
	assert.Equal(t, []string{"node_end", "node_end", "greeting", "node_end", "node_end"}, names)
}

// TestEventsRoundTripThroughJSON: every event of a run, subgraph
// included, reads back from its record with the same Go values.
func TestEventsRoundTripThroughJSON(t *testing.T) {
	r := streamedGraph(t)
	payload := func(name string, data json.RawMessage) (any, bool, error) {
		if name != "greeting" {
			return nil, false, nil
		}
		var g greeting
		return g, true, json.Unmarshal(data, &g)
	}
	evs := collect(t, r, graph.Input(), graph.WithSaver(memory.New()), graph.Thread("t"))
	evs = append(evs, graph.Event{Kind: graph.EventNodeEnd, Path: "outer/a", Node: "a", Err: errors.New("boom")})
	for _, ev := range evs {
		rec, err := r.EncodeEvent(ev)
		require.NoError(t, err)
		data, err := json.Marshal(rec)
		require.NoError(t, err)
		var back graph.EventRecord
		require.NoError(t, json.Unmarshal(data, &back))
		got, err := r.DecodeEvent(back, payload)
		require.NoError(t, err, ev.Name()+" "+ev.Path)
		assert.Equal(t, ev.Name(), got.Name())
		assert.Equal(t, ev.Path, got.Path)
		assert.Equal(t, ev.Data, got.Data, ev.Name())
		assert.Equal(t, ev.State.Values(), got.State.Values(), ev.Name())
		assert.True(t, ev.Time.Equal(got.Time))
		require.Len(t, got.Writes, len(ev.Writes))
		for i, w := range ev.Writes {
			assert.Equal(t, w.Channel(), got.Writes[i].Channel())
			assert.Equal(t, w.Value(), got.Writes[i].Value())
		}
		if ev.Err != nil {
			assert.EqualError(t, got.Err, ev.Err.Error())
		}
	}
}

// TestDecodeEventSaysWhatItCannotRead: a record of a path the graph does
// not have, or of a channel it does not declare, is an error that says
// so.
func TestDecodeEventSaysWhatItCannotRead(t *testing.T) {
	r := streamedGraph(t)
	_, err := r.DecodeEvent(graph.EventRecord{Kind: graph.EventValues, Name: "values", Path: "other", State: json.RawMessage(`{}`)}, nil)
	assert.EqualError(t, err, `graph: decode the state of event values at other: no graph runs at "other"`)
	_, err = r.DecodeEvent(graph.EventRecord{Kind: graph.EventValues, Name: "values", Path: "outer", State: json.RawMessage(`{"nope":1}`)}, nil)
	assert.ErrorIs(t, err, graph.ErrUnknownChannel)
	assert.ErrorContains(t, err, `"nope"`)
}

// TestDecodeEventKeepsACustomEventsName: a custom event whose name the
// payload decoder does not know, or whose payload travelled without its
// data, keeps its name (a stream selecting it by name still takes it),
// and its value re-encodes as it was emitted.
func TestDecodeEventKeepsACustomEventsName(t *testing.T) {
	r := streamedGraph(t)
	rec, err := r.EncodeEvent(graph.Event{Kind: graph.EventCustom, Path: "outer/a", Node: "a", Data: greeting{Text: "hi"}})
	require.NoError(t, err)
	got, err := r.DecodeEvent(rec, nil)
	require.NoError(t, err)
	assert.Equal(t, "greeting", got.Name())
	data, err := json.Marshal(got.Data)
	require.NoError(t, err)
	assert.JSONEq(t, string(rec.Data), string(data))
	rec.Data = nil
	got, err = r.DecodeEvent(rec, nil)
	require.NoError(t, err)
	assert.Equal(t, "greeting", got.Name())
}
