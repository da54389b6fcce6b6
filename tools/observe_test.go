package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/tools"
)

// journalSaver keeps the task records that the engine writes for journaled
// calls made under a "tool:" scope.
type journalSaver struct {
	graph.Saver
	mu   sync.Mutex
	recs []graph.TaskRecord
}

func (s *journalSaver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	s.mu.Lock()
	for _, r := range recs {
		if strings.Contains(r.Key, "tool:") {
			s.recs = append(s.recs, r)
		}
	}
	s.mu.Unlock()
	return s.Saver.PutTaskRecords(ctx, ref, recs)
}

func (s *journalSaver) toolRecords() []graph.TaskRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]graph.TaskRecord(nil), s.recs...)
}

// capitals is a registry with one tool, capital, that counts its calls.
func capitals(t *testing.T, calls *atomic.Int32) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry(tools.Typed("capital", "Returns the capital of a country.", nil,
		func(ctx context.Context, a struct {
			Country string `json:"country" jsonschema:"required"`
		}) (string, error) {
			calls.Add(1)
			if a.Country != "France" {
				return "", fmt.Errorf("no capital known for %s", a.Country)
			}
			return "Paris", nil
		}))
	require.NoError(t, err)
	return reg
}

// toolEvent is a tool event as the tests compare them.
type toolEvent struct {
	Kind, Path, ID, Name, Status, Output string
}

func toolEvents(t *testing.T, r *graph.Runnable, input []graph.Write, opts ...graph.Option) []toolEvent {
	t.Helper()
	var out []toolEvent
	for ev, err := range r.Stream(t.Context(), input, opts...) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case tools.CallEvent:
			out = append(out, toolEvent{Kind: ev.Name(), Path: ev.Path, ID: d.ID, Name: d.Name, Output: string(d.Args)})
		case tools.ResultEvent:
			out = append(out, toolEvent{Kind: ev.Name(), Path: ev.Path, ID: d.ID, Name: d.Name, Status: d.Status, Output: d.Output})
		}
	}
	return out
}

var destination = graph.NewKey[string]("destination")

func TestObserveJournalsAGoNodesToolCallSoAResumeDoesNotRepeatIt(t *testing.T) {
	var calls atomic.Int32
	caller := tools.Observe(capitals(t, &calls))
	g := graph.New("trip", destination)
	g.AddNode("plan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := caller.Run(ctx, tools.Call{Name: "capital", Args: json.RawMessage(`{"country":"France"}`)}, tools.RunOptions{})
		if err != nil {
			return graph.Command{}, err
		}
		// Later in the same node, the run pauses; on resume the node runs
		// again from the top.
		ok, err := graph.InterruptAs[bool](ctx, "travel to "+res.Output+"?")
		if err != nil {
			return graph.Command{}, err
		}
		if !ok {
			return graph.Command{}, nil
		}
		return graph.Update(destination.Set(res.Output)), nil
	})
	g.AddEdge(graph.Start, "plan")
	g.AddEdge("plan", graph.End)
	saver := &journalSaver{Saver: memory.New()}
	r, err := g.Compile(graph.WithSaver(saver))
	require.NoError(t, err)

	first := toolEvents(t, r, graph.Input(destination.Set("")), graph.Thread("t"))
	require.Len(t, first, 2)
	id := first[0].ID
	assert.Regexp(t, `^call_[0-9a-f]{12}$`, id, "a call without an id gets one from its name and arguments")
	assert.Equal(t, []toolEvent{
		{Kind: "tool_call", Path: "trip/plan", ID: id, Name: "capital", Output: `{"country":"France"}`},
		{Kind: "tool_result", Path: "trip/plan", ID: id, Name: "capital", Status: "ok", Output: "Paris"},
	}, first)
	recs := saver.toolRecords()
	require.Len(t, recs, 1, "one journal entry")
	assert.Contains(t, recs[0].Key, "tool:"+id)
	assert.JSONEq(t, `{"status":"ok","text":"Paris","duration":`+durationOf(t, recs[0].Data)+`}`, string(recs[0].Data))

	again := toolEvents(t, r, nil, graph.Thread("t"), graph.Resume(true))
	assert.Equal(t, first, again, "the resumed node reports the same call, from the journal")
	assert.Equal(t, int32(1), calls.Load(), "the tool was not called again")
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Equal(t, "Paris", destination.Get(snap.State))
}

func durationOf(t *testing.T, data json.RawMessage) string {
	t.Helper()
	var rec struct {
		Duration json.Number `json:"duration"`
	}
	require.NoError(t, json.Unmarshal(data, &rec))
	return rec.Duration.String()
}

func TestObserveCallsAFailedToolAgainOnRetryUnlessFailuresAreRecorded(t *testing.T) {
	flaky := func(calls *atomic.Int32) *tools.Registry {
		reg, err := tools.NewRegistry(tools.Func("flaky", "Fails the first time.", nil, func(context.Context, json.RawMessage) (string, error) {
			if calls.Add(1) == 1 {
				return "", errors.New("service unavailable")
			}
			return "fine", nil
		}))
		require.NoError(t, err)
		return reg
	}

	t.Run("a node that fails with its tool is retried, and the tool is called again", func(t *testing.T) {
		var calls atomic.Int32
		caller := tools.Observe(flaky(&calls))
		g := graph.New("retry", destination)
		g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
			res, err := caller.Run(ctx, tools.Call{Name: "flaky"}, tools.RunOptions{})
			if err != nil {
				return graph.Command{}, err
			}
			if res.Status == tools.StatusFailed {
				return graph.Command{}, res.Err
			}
			return graph.Update(destination.Set(res.Output)), nil
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
		g.AddEdge(graph.Start, "call")
		g.AddEdge("call", graph.End)
		r, err := g.Compile(graph.WithSaver(memory.New()))
		require.NoError(t, err)
		res, err := r.Invoke(t.Context(), graph.Input(destination.Set("")), graph.Thread("t"))
		require.NoError(t, err)
		assert.Equal(t, "fine", destination.Get(res.State))
		assert.Equal(t, int32(2), calls.Load())
	})

	t.Run("with RecordFailures a resumed node sees the same failure", func(t *testing.T) {
		var calls atomic.Int32
		caller := tools.Observe(flaky(&calls), tools.RecordFailures())
		var texts []string
		g := graph.New("pass_on", destination)
		g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
			res, err := caller.Run(ctx, tools.Call{ID: "c1", Name: "flaky"}, tools.RunOptions{})
			if err != nil {
				return graph.Command{}, err
			}
			texts = append(texts, res.Status.String()+" "+res.Text())
			if _, err := graph.Interrupt(ctx, "go on?"); err != nil {
				return graph.Command{}, err
			}
			return graph.Update(destination.Set(res.Text())), nil
		})
		g.AddEdge(graph.Start, "call")
		g.AddEdge("call", graph.End)
		r, err := g.Compile(graph.WithSaver(memory.New()))
		require.NoError(t, err)
		_, err = r.Invoke(t.Context(), graph.Input(destination.Set("")), graph.Thread("t"))
		require.NoError(t, err)
		_, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume(true))
		require.NoError(t, err)
		want := `failed Error: tool "flaky" failed: service unavailable`
		assert.Equal(t, []string{want, want}, texts, "the replayed failure reads as the first")
		assert.Equal(t, int32(1), calls.Load())
	})
}

func TestObserveReturnsTheInterruptOfAToolThatAsks(t *testing.T) {
	var calls atomic.Int32
	reg, err := tools.NewRegistry(tools.Func("ask", "Asks a person.", nil, func(ctx context.Context, _ json.RawMessage) (string, error) {
		calls.Add(1)
		return graph.InterruptAs[string](ctx, "which city?")
	}))
	require.NoError(t, err)
	caller := tools.Observe(reg)
	g := graph.New("asking", destination)
	g.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := caller.Run(ctx, tools.Call{ID: "q1", Name: "ask"}, tools.RunOptions{})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(destination.Set(res.Output)), nil
	})
	g.AddEdge(graph.Start, "ask")
	g.AddEdge("ask", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(destination.Set("")), graph.Thread("t"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "asking/ask/tool:q1", res.Interrupts[0].Path, "the tool asks from its own scope")
	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("Lyon"))
	require.NoError(t, err)
	assert.Equal(t, "Lyon", destination.Get(res.State))
	assert.Equal(t, int32(2), calls.Load(), "an interrupted call is not a result: it runs again on resume")
}

func TestObserveOutsideAGraphIsRegistryRun(t *testing.T) {
	var calls atomic.Int32
	res, err := tools.Observe(capitals(t, &calls)).Run(t.Context(), tools.Call{Name: "capital", Args: json.RawMessage(` {"country":"Peru"} `)}, tools.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, tools.StatusFailed, res.Status)
	assert.Equal(t, `Error: tool "capital" failed: no capital known for Peru`, res.Text())
	var te *tools.ToolError
	assert.ErrorAs(t, res.Err, &te, "a live failure keeps its error type")

	res, err = tools.Observe(nil).Run(t.Context(), tools.Call{Name: "capital"}, tools.RunOptions{})
	require.NoError(t, err)
	assert.ErrorIs(t, res.Err, tools.ErrUnknownTool, "a nil registry has no tools")
}
