package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
	tracesqlite "github.com/coorflow/coorflow/trace/sqlite"
	"github.com/coorflow/coorflow/window"
)

var (
	questionKey = graph.NewKey[string]("question")
	answerKey   = graph.NewKey[string]("answer")
)

var addSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)

// calcGraph is the workflow "calc": node solve runs the ReAct agent
// "solver" on the question; the agent calls the tool add, then answers.
// Every model call goes through a context window, whose snapshot is
// published. wait, when set, runs inside add before it answers.
func calcGraph(t *testing.T, wait func(context.Context) error) *graph.Runnable {
	t.Helper()
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"solver": {
		{ToolCalls: []scripted.ToolCall{{Name: "add", Arguments: `{"a":2,"b":3}`}}},
		{Text: "2 + 3 = 5", Reasoning: "The tool added them."},
	}}})
	add := tools.Typed("add", "Adds two numbers.", addSchema, func(ctx context.Context, a struct{ A, B float64 }) (string, error) {
		if wait != nil {
			if err := wait(ctx); err != nil {
				return "", err
			}
		}
		return fmt.Sprint(a.A + a.B), nil
	})
	reg, err := tools.NewRegistry(add)
	require.NoError(t, err)
	agent, err := react.New(react.Config{
		Name: "solver", Model: model, Window: window.New(window.Config{}), Budget: window.Budget{MaxInputTokens: 8000},
		Info: llm.ModelInfo{Tier: "basic", Model: "scripted"}, SystemPrompt: "You solve arithmetic with tools.", Tools: reg,
	})
	require.NoError(t, err)
	g := graph.New("calc", questionKey, answerKey)
	g.AddNode("solve", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := agent.Run(ctx, react.Task{Input: "Question: " + questionKey.Get(s), Run: "q1"})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(answerKey.Set(res.Output)), nil
	})
	g.AddEdge(graph.Start, "solve")
	g.AddEdge("solve", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// recorder returns a Recorder over a SQLite store in the test's directory.
func recorder(t *testing.T) *trace.Recorder {
	t.Helper()
	store, err := tracesqlite.Open(t.Context(), filepath.Join(t.TempDir(), "trace.db"))
	require.NoError(t, err)
	rec := trace.NewRecorder(store, trace.RecorderConfig{})
	t.Cleanup(func() {
		require.NoError(t, rec.Close(context.Background()))
		require.NoError(t, store.Close())
	})
	return rec
}

// recordedCalc serves calc with a recorder and runs it once for alice on
// thread "t"; it returns the env and the run.
func recordedCalc(t *testing.T) (*env, server.Run) {
	t.Helper()
	return recordedRun(t, calcGraph(t, nil), "t", map[string]any{"question": "What is 2 + 3?"})
}

// recordedRun serves wf with a recorder and runs it to its end once for
// alice on thread with input; it returns the env and the run.
func recordedRun(t *testing.T, wf *graph.Runnable, thread string, input map[string]any) (*env, server.Run) {
	t.Helper()
	e := newEnv(t, server.Config{Workflows: workflows(wf), Recorder: recorder(t)})
	e.thread(alice, wf.Name(), thread)
	ru := e.wait(alice, thread, map[string]any{"input": input})
	require.Equal(t, "done", ru.Status, "%+v", ru.Error)
	return e, ru
}

func TestServerRecordsEveryRun(t *testing.T) {
	e, ru := recordedCalc(t)
	var run trace.RunInfo
	e.call("GET", "/v1/trace/runs/"+ru.ID, alice, nil, http.StatusOK, &run)
	assert.Equal(t, ru.ID, run.ID)
	assert.Equal(t, "t", run.Thread)
	assert.Equal(t, "alice/t", run.GraphThread)
	assert.Equal(t, "calc", run.Workflow)
	assert.Equal(t, "calc", run.Graph)
	assert.Equal(t, "alice", run.Owner)
	assert.Equal(t, trace.StatusDone, run.Status)
	assert.Equal(t, trace.StartInput, run.Start)
	assert.JSONEq(t, `[{"channel":"question","value":"What is 2 + 3?"}]`, string(run.Input))
	assert.Equal(t, map[string]string{server.RuntimeOwner: "alice", server.RuntimeThread: "t", server.RuntimeRun: ru.ID}, run.Runtime)
	assert.JSONEq(t, string(ru.Values), string(run.FinalState))
	assert.Equal(t, ru.Events, run.Events, "the recorded sequence numbers are the stream's event ids")

	var evs server.TraceEventList
	e.call("GET", "/v1/trace/runs/"+ru.ID+"/events?kinds=model_call&bodies=true", alice, nil, http.StatusOK, &evs)
	require.Len(t, evs.Events, 2)
	assert.Contains(t, string(evs.Events[0].Request), "What is 2 + 3?")
	assert.NotEmpty(t, evs.Events[0].Response)
	var plain server.TraceEventList
	e.call("GET", "/v1/trace/runs/"+ru.ID+"/events?kinds=model_call", alice, nil, http.StatusOK, &plain)
	require.Len(t, plain.Events, 2)
	assert.Nil(t, plain.Events[0].Request, "bodies only when asked for")
	var page server.TraceEventList
	e.call("GET", "/v1/trace/runs/"+ru.ID+"/events?after=2&limit=3", alice, nil, http.StatusOK, &page)
	require.Len(t, page.Events, 3)
	assert.Equal(t, int64(3), page.Events[0].Seq)
	assert.Equal(t, int64(5), page.NextAfter, "more events follow")
}

func TestTheEventsOfARunComeInPagesBoundedInBytes(t *testing.T) {
	e, ru := recordedCalc(t)
	var all server.TraceEventList
	e.call("GET", "/v1/trace/runs/"+ru.ID+"/events?bodies=true", alice, nil, http.StatusOK, &all)
	require.Zero(t, all.NextAfter, "one page holds this run")
	require.Equal(t, ru.Events, all.Events[len(all.Events)-1].Seq)
	var total int64
	for _, ev := range all.Events {
		total += ev.Size()
	}
	require.Greater(t, total, int64(3*1024), "more than three pages of 1 KiB")

	var seen []trace.Event
	pages, after := 0, int64(0)
	for {
		var page server.TraceEventList
		e.call("GET", fmt.Sprintf("/v1/trace/runs/%s/events?bodies=true&max_bytes=1024&after=%d", ru.ID, after), alice, nil, http.StatusOK, &page)
		require.NotEmpty(t, page.Events)
		var bytes int64
		for _, ev := range page.Events {
			bytes += ev.Size()
		}
		if len(page.Events) > 1 {
			assert.LessOrEqual(t, bytes, int64(1024), "page %d", pages)
		}
		seen = append(seen, page.Events...)
		pages++
		if page.NextAfter == 0 {
			break
		}
		after = page.NextAfter
		require.Equal(t, page.Events[len(page.Events)-1].Seq, after)
	}
	assert.Equal(t, all.Events, seen, "the pages hold every event once, in order")
	assert.Greater(t, pages, 2)

	var tail server.TraceEventList
	e.call("GET", fmt.Sprintf("/v1/trace/runs/%s/events?until=%d&limit=2", ru.ID, 2), alice, nil, http.StatusOK, &tail)
	assert.Len(t, tail.Events, 2)
	assert.Zero(t, tail.NextAfter, "nothing more up to until")
}

func TestServerRecordsResumedAndCancelledRuns(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false), b.r), Recorder: recorder(t)})
	e.thread(alice, "ask", "a")
	first := e.wait(alice, "a", map[string]any{"input": map[string]any{"text": "plan"}})
	second := e.wait(alice, "a", map[string]any{"resume": approval{OK: true}})
	e.thread(alice, "block", "b")
	var ru server.Run
	e.call("POST", "/v1/threads/b/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &ru)
	b.waitEntered(t)
	e.call("POST", "/v1/threads/b/runs/"+ru.ID+"/cancel", alice, nil, http.StatusOK, nil)

	tests := []struct {
		id, status, start string
	}{
		{first.ID, trace.StatusInterrupted, trace.StartInput},
		{second.ID, trace.StatusDone, trace.StartResume},
		{ru.ID, trace.StatusCancelled, trace.StartInput},
	}
	for _, tt := range tests {
		var run trace.RunInfo
		e.call("GET", "/v1/trace/runs/"+tt.id, alice, nil, http.StatusOK, &run)
		assert.Equal(t, tt.status, run.Status, tt.id)
		assert.Equal(t, tt.start, run.Start, tt.id)
	}
	var list server.TraceRunList
	e.call("GET", "/v1/trace/runs?thread=a", alice, nil, http.StatusOK, &list)
	require.Len(t, list.Runs, 2)
	assert.Equal(t, second.ID, list.Runs[0].ID, "newest first")
	assert.Nil(t, list.Runs[0].FinalState, "lists leave the final state out")
	e.call("GET", "/v1/trace/runs?status=cancelled", alice, nil, http.StatusOK, &list)
	require.Len(t, list.Runs, 1)
	assert.Equal(t, ru.ID, list.Runs[0].ID)
}

func TestViewerTimelineAndAgentDetail(t *testing.T) {
	e, ru := recordedCalc(t)
	var tl trace.Timeline
	e.call("GET", "/v1/trace/runs/"+ru.ID+"/timeline", alice, nil, http.StatusOK, &tl)
	require.Len(t, tl.Steps, 1)
	require.Len(t, tl.Steps[0].Nodes, 1)
	require.Len(t, tl.Steps[0].Nodes[0].Agents, 1)
	a := tl.Steps[0].Nodes[0].Agents[0]
	assert.Equal(t, "solver", a.Name)
	assert.Equal(t, "calc/solve/agent:solver", a.Path)
	assert.Equal(t, trace.ItemDone, a.Status)

	var d trace.AgentDetail
	e.call("GET", fmt.Sprintf("/v1/trace/runs/%s/agents/%d", ru.ID, a.ID), alice, nil, http.StatusOK, &d)
	assert.Equal(t, "2 + 3 = 5", d.Output)
	assert.Equal(t, "The tool added them.", d.Reasoning)
	require.Len(t, d.Snapshots, 2)
	assert.Contains(t, string(d.Snapshots[0].Snapshot), `"name":"task"`)
	require.Len(t, d.ToolCalls, 1)
	assert.Equal(t, "add", d.ToolCalls[0].Name)
	assert.Equal(t, "5", d.ToolCalls[0].Output)
}

func TestViewerAPIErrorsAndOwners(t *testing.T) {
	e, ru := recordedCalc(t)
	base := "/v1/trace/runs/" + ru.ID
	unknownRun := server.ErrorDetail{Code: "unknown_run", Message: `no recorded run "` + ru.ID + `"`}
	for _, path := range []string{base, base + "/timeline", base + "/agents/1", base + "/events"} {
		e.fails("GET", path, bob, nil, http.StatusNotFound, unknownRun)
	}
	var list server.TraceRunList
	e.call("GET", "/v1/trace/runs", bob, nil, http.StatusOK, &list)
	assert.Empty(t, list.Runs, "another owner's runs are not listed")
	e.call("GET", "/v1/trace/runs", alice, nil, http.StatusOK, &list)
	assert.Len(t, list.Runs, 1)

	resp := e.request("GET", base, "", nil)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	tests := []struct {
		path   string
		status int
		want   server.ErrorDetail
	}{
		{"/v1/trace/runs/nope", http.StatusNotFound, server.ErrorDetail{Code: "unknown_run", Message: `no recorded run "nope"`}},
		{base + "/agents/99999", http.StatusNotFound, server.ErrorDetail{Code: "unknown_agent", Message: `no agent 99999 in run "` + ru.ID + `"`}},
		{base + "/agents/x", http.StatusNotFound, server.ErrorDetail{Code: "unknown_agent",
			Message: `no agent "x" in run "` + ru.ID + `": agent ids are the numbers the timeline gives`}},
		{"/v1/trace/runs?limit=0", http.StatusBadRequest, server.ErrorDetail{Code: "invalid_query", Field: "limit",
			Message: `limit must be an integer from 1 to 500, not "0"`}},
		{"/v1/trace/runs?before=yesterday", http.StatusBadRequest, server.ErrorDetail{Code: "invalid_query", Field: "before",
			Message: `before must be a time in RFC 3339 form (2006-01-02T15:04:05Z), not "yesterday"`}},
		{base + "/events?after=-1", http.StatusBadRequest, server.ErrorDetail{Code: "invalid_query", Field: "after",
			Message: `after must be an event sequence number (an integer >= 0), not "-1"`}},
		{base + "/events?limit=20000", http.StatusBadRequest, server.ErrorDetail{Code: "invalid_query", Field: "limit",
			Message: `limit must be an integer from 1 to 10000, not "20000"`}},
		{base + "/events?max_bytes=10", http.StatusBadRequest, server.ErrorDetail{Code: "invalid_query", Field: "max_bytes",
			Message: `max_bytes must be an integer from 1024 to 4194304, not "10"`}},
		{base + "/events?bodies=maybe", http.StatusBadRequest, server.ErrorDetail{Code: "invalid_query", Field: "bodies",
			Message: `bodies must be true or false, not "maybe"`}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			e.t = t
			e.fails("GET", tt.path, alice, nil, tt.status, tt.want)
		})
	}
	e.t = t
	var got server.ErrorBody
	e.call("GET", base+"/events?kinds=nope", alice, nil, http.StatusBadRequest, &got)
	assert.Equal(t, "kinds", got.Error.Field)
}

func TestViewerPageIsServedFromTheBinary(t *testing.T) {
	e, _ := recordedCalc(t)
	tests := []struct {
		path, contentType, contains string
	}{
		{"/viewer/", "text/html; charset=utf-8", `<script src="app.js" defer></script>`},
		{"/viewer/app.js", "text/javascript; charset=utf-8", "Authorization"},
		{"/viewer/style.css", "text/css; charset=utf-8", "#timeline"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp := e.request("GET", tt.path, "", nil) // the page needs no token; its data does
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, tt.contentType, resp.Header.Get("Content-Type"))
			assert.Contains(t, string(body), tt.contains)
			assert.NotContains(t, string(body), "://", "nothing is loaded from another origin")
			assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
			assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"))
		})
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(e.hs.URL + "/viewer")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)
	assert.Equal(t, "/viewer/", resp.Header.Get("Location"))
	client.CloseIdleConnections()
}

func TestWithoutARecorderThereIsNoViewer(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	for _, path := range []string{"/viewer/", "/v1/trace/runs"} {
		var got server.ErrorBody
		e.call("GET", path, alice, nil, http.StatusNotFound, &got)
		assert.Equal(t, "not_found", got.Error.Code)
		assert.True(t, strings.HasPrefix(got.Error.Message, "no route"))
	}
}

func TestTheAPIRefusesATokenInTheQuery(t *testing.T) {
	e, ru := recordedCalc(t)
	for _, path := range []string{"/v1/trace/runs?token=" + alice, "/v1/trace/runs/" + ru.ID + "?token=" + alice, "/v1/threads/t?token=" + alice} {
		e.fails("GET", path, "", nil, http.StatusUnauthorized, server.ErrorDetail{Code: "unauthorized",
			Message: "missing bearer token: send the header Authorization: Bearer <token> (or X-Api-Key: <token>)"})
	}
}

// pairGraph is the workflow "pair": nodes left and right run in the same
// step, each with a ReAct agent (alpha, beta) that calls the tool meet,
// which returns only once both agents are in it: their runs overlap for
// certain. alpha answers with JSON fields, beta with Markdown.
func pairGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"alpha": {
			{ToolCalls: []scripted.ToolCall{{Name: "meet", Arguments: `{"who":"alpha"}`}}},
			{Text: `{"summary":"met beta","confidence":0.9,"sources":["notes","call"]}`},
		},
		"beta": {
			{ToolCalls: []scripted.ToolCall{{Name: "meet", Arguments: `{"who":"beta"}`}}},
			{Text: "Met **alpha**."},
		},
	}})
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	meet := tools.Typed("meet", "Waits for the other agent.", json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}}}`),
		func(ctx context.Context, a struct{ Who string }) (string, error) {
			mu.Lock()
			if arrived++; arrived == 2 {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
				return a.Who + " met the other", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
	reg, err := tools.NewRegistry(meet)
	require.NoError(t, err)
	g := graph.New("pair", questionKey, answerKey)
	for node, name := range map[string]string{"left": "alpha", "right": "beta"} {
		agent, err := react.New(react.Config{Name: name, Model: model, Info: llm.ModelInfo{Tier: "basic", Model: "scripted"},
			SystemPrompt: "You meet.", Tools: reg})
		require.NoError(t, err)
		g.AddNode(node, func(ctx context.Context, s graph.State) (graph.Command, error) {
			res, err := agent.Run(ctx, react.Task{Input: questionKey.Get(s)})
			if err != nil {
				return graph.Command{}, err
			}
			if name != "beta" {
				return graph.Command{}, nil
			}
			return graph.Update(answerKey.Set(res.Output)), nil
		})
		g.AddEdge(graph.Start, node)
		g.AddEdge(node, graph.End)
	}
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// The run list gives each run's input in one line beside its thread; the
// timeline gives the answer and when each step, node and agent ran.
func TestViewerDataListsInputsAnswersAndTimes(t *testing.T) {
	e, ru := recordedRun(t, pairGraph(t), "p", map[string]any{"question": "Meet,\n  please."})

	var list server.TraceRunList
	e.call("GET", "/v1/trace/runs", alice, nil, http.StatusOK, &list)
	require.Len(t, list.Runs, 1)
	assert.Equal(t, "question: Meet, please.", list.Runs[0].InputText, "one line")
	assert.Equal(t, "p", list.Runs[0].Thread)
	assert.Empty(t, list.Runs[0].FinalState, "lists stay small")

	var tl trace.Timeline
	e.call("GET", "/v1/trace/runs/"+ru.ID+"/timeline", alice, nil, http.StatusOK, &tl)
	assert.Equal(t, "Met **alpha**.", tl.Answer, "the answer channel, as the model wrote it")
	require.Len(t, tl.Steps, 1)
	st := tl.Steps[0]
	require.NotNil(t, st.End)
	require.Len(t, st.Nodes, 2)
	agents := map[string]trace.AgentSummary{}
	for _, n := range st.Nodes {
		require.NotNil(t, n.End, n.Node)
		assert.False(t, n.Start.Before(st.Start), "%s starts in its step", n.Node)
		assert.False(t, n.End.After(*st.End), "%s ends in its step", n.Node)
		require.Len(t, n.Agents, 1)
		a := n.Agents[0]
		require.NotNil(t, a.End)
		assert.False(t, a.Start.Before(n.Start), "%s starts in its node", a.Name)
		assert.False(t, a.End.After(*n.End), "%s ends in its node", a.Name)
		agents[a.Name] = a
	}
	alpha, beta := agents["alpha"], agents["beta"]
	assert.True(t, alpha.Start.Before(*beta.End) && beta.Start.Before(*alpha.End), "the agents ran at the same time")

	// Every agent recorded what each of its calls saw, and the counts of
	// the summary are the calls of the detail.
	for _, a := range agents {
		var d trace.AgentDetail
		e.call("GET", fmt.Sprintf("/v1/trace/runs/%s/agents/%d", ru.ID, a.ID), alice, nil, http.StatusOK, &d)
		assert.Equal(t, 2, a.ModelCalls, a.Name)
		assert.Len(t, d.ModelCalls, a.ModelCalls, a.Name)
		assert.Len(t, d.Snapshots, a.ModelCalls, "%s: a snapshot per model call, without a window", a.Name)
		assert.Len(t, d.ToolCalls, a.ToolCalls, a.Name)
	}
}
