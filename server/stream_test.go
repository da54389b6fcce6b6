package server_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

func TestStreamSendsTypedEventsThenEnd(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "t")
	evs := e.stream("POST", "/v1/threads/t/runs/stream", alice, map[string]any{"input": map[string]any{"text": "hi"}})

	assert.Equal(t, []string{
		"run_start", "checkpoint",
		"step_start", "node_start", "tool_call", "tool_result", "node_end", "checkpoint", "update", "values", "step_end",
		"step_start", "node_start", "model_call", "node_end", "checkpoint", "update", "values", "step_end",
		"run_end", "end",
	}, names(evs))
	for i, ev := range evs {
		assert.Equal(t, strconv.Itoa(i+1), ev.ID, "ids count from 1 without gaps")
	}
	byKind := map[string][]server.Event{}
	var runID string
	for _, s := range evs[:len(evs)-1] {
		ev := s.event(t)
		assert.Equal(t, s.Event, ev.Kind)
		assert.Equal(t, s.ID, strconv.FormatInt(ev.ID, 10))
		assert.False(t, ev.Time.IsZero())
		runID = ev.RunID
		byKind[ev.Kind] = append(byKind[ev.Kind], ev)
	}

	nodeEnd := byKind["node_end"][0]
	assert.Equal(t, "echo/upper", nodeEnd.Path)
	assert.Equal(t, "upper", nodeEnd.Node)
	assert.Equal(t, 0, nodeEnd.Step)
	assert.Equal(t, 1, nodeEnd.Attempt)
	assert.Equal(t, 1, byKind["node_end"][1].Step)
	assert.Equal(t, []any{"upper"}, byKind["step_start"][0].Data)
	assert.Equal(t, map[string]any{"id": "c1", "name": "shout", "args": map[string]any{"loud": true}}, byKind["tool_call"][0].Data)
	assert.Equal(t, "echo/upper", byKind["tool_call"][0].Path)
	assert.Equal(t, map[string]any{"id": "c1", "name": "shout", "status": "ok", "output": "done", "duration": float64(0)}, byKind["tool_result"][0].Data)
	assert.Equal(t, map[string]any{"tier": "basic", "model": "m", "prompt_tokens": float64(3), "completion_tokens": float64(2), "duration": float64(0)},
		byKind["model_call"][0].Data)
	assert.Equal(t, []server.Write{{Channel: "text", Value: "HI"}, {Channel: "log", Value: []any{"upper"}}}, byKind["update"][0].Writes)
	assert.JSONEq(t, `{"text": "HI", "log": ["upper"]}`, string(byKind["values"][0].State))
	runEnd := byKind["run_end"][0]
	assert.Equal(t, "done", runEnd.Data)
	assert.JSONEq(t, `{"text": "HI", "log": ["upper", "tally"], "count": 1}`, string(runEnd.State))

	end := evs[len(evs)-1]
	assert.Equal(t, strconv.Itoa(len(evs)), end.ID)
	final := end.run(t)
	assert.Equal(t, runID, final.ID)
	assert.Equal(t, "done", final.Status)
	assert.Equal(t, int64(len(evs)-1), final.Events)
	assert.JSONEq(t, string(runEnd.State), string(final.Values))
}

func TestStreamKindsFilter(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "t")
	evs := e.stream("POST", "/v1/threads/t/runs/stream?kinds=node_end,run_end", alice, map[string]any{"input": map[string]any{"text": "x"}})
	assert.Equal(t, []string{"node_end", "node_end", "run_end", "end"}, names(evs))
	assert.Equal(t, []string{"7", "15", "20", "21"}, []string{evs[0].ID, evs[1].ID, evs[2].ID, evs[3].ID}, "ids are the run's, not the filtered stream's")
}

func TestStreamOfAFailingRunEndsWithTheError(t *testing.T) {
	g := graph.New("fails", logKey)
	g.AddNode("bad", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, make(chan int))
		return graph.Command{}, errors.New("no luck")
	})
	g.AddEdge(graph.Start, "bad")
	g.AddEdge("bad", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r)})
	e.thread(alice, "fails", "t")

	evs := e.stream("POST", "/v1/threads/t/runs/stream", alice, map[string]any{"input": map[string]any{}})
	assert.Equal(t, []string{"run_start", "checkpoint", "step_start", "node_start", "custom", "node_end", "error", "end"}, names(evs))
	custom := evs[4].event(t)
	assert.Nil(t, custom.Data)
	assert.Equal(t, "the event's payload cannot be encoded as JSON: json: unsupported type: chan int", custom.DataError)
	assert.Equal(t, `graph: node "bad" (step 0, attempt 1): no luck`, evs[5].event(t).Error)
	assert.Equal(t, `graph: node "bad" (step 0, attempt 1): no luck`, evs[6].event(t).Error)
	final := evs[7].run(t)
	assert.Equal(t, "error", final.Status)
	assert.Equal(t, &server.ErrorDetail{Code: "node_failed", Message: `graph: node "bad" (step 0, attempt 1): no luck`}, final.Error)
}

func TestADisconnectedClientDoesNotStopTheRunAndReattaches(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), Recorder: recorder(t)})
	e.thread(alice, "block", "t")
	handlerDone := make(chan struct{})
	e.onServed(func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/runs/stream") {
			close(handlerDone)
		}
	})

	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "POST", e.hs.URL+"/v1/threads/t/runs/stream", strings.NewReader(`{"input": {}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := e.client.Do(req)
	require.NoError(t, err)
	first := readEvents(t, resp.Body, func(s sse) bool { return s.Event == "node_start" && s.event(t).Node == "slow" })
	last := first[len(first)-1]
	runID := last.event(t).RunID
	cancel()
	resp.Body.Close()
	<-handlerDone // the server saw the client go

	var ru server.Run
	e.call("GET", "/v1/threads/t/runs/"+runID, alice, nil, http.StatusOK, &ru)
	assert.Equal(t, "running", ru.Status, "the run goes on without its client")

	// Re-attached while the run goes on, the stream reads the run's buffer.
	resp = e.request("GET", "/v1/threads/t/runs/"+runID+"/stream", alice, nil, "Last-Event-ID", last.ID)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b.open()
	rest := readEvents(t, resp.Body, nil)
	require.NotEmpty(t, rest)
	lastID, _ := strconv.Atoi(last.ID)
	for i, ev := range rest {
		assert.Equal(t, strconv.Itoa(lastID+1+i), ev.ID, "the events after the last one seen, without gaps")
	}
	assert.Equal(t, []string{"node_end", "checkpoint", "update", "values", "step_end",
		"step_start", "node_start", "node_end", "checkpoint", "update", "values", "step_end", "run_end", "end"}, names(rest))
	final := rest[len(rest)-1].run(t)
	assert.Equal(t, "done", final.Status)
	assert.JSONEq(t, `{"log": ["a", "b", "slow", "c"]}`, string(final.Values))
	assert.Equal(t, map[string]int32{"a": 1, "b": 1, "slow": 1, "c": 1}, b.counts(), "nothing ran twice")

	// Once the run has ended the server holds none of its events: a
	// stream re-attached by Last-Event-ID or ?after=N reads them from the
	// recording.
	again := e.stream("GET", "/v1/threads/t/runs/"+runID+"/stream", alice, nil, "Last-Event-ID", last.ID)
	assert.Equal(t, names(rest), names(again))
	again = e.stream("GET", "/v1/threads/t/runs/"+runID+"/stream?after="+last.ID, alice, nil)
	assert.Equal(t, names(rest), names(again))
	all := e.stream("GET", "/v1/threads/t/runs/"+runID+"/stream", alice, nil)
	assert.Equal(t, names(first), names(all[:len(first)]))
	assert.Len(t, all, len(first)+len(rest))
	assert.Equal(t, final, all[len(all)-1].run(t))
}

func TestAFinishedRunReplaysItsRecordedEventsAsStreamed(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Recorder: recorder(t)})
	e.thread(alice, "echo", "t")
	live := e.stream("POST", "/v1/threads/t/runs/stream", alice, map[string]any{"input": map[string]any{"text": "hi"}})
	runID := live[0].event(t).RunID

	replayed := e.stream("GET", "/v1/threads/t/runs/"+runID+"/stream", alice, nil)
	require.Equal(t, names(live), names(replayed))
	for i := range live {
		want, got := live[i], replayed[i]
		assert.Equal(t, want.ID, got.ID)
		if want.Event == "end" {
			assert.Equal(t, want.run(t), got.run(t))
			continue
		}
		wantEv, gotEv := want.event(t), got.event(t)
		if want.Event == "values" {
			// The recording keeps the final state only.
			assert.Empty(t, gotEv.State, "event %s", want.ID)
			wantEv.State = nil
		}
		// The store keeps times to the microsecond.
		wantEv.Time = wantEv.Time.Truncate(time.Microsecond)
		assert.Equal(t, wantEv, gotEv, "event %s (%s)", want.ID, want.Event)
	}

	kinds := e.stream("GET", "/v1/threads/t/runs/"+runID+"/stream?kinds=node_end,run_end&after=7", alice, nil)
	assert.Equal(t, []string{"node_end", "run_end", "end"}, names(kinds))
	assert.Equal(t, []string{"15", "20", "21"}, []string{kinds[0].ID, kinds[1].ID, kinds[2].ID})
}

func TestWithoutARecorderAFinishedRunsEventsAreGone(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "t")
	ru := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "x"}})
	require.Equal(t, int64(20), ru.Events)

	evs := e.stream("GET", "/v1/threads/t/runs/"+ru.ID+"/stream", alice, nil)
	assert.Equal(t, []string{"truncated", "end"}, names(evs))
	assert.JSONEq(t, `{"dropped": 20, "first_id": 21}`, evs[0].Data)
	assert.Equal(t, "21", evs[1].ID)
	end := evs[1].run(t)
	assert.Equal(t, "done", end.Status)
	assert.JSONEq(t, `{"text": "X", "log": ["upper", "tally"], "count": 1}`, string(end.Values), "the values come from the saver")

	evs = e.stream("GET", "/v1/threads/t/runs/"+ru.ID+"/stream", alice, nil, "Last-Event-ID", "18")
	assert.Equal(t, []string{"truncated", "end"}, names(evs))
	assert.JSONEq(t, `{"dropped": 2, "first_id": 21}`, evs[0].Data)
}

func TestReattachingPastTheBufferSaysWhatWasDropped(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), EventBuffer: 4})
	e.thread(alice, "block", "t")
	var ru server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &ru)
	b.waitEntered(t)
	// The run has sent run_start, checkpoint, then for a and b step_start,
	// node_start, node_end, checkpoint, update, values, step_end, then
	// step_start and node_start of slow: 18 events.
	stream := func(header ...string) *http.Response {
		resp := e.request("GET", "/v1/threads/t/runs/"+ru.ID+"/stream", alice, nil, header...)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp
	}
	untilSlow := func(s sse) bool { return s.Event == "node_start" && s.event(t).Node == "slow" }

	resp := stream()
	evs := readEvents(t, resp.Body, untilSlow)
	resp.Body.Close()
	assert.Equal(t, []string{"truncated", "values", "step_end", "step_start", "node_start"}, names(evs))
	assert.Empty(t, evs[0].ID, "a truncated event does not move Last-Event-ID")
	assert.JSONEq(t, `{"dropped": 14, "first_id": 15}`, evs[0].Data)
	assert.Equal(t, "15", evs[1].ID)

	resp = stream("Last-Event-ID", "10")
	evs = readEvents(t, resp.Body, untilSlow)
	resp.Body.Close()
	assert.Equal(t, "truncated", evs[0].Event)
	assert.JSONEq(t, `{"dropped": 4, "first_id": 15}`, evs[0].Data)

	resp = stream("Last-Event-ID", "16")
	evs = readEvents(t, resp.Body, untilSlow)
	resp.Body.Close()
	assert.Equal(t, []string{"step_start", "node_start"}, names(evs), "nothing was dropped after 16")
	b.open()
}

func TestReattachQueryErrors(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "t")
	ru := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "x"}})
	path := "/v1/threads/t/runs/" + ru.ID + "/stream"
	e.fails("GET", path+"?after=x", alice, nil, http.StatusBadRequest,
		server.ErrorDetail{Code: "invalid_query", Field: "after", Message: `after must be an event id (an integer >= 0), not "x"`})
	e.fails("GET", path+"?after=-3", alice, nil, http.StatusBadRequest,
		server.ErrorDetail{Code: "invalid_query", Field: "after", Message: `after must be an event id (an integer >= 0), not "-3"`})
	resp := e.request("GET", path, alice, nil, "Last-Event-ID", "abc")
	defer resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestAnIdleStreamSendsHeartbeats(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), Heartbeat: time.Millisecond})
	e.thread(alice, "block", "t")
	var ru server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &ru)
	b.waitEntered(t)

	resp := e.request("GET", "/v1/threads/t/runs/"+ru.ID+"/stream", alice, nil)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	pings := 0
	for pings < 2 && sc.Scan() {
		if sc.Text() == ": ping" {
			pings++
		}
	}
	assert.Equal(t, 2, pings)
	b.open()
}
