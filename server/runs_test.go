package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

func TestWaitRunsToTheEndAndTheThreadKeepsTheState(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "t")

	before := e.state(alice, "t")
	assert.JSONEq(t, `{}`, string(before.Values), "a thread that never ran has no values")
	assert.Equal(t, []string{}, before.Next)

	ru := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "hi", "count": 10}})
	assert.Equal(t, "done", ru.Status)
	assert.Equal(t, "t", ru.ThreadID)
	assert.Equal(t, "echo", ru.Workflow)
	assert.JSONEq(t, `{"text": "HI", "log": ["upper", "tally"], "count": 11}`, string(ru.Values))
	assert.Nil(t, ru.Error)
	require.NotNil(t, ru.StartedAt)
	require.NotNil(t, ru.EndedAt)
	assert.NotEmpty(t, ru.Checkpoint)
	assert.Positive(t, ru.Events)

	snap := e.state(alice, "t")
	assert.JSONEq(t, string(ru.Values), string(snap.Values))
	assert.Equal(t, ru.Checkpoint, snap.Checkpoint)
	assert.Equal(t, []string{}, snap.Next)
	assert.Equal(t, []string{"tally"}, snap.Writers)

	var hist server.History
	e.call("GET", "/v1/threads/t/history", alice, nil, http.StatusOK, &hist)
	require.Len(t, hist.Checkpoints, 3, "the input and two steps")
	assert.Equal(t, snap.Checkpoint, hist.Checkpoints[0].Checkpoint, "newest first")
	assert.Equal(t, "input", hist.Checkpoints[2].Source)
	e.call("GET", "/v1/threads/t/history?limit=1", alice, nil, http.StatusOK, &hist)
	assert.Len(t, hist.Checkpoints, 1)

	var old server.Snapshot
	e.call("GET", "/v1/threads/t/state?checkpoint="+hist.Checkpoints[0].Parent, alice, nil, http.StatusOK, &old)
	assert.JSONEq(t, `{"text": "HI", "log": ["upper"], "count": 10}`, string(old.Values))

	// A second run on the finished thread starts from its values.
	ru = e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "again"}})
	assert.JSONEq(t, `{"text": "AGAIN", "log": ["upper", "tally", "upper", "tally"], "count": 12}`, string(ru.Values))

	var runs server.RunList
	e.call("GET", "/v1/threads/t/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs.Runs, 2)
	assert.Equal(t, ru.ID, runs.Runs[0].ID, "newest first")
}

func TestThreadQueryErrors(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "t")
	e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "x"}})
	for _, limit := range []string{"0", "x", "1001"} {
		e.fails("GET", "/v1/threads/t/history?limit="+limit, alice, nil, http.StatusBadRequest, server.ErrorDetail{
			Code: "invalid_query", Field: "limit", Message: `query parameter "limit" must be an integer from 1 to 1000, not "` + limit + `"`})
	}
	e.fails("GET", "/v1/threads/t/state?checkpoint=nope", alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_checkpoint", Message: `thread "t" has no checkpoint "nope"`})
	e.fails("GET", "/v1/threads/nope/runs/x", alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_run", Message: `unknown run "x" on thread "nope"`})
	e.fails("GET", "/v1/threads/t/runs/x/stream?after=-1", alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_run", Message: `unknown run "x" on thread "t"`})
}

func TestRunRequestErrorsNameTheField(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "t")
	tests := []struct {
		name string
		body any
		want server.ErrorDetail
	}{
		{"UnknownChannel", `{"input": {"nope": 1}}`, server.ErrorDetail{Code: "unknown_channel", Field: "input.nope",
			Message: `graph: unknown channel "nope": graph "echo" declares "text", "log", "count"`}},
		{"WrongChannelType", `{"input": {"text": "x", "count": "ten"}}`, server.ErrorDetail{Code: "invalid_field", Field: "input.count",
			Message: `graph: decode channel "count" as int: json: cannot unmarshal string into Go value of type int`}},
		{"InputNotAnObject", `{"input": [1]}`, server.ErrorDetail{Code: "invalid_field", Field: "input",
			Message: `field "input" must be a JSON object keyed by channel name`}},
		{"InputAndResume", `{"input": {}, "resume": true}`, server.ErrorDetail{Code: "invalid_field",
			Message: `send at most one of "input" (a new run), "resume" or "resume_each" (answers to interrupts)`}},
		{"EmptyResumeEach", `{"resume_each": {}}`, server.ErrorDetail{Code: "invalid_field", Field: "resume_each",
			Message: `field "resume_each" must answer at least one interrupt: {"<interrupt id>": <answer>}`}},
		{"ResumeEachNotAnObject", `{"resume_each": 1}`, server.ErrorDetail{Code: "invalid_field", Field: "resume_each",
			Message: `field "resume_each" must be a JSON object, not a number`}},
		{"UnknownField", `{"inputs": {}}`, server.ErrorDetail{Code: "unknown_field", Field: "inputs",
			Message: `unknown field "inputs" (this endpoint takes budget, checkpoint, config, input, resume, resume_each)`}},
		{"Malformed", `{"input": `, server.ErrorDetail{Code: "malformed_json", Message: `request body is not valid JSON: it ends too early`}},
	}
	for _, tt := range tests {
		for _, route := range []string{"/runs", "/runs/wait", "/runs/stream"} {
			t.Run(tt.name+route, func(t *testing.T) {
				e.fails("POST", "/v1/threads/t"+route, alice, tt.body, http.StatusBadRequest, tt.want)
			})
		}
	}
	e.fails("POST", "/v1/threads/t/runs/stream?kinds=node_end,bogus", alice, `{"input": {}}`, http.StatusBadRequest, server.ErrorDetail{
		Code: "invalid_query", Field: "kinds",
		Message: `query parameter "kinds": unknown event kind "bogus" (known: agent_created, agent_end, agent_start, checkpoint, custom, error, interrupt, model_call, node_end, node_start, run_end, run_start, snapshot, step_end, step_start, token, tool_call, tool_result, update, values, warning)`,
	})
	e.fails("POST", "/v1/threads/nope/runs", alice, `{"input": {}}`, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "nope"`})

	var runs server.RunList
	e.call("GET", "/v1/threads/t/runs", alice, nil, http.StatusOK, &runs)
	assert.Empty(t, runs.Runs, "no refused request left a run")
}

func TestInterruptResumeAndItsConflicts(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false))})
	e.thread(alice, "ask", "t")

	e.fails("POST", "/v1/threads/t/runs/wait", alice, `{"resume": true}`, http.StatusConflict,
		server.ErrorDetail{Code: "not_interrupted", Message: `thread "t" is not interrupted: it has not run yet`})
	e.fails("POST", "/v1/threads/t/runs/wait", alice, `{}`, http.StatusConflict,
		server.ErrorDetail{Code: "nothing_to_continue", Message: `thread "t" has not run yet: start it with an input`})

	ru := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "plan"}})
	assert.Equal(t, "interrupted", ru.Status)
	require.Len(t, ru.Interrupts, 1)
	in := ru.Interrupts[0]
	assert.Equal(t, "draft", in.Node)
	assert.Equal(t, "ask/draft", in.Path)
	assert.Equal(t, map[string]any{"question": "approve draft?"}, in.Payload)

	snap := e.state(alice, "t")
	assert.Equal(t, []string{"draft"}, snap.Next)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, in.ID, snap.Interrupts[0].ID)

	e.fails("POST", "/v1/threads/t/runs/wait", alice, map[string]any{"input": map[string]any{"text": "x"}}, http.StatusConflict,
		server.ErrorDetail{Code: "interrupted", Message: `thread "t" is interrupted, waiting on ` + in.ID + `: answer with resume or resume_each instead of an input`})
	e.fails("POST", "/v1/threads/t/runs", alice, `{}`, http.StatusConflict,
		server.ErrorDetail{Code: "interrupted", Message: `thread "t" is interrupted, waiting on ` + in.ID + `: answer with resume or resume_each`})
	e.fails("POST", "/v1/threads/t/runs/wait", alice, `{"resume_each": {"nope": true}}`, http.StatusConflict,
		server.ErrorDetail{Code: "not_interrupted", Message: `graph: thread "t" has no pending interrupt "nope" (pending: ` + in.ID + `): graph: not interrupted`})

	ru = e.wait(alice, "t", map[string]any{"resume": approval{OK: true}})
	assert.Equal(t, "done", ru.Status)
	assert.JSONEq(t, `{"text": "plan", "log": ["draft ok=true", "after"]}`, string(ru.Values))
	assert.Empty(t, ru.Interrupts)

	e.fails("POST", "/v1/threads/t/runs/wait", alice, `{"resume": true}`, http.StatusConflict,
		server.ErrorDetail{Code: "not_interrupted", Message: `graph: thread "t" is not interrupted; nothing to resume: graph: not interrupted`})
	e.fails("POST", "/v1/threads/t/runs", alice, `{"resume": true}`, http.StatusConflict,
		server.ErrorDetail{Code: "not_interrupted", Message: `graph: thread "t" is not interrupted; nothing to resume: graph: not interrupted`})
	e.fails("POST", "/v1/threads/t/runs/wait", alice, `{}`, http.StatusConflict,
		server.ErrorDetail{Code: "nothing_to_continue", Message: `thread "t" has no unfinished run to continue: start a new one with an input`})
}

func TestResumeEachAnswersSeveralInterrupts(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, true))})
	e.thread(alice, "ask", "t")
	ru := e.wait(alice, "t", map[string]any{"input": map[string]any{}})
	require.Equal(t, "interrupted", ru.Status)
	require.Len(t, ru.Interrupts, 2)
	ids := map[string]string{}
	for _, in := range ru.Interrupts {
		ids[in.Node] = in.ID
	}

	snap := e.state(alice, "t")
	pending := snap.Interrupts[0].ID + ", " + snap.Interrupts[1].ID
	e.fails("POST", "/v1/threads/t/runs/wait", alice, `{"resume": true}`, http.StatusConflict, server.ErrorDetail{
		Code: "ambiguous_resume", Message: `thread "t" waits on 2 interrupts (` + pending + `): answer them by id with resume_each`})

	// One answer: the other question stays pending.
	ru = e.wait(alice, "t", map[string]any{"resume_each": map[string]any{ids["draft"]: approval{OK: true}}})
	assert.Equal(t, "interrupted", ru.Status)
	require.Len(t, ru.Interrupts, 1)
	assert.Equal(t, "second", ru.Interrupts[0].Node)

	ru = e.wait(alice, "t", map[string]any{"resume_each": map[string]any{ru.Interrupts[0].ID: approval{OK: false}}})
	assert.Equal(t, "done", ru.Status)
	assert.JSONEq(t, `{"log": ["draft ok=true", "second ok=false", "after"]}`, string(ru.Values))
}

func TestBackgroundRunReturns202WithTheRun(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "t")
	var ru server.Run
	resp := e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{"text": "bg"}}, http.StatusAccepted, &ru)
	assert.Equal(t, "/v1/threads/t/runs/"+ru.ID, resp.Header.Get("Location"))
	assert.Contains(t, []string{"running", "done"}, ru.Status)

	evs := e.stream("GET", "/v1/threads/t/runs/"+ru.ID+"/stream", alice, nil)
	require.NotEmpty(t, evs)
	assert.Equal(t, "end", evs[len(evs)-1].Event)

	var got server.Run
	e.call("GET", "/v1/threads/t/runs/"+ru.ID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "done", got.Status)
	assert.JSONEq(t, `{"text": "BG", "log": ["upper", "tally"], "count": 1}`, string(got.Values))
}

func TestASecondRunOnABusyThreadIs409(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r)})
	e.thread(alice, "block", "t")
	var first server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &first)
	b.waitEntered(t)

	e.fails("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusConflict, server.ErrorDetail{
		Code: "thread_busy", RunID: first.ID,
		Message: `thread "t" already has run "` + first.ID + `" in progress: wait for it, cancel it, or enable queueing`})
	var th server.Thread
	e.call("GET", "/v1/threads/t", alice, nil, http.StatusOK, &th)
	assert.Equal(t, first.ID, th.ActiveRun)

	b.open()
	e.stream("GET", "/v1/threads/t/runs/"+first.ID+"/stream", alice, nil)
	var got server.Run
	e.call("GET", "/v1/threads/t/runs/"+first.ID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "done", got.Status)
}

func TestQueueBusyRunsQueuedRunsInOrder(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r, echoGraph(t)), QueueBusy: true})
	e.thread(alice, "block", "t")
	var first, second, third server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &first)
	b.waitEntered(t)
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{"log": []string{"second"}}}, http.StatusAccepted, &second)
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{"log": []string{"third"}}}, http.StatusAccepted, &third)
	assert.Equal(t, "queued", second.Status)
	assert.Equal(t, "queued", third.Status)
	var th server.Thread
	e.call("GET", "/v1/threads/t", alice, nil, http.StatusOK, &th)
	assert.Equal(t, 2, th.Queued)

	b.open()
	evs := e.stream("GET", "/v1/threads/t/runs/"+third.ID+"/stream", alice, nil)
	end := evs[len(evs)-1].run(t)
	assert.Equal(t, "done", end.Status)
	assert.JSONEq(t, `{"log": ["a", "b", "slow", "c", "second", "a", "b", "slow", "c", "third", "a", "b", "slow", "c"]}`, string(end.Values),
		"each queued run ran after the one before it ended")
	assert.Equal(t, map[string]int32{"a": 3, "b": 3, "slow": 3, "c": 3}, b.counts())
}

func TestCancelStopsTheRunAndContinuingSkipsFinishedSteps(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r)})
	e.thread(alice, "block", "t")
	var ru server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &ru)
	b.waitEntered(t)

	var cancelled server.Run
	e.call("POST", "/v1/threads/t/runs/"+ru.ID+"/cancel", alice, nil, http.StatusOK, &cancelled)
	assert.Equal(t, "cancelled", cancelled.Status)
	assert.Equal(t, &server.ErrorDetail{Code: "cancelled", Message: "run cancelled: cancelled by request"}, cancelled.Error)
	e.fails("POST", "/v1/threads/t/runs/"+ru.ID+"/cancel", alice, nil, http.StatusConflict, server.ErrorDetail{
		Code: "run_finished", RunID: ru.ID, Message: `run "` + ru.ID + `" has already ended (cancelled)`})

	snap := e.state(alice, "t")
	assert.Equal(t, []string{"slow"}, snap.Next, "the last checkpoint is before the cancelled step")
	e.fails("POST", "/v1/threads/t/runs/wait", alice, map[string]any{"input": map[string]any{}}, http.StatusConflict, server.ErrorDetail{
		Code: "unfinished_run", Message: `thread "t" has an unfinished run (next: slow): continue it with a run without input`})

	b.open()
	done := e.wait(alice, "t", map[string]any{})
	assert.Equal(t, "done", done.Status)
	assert.JSONEq(t, `{"log": ["a", "b", "slow", "c"]}`, string(done.Values))
	assert.Equal(t, map[string]int32{"a": 1, "b": 1, "slow": 2, "c": 1}, b.counts())
}

func TestCancelAQueuedRun(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), QueueBusy: true})
	e.thread(alice, "block", "t")
	var first, queued server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &first)
	b.waitEntered(t)
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &queued)

	var got server.Run
	e.call("POST", "/v1/threads/t/runs/"+queued.ID+"/cancel", alice, nil, http.StatusOK, &got)
	assert.Equal(t, "cancelled", got.Status)
	assert.Zero(t, got.Events, "it never ran")

	b.open()
	evs := e.stream("GET", "/v1/threads/t/runs/"+first.ID+"/stream", alice, nil)
	assert.Equal(t, "done", evs[len(evs)-1].run(t).Status)
	assert.Equal(t, int32(1), b.counts()["a"], "the cancelled run never started")
}

func TestRunsCarryTheOwnerAsARuntimeValue(t *testing.T) {
	g := graph.New("who", textKey)
	g.AddNode("me", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(textKey.Set(graph.RuntimeString(ctx, server.RuntimeOwner) + "@" + graph.RuntimeString(ctx, server.RuntimeThread))), nil
	})
	g.AddEdge(graph.Start, "me")
	g.AddEdge("me", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r)})
	e.thread(bob, "who", "t")
	ru := e.wait(bob, "t", map[string]any{"input": map[string]any{}})
	var v map[string]string
	require.NoError(t, json.Unmarshal(ru.Values, &v))
	assert.Equal(t, "bob@t", v["text"])
}

func TestOnlyTheLastFinishedRunsAreRemembered(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), RetainRuns: 2})
	e.thread(alice, "echo", "t")
	var ids []string
	for range 3 {
		ids = append(ids, e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "x"}}).ID)
	}
	e.fails("GET", "/v1/threads/t/runs/"+ids[0], alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_run", Message: `unknown run "` + ids[0] + `" on thread "t"`})
	var runs server.RunList
	e.call("GET", "/v1/threads/t/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs.Runs, 2)
	assert.Equal(t, []string{ids[2], ids[1]}, []string{runs.Runs[0].ID, runs.Runs[1].ID})
	assert.Empty(t, runs.Runs[0].Values, "lists leave the values out")
	assert.Equal(t, 3, countKeyOf(t, e.state(alice, "t").Values), "the thread keeps every run's writes")
}

func TestFinishedRunsAreRememberedWithinRetainBytes(t *testing.T) {
	// A finished run takes a little over 1 KiB: room for two.
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), RetainBytes: 2600})
	e.thread(alice, "echo", "t")
	var ids []string
	for range 3 {
		ids = append(ids, e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "x"}}).ID)
	}
	e.fails("GET", "/v1/threads/t/runs/"+ids[0], alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_run", Message: `unknown run "` + ids[0] + `" on thread "t"`})
	var runs server.RunList
	e.call("GET", "/v1/threads/t/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs.Runs, 2)
	assert.Equal(t, []string{ids[2], ids[1]}, []string{runs.Runs[0].ID, runs.Runs[1].ID})
}

func TestARunsLongErrorIsCut(t *testing.T) {
	g := graph.New("long", logKey)
	g.AddNode("bad", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Command{}, errors.New(strings.Repeat("é", 10000))
	})
	g.AddEdge(graph.Start, "bad")
	g.AddEdge("bad", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r)})
	e.thread(alice, "long", "t")
	var ru server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &ru)
	evs := e.stream("GET", "/v1/threads/t/runs/"+ru.ID+"/stream?kinds=error", alice, nil)
	end := evs[len(evs)-1].run(t)
	require.NotNil(t, end.Error)
	assert.Equal(t, "node_failed", end.Error.Code)
	assert.True(t, strings.HasPrefix(end.Error.Message, `graph: node "bad" (step 0, attempt 1): éé`), end.Error.Message[:40])
	assert.True(t, strings.HasSuffix(end.Error.Message, "é … (cut)"))
	assert.LessOrEqual(t, len(end.Error.Message), 4<<10+len(" … (cut)"))
	assert.True(t, utf8.ValidString(end.Error.Message))
}

func countKeyOf(t *testing.T, values json.RawMessage) int {
	t.Helper()
	var v struct {
		Count int `json:"count"`
	}
	require.NoError(t, json.Unmarshal(values, &v))
	return v.Count
}
