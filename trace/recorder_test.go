package trace_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/trace"
	tracemem "github.com/coorflow/coorflow/trace/memory"
)

func TestRecorderStoresEventsSnapshotsAndModelCalls(t *testing.T) {
	store, err := record(t, calc{}.build(t, script()), "run-1", "What is 2 + 3?", trace.RecorderConfig{})
	require.NoError(t, err)

	run, err := store.Run(t.Context(), "run-1")
	require.NoError(t, err)
	assert.Equal(t, trace.StatusDone, run.Status)
	assert.Equal(t, trace.StartInput, run.Start)
	require.NotNil(t, run.EndedAt)
	assert.JSONEq(t, `{"question":"What is 2 + 3?","answer":"2 + 3 = 5","report":"Answer: 2 + 3 = 5"}`, string(run.FinalState))

	all, err := store.Events(t.Context(), "run-1", trace.EventQuery{})
	require.NoError(t, err)
	require.NotEmpty(t, all)
	for i, e := range all {
		require.Equal(t, int64(i+1), e.Seq, "every event is recorded, numbered from 1")
	}
	assert.Equal(t, run.Events, all[len(all)-1].Seq)
	assert.Equal(t, "run_start", all[0].Kind)
	assert.Equal(t, "run_end", all[len(all)-1].Kind)

	calls := events(t, store, "run-1", "model_call", true)
	require.Len(t, calls, 2)
	for _, c := range calls {
		assert.Equal(t, agentPath, c.Path)
		assert.Equal(t, "solver", c.Agent)
		assert.Len(t, c.Hash, 16)
		assert.Contains(t, string(c.Request), "Question: What is 2 + 3?")
		assert.NotContains(t, string(c.Payload), `"request"`, "the bodies are kept apart from the payload")
	}
	assert.Contains(t, string(calls[0].Response), `"name":"add"`)
	assert.Contains(t, string(calls[1].Response), "2 + 3 = 5")
	assert.Nil(t, events(t, store, "run-1", "model_call", false)[0].Request, "bodies only when asked for")

	snaps := events(t, store, "run-1", "snapshot", false)
	require.Len(t, snaps, 2, "one snapshot per model call")
	assert.Equal(t, agentPath, snaps[0].Path)
	assert.Equal(t, "solver", snaps[0].Agent)
	var snap struct {
		Parts []struct {
			Name   string `json:"name"`
			Tokens int    `json:"tokens"`
		} `json:"parts"`
	}
	require.NoError(t, json.Unmarshal(snaps[0].Payload, &snap))
	require.Len(t, snap.Parts, 2)
	assert.Equal(t, "task", snap.Parts[1].Name)
	assert.Positive(t, snap.Parts[1].Tokens)

	tc := events(t, store, "run-1", "tool_call", false)
	require.Len(t, tc, 1)
	assert.JSONEq(t, `{"agent":"solver","id":"call_solver_1_1","name":"add","args":{"a":2,"b":3}}`, string(tc[0].Payload))
	tr := events(t, store, "run-1", "tool_result", false)
	require.Len(t, tr, 1)
	assert.Contains(t, string(tr[0].Payload), `"output":"5"`)
}

func TestRecorderKindsKeepTheSequence(t *testing.T) {
	wf := calc{}.build(t, script())
	store, err := record(t, wf, "run-1", "What is 2 + 3?",
		trace.RecorderConfig{Skip: []string{llm.EventToken, graph.EventValues.String()}})
	require.NoError(t, err)
	all, err := store.Events(t.Context(), "run-1", trace.EventQuery{})
	require.NoError(t, err)
	run, err := store.Run(t.Context(), "run-1")
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, e := range all {
		kinds[e.Kind] = true
	}
	assert.False(t, kinds["token"])
	assert.False(t, kinds["values"])
	assert.Greater(t, run.Events, int64(len(all)), "skipped events still count in the sequence")
	assert.Equal(t, run.Events, all[len(all)-1].Seq)
}

// statusGraph has one node that does what its mode says.
func statusGraph(t *testing.T, mode string, entered chan<- struct{}) *graph.Runnable {
	t.Helper()
	g := graph.New("st", questionKey)
	g.AddNode("work", func(ctx context.Context, s graph.State) (graph.Command, error) {
		switch mode {
		case "interrupt":
			if _, err := graph.Interrupt(ctx, "approve?"); err != nil {
				return graph.Command{}, err
			}
		case "fail":
			return graph.Command{}, errors.New("the node broke")
		case "block":
			close(entered)
			<-ctx.Done()
			return graph.Command{}, ctx.Err()
		}
		return graph.Update(questionKey.Set("ok")), nil
	})
	g.AddEdge(graph.Start, "work")
	g.AddEdge("work", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	return r
}

func TestRecorderStatuses(t *testing.T) {
	tests := []struct {
		mode, status, error string
	}{
		{"done", trace.StatusDone, ""},
		{"interrupt", trace.StatusInterrupted, ""},
		{"fail", trace.StatusError, "the node broke"},
		{"block", trace.StatusCancelled, "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			entered := make(chan struct{})
			wf := statusGraph(t, tt.mode, entered)
			store := tracemem.New()
			rec := trace.NewRecorder(store, trace.RecorderConfig{})
			defer rec.Close(t.Context())
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.mode == "block" {
				go func() {
					select {
					case <-entered:
						cancel()
					case <-ctx.Done():
					}
				}()
			}
			rr, err := rec.Begin(t.Context(), trace.RunInfo{ID: "r", Graph: "st"})
			require.NoError(t, err)
			var runErr error
			for ev, err := range wf.Stream(ctx, graph.Input(questionKey.Set("q")), graph.Thread("t")) {
				rr.Observe(ev)
				if err != nil {
					runErr = err
				}
			}
			require.NoError(t, rr.Finish(t.Context(), runErr))
			run, err := store.Run(t.Context(), "r")
			require.NoError(t, err)
			assert.Equal(t, tt.status, run.Status)
			assert.Contains(t, run.Error, tt.error)
			assert.Equal(t, trace.StartContinue, run.Start, "no input was given to Begin")
			if tt.status == trace.StatusDone || tt.status == trace.StatusInterrupted {
				assert.NotEmpty(t, run.FinalState)
			}
		})
	}
}

func TestRecordStopsWhenTheConsumerStops(t *testing.T) {
	wf := calc{}.build(t, script())
	store := tracemem.New()
	rec := trace.NewRecorder(store, trace.RecorderConfig{})
	defer rec.Close(t.Context())
	for range rec.Record(t.Context(), trace.RunInfo{ID: "r", Graph: "calc"}, wf.Stream(t.Context(), graph.Input(questionKey.Set("q")))) {
		break
	}
	run, err := store.Run(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, trace.StatusCancelled, run.Status)
	assert.Equal(t, int64(1), run.Events)
}

// failingStore refuses the events of one run.
type failingStore struct {
	trace.Store
	mu   sync.Mutex
	runs map[string]bool
}

func (f *failingStore) AppendEvents(ctx context.Context, events []trace.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range events {
		if f.runs[e.RunID] {
			return errors.New("disk full")
		}
	}
	return f.Store.AppendEvents(ctx, events)
}

func TestRecorderKeepsOtherRunsWhenOneCannotBeWritten(t *testing.T) {
	store := &failingStore{Store: tracemem.New(), runs: map[string]bool{"bad": true}}
	rec := trace.NewRecorder(store, trace.RecorderConfig{Logger: slog.New(slog.DiscardHandler)})
	defer rec.Close(t.Context())
	good, err := rec.Begin(t.Context(), trace.RunInfo{ID: "good"})
	require.NoError(t, err)
	bad, err := rec.Begin(t.Context(), trace.RunInfo{ID: "bad"})
	require.NoError(t, err)
	for _, rr := range []*trace.RunRecorder{good, bad, good, bad} {
		rr.Observe(graph.Event{Kind: graph.EventCustom, Path: "wf", Data: rr.ID()})
	}
	assert.NoError(t, good.Finish(t.Context(), nil))
	assert.ErrorContains(t, bad.Finish(t.Context(), nil), "disk full")
	evs, err := store.Events(t.Context(), "good", trace.EventQuery{})
	require.NoError(t, err)
	assert.Len(t, evs, 2)
	run, err := store.Run(t.Context(), "bad")
	require.NoError(t, err)
	assert.Equal(t, trace.StatusDone, run.Status, "the run's end is recorded even when its events were not")
}

func TestRecorderClose(t *testing.T) {
	store := tracemem.New()
	rec := trace.NewRecorder(store, trace.RecorderConfig{})
	rr, err := rec.Begin(t.Context(), trace.RunInfo{ID: "r"})
	require.NoError(t, err)
	for range 100 {
		rr.Observe(graph.Event{Kind: graph.EventCustom, Path: "wf", Data: "x"})
	}
	require.NoError(t, rec.Close(t.Context()))
	evs, err := store.Events(t.Context(), "r", trace.EventQuery{})
	require.NoError(t, err)
	assert.Len(t, evs, 100, "Close writes what was queued")
	assert.ErrorIs(t, rr.Finish(t.Context(), nil), trace.ErrClosed)
	_, err = rec.Begin(t.Context(), trace.RunInfo{ID: "late"})
	assert.ErrorIs(t, err, trace.ErrClosed)
	var nilRec *trace.RunRecorder
	nilRec.Observe(graph.Event{Kind: graph.EventCustom})
	assert.NoError(t, nilRec.Finish(t.Context(), nil), "a nil RunRecorder records nothing")
}

func TestInputRoundTrip(t *testing.T) {
	logKey := graph.NewKey("log", graph.Append[string]())
	g := graph.New("in", questionKey, logKey)
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Update(), nil })
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	raw, err := trace.EncodeInput(graph.Input(questionKey.Set("why?"), graph.AppendTo(logKey, "a", "b"), graph.AppendTo(logKey, "c")))
	require.NoError(t, err)
	writes, err := trace.DecodeInput(r, raw)
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), writes)
	require.NoError(t, err)
	assert.Equal(t, "why?", questionKey.Get(res.State))
	assert.Equal(t, []string{"a", "b", "c"}, logKey.Get(res.State))

	_, err = trace.DecodeInput(r, json.RawMessage(`[{"channel":"nope","value":1}]`))
	assert.ErrorIs(t, err, graph.ErrUnknownChannel)
	_, err = trace.DecodeInput(r, nil)
	assert.ErrorContains(t, err, "no recorded input")
}

// deployed is the payload of an event that a package above graph defines
// and that neither graph nor trace knows.
type deployed struct {
	Agent   string `json:"agent"`
	Service string `json:"service"`
}

func (deployed) EventName() string { return "deployed" }

func TestRecorderKeepsANewEventUnderItsName(t *testing.T) {
	g := graph.New("ship")
	g.AddNode("release", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, deployed{Agent: "releaser", Service: "api"})
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "release")
	g.AddEdge("release", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	s := tracemem.New()
	rec := trace.NewRecorder(s, trace.RecorderConfig{Skip: []string{"values"}})
	for _, err := range rec.Record(t.Context(), trace.RunInfo{ID: "r1", Graph: "ship"}, r.Stream(t.Context(), graph.Input())) {
		require.NoError(t, err)
	}
	require.NoError(t, rec.Close(context.Background()))

	evs := events(t, s, "r1", "deployed", false)
	require.Len(t, evs, 1)
	assert.Equal(t, "ship/release", evs[0].Path)
	assert.Equal(t, "releaser", evs[0].Agent, "the agent its payload names")
	assert.JSONEq(t, `{"agent":"releaser","service":"api"}`, string(evs[0].Payload))

	rec = trace.NewRecorder(s, trace.RecorderConfig{Skip: []string{"deployed"}})
	for _, err := range rec.Record(t.Context(), trace.RunInfo{ID: "r2", Graph: "ship"}, r.Stream(t.Context(), graph.Input())) {
		require.NoError(t, err)
	}
	require.NoError(t, rec.Close(context.Background()))
	assert.Empty(t, events(t, s, "r2", "deployed", false), "skipped by name")
}
