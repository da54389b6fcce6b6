package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/lgsdktest"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/server"
	wf "github.com/coorflow/coorflow/workflows"
)

// draftGraph: draft emits a plain custom value and a model call, then
// asks for approval; after logs.
func draftGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	g := graph.New("ask", textKey, logKey)
	g.AddNode("draft", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, map[string]string{"progress": "drafting"})
		graph.Emit(ctx, llm.ModelCall{Model: "m", PromptTokens: 3, CompletionTokens: 2})
		a, err := graph.InterruptAs[approval](ctx, map[string]string{"question": "approve draft?"})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, "draft ok="+map[bool]string{true: "true", false: "false"}[a.OK])), nil
	})
	g.AddNode("after", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(logKey, "after")), nil
	})
	g.AddEdge(graph.Start, "draft")
	g.AddEdge("draft", "after")
	g.AddEdge("after", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// TestTheLangGraphSDKsSeeTheProtocolsDetails runs protocol.mjs with each
// pinned SDK: run statuses as LangGraph's server gives them, a past
// checkpoint's tasks with their interrupts, stream_mode on a joined
// stream as each SDK sends it, and the custom mode carrying what the
// graph emitted.
func TestTheLangGraphSDKsSeeTheProtocolsDetails(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		t.Run(sdk.Version, func(t *testing.T) {
			lgsdktest.NodeModulesOf(t, sdk)
			b := newBlocker(t)
			e := newEnv(t, server.Config{Workflows: workflows(draftGraph(t), b.r), Recorder: recorder(t), ConfigSchemas: askConfig(t)})
			checkProtocol(t, sdk, e.hs.URL)
		})
	}
}

// TestTheLangGraphSDKsSeeTheProtocolsDetailsThroughThreeReplicas runs
// protocol.mjs with each pinned SDK against three replicas on one
// PostgreSQL behind a round-robin proxy: each request of the script
// reaches the next replica, so the run is created on one, read, resumed,
// joined and cancelled on others.
func TestTheLangGraphSDKsSeeTheProtocolsDetailsThroughThreeReplicas(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		t.Run(sdk.Version, func(t *testing.T) {
			lgsdktest.NodeModulesOf(t, sdk)
			b := newBlocker(t)
			es := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(draftGraph(t), b.r), ConfigSchemas: askConfig(t)}).envs
			checkProtocol(t, sdk, roundRobin(t, es))
		})
	}
}

// askConfig is the config schema of "ask": that of a workflow file
// declaring config {tone: "friendly", delay: 0.0}.
func askConfig(t *testing.T) map[string]map[string]any {
	t.Helper()
	f, err := wf.Parse("ask.yaml", []byte(`apiVersion: coorflow/v1
name: ask
config: {tone: "friendly", delay: 0.0}
state:
  text: {type: string}
nodes:
  draft: {type: router, routes: [{to: end}], set: {text: "config.tone"}}
edges:
  - {from: start, to: draft}
`))
	require.NoError(t, err)
	return map[string]map[string]any{"ask": f.ConfigSchema()}
}

// checkProtocol runs protocol.mjs with sdk against the server at url,
// serving draftGraph as "ask" and a blocker as "block", and checks its
// report.
func checkProtocol(t *testing.T, sdk lgsdktest.SDK, url string) {
	t.Helper()
	var rep struct {
		Steps             []string
		Custom            []any
		PausedRun         string
		PausedThread      string
		HistoryInterrupts []string
		StateInterrupts   []string
		Joined            []string
		CancelledRun      string
		ConfigSchema      any
		ContextSchema     any
	}
	lgsdktest.RunScript(t, sdk, "protocol.mjs", map[string]string{"LG_URL": url, "LG_KEY": alice, "LG_ASK": "ask", "LG_BLOCK": "block"}, &rep)
	assert.Equal(t, []string{"status", "history", "join", "cancel", "schemas"}, rep.Steps)
	assert.Equal(t, []any{map[string]any{"progress": "drafting"}}, rep.Custom)
	assert.Equal(t, "success", rep.PausedRun)
	assert.Equal(t, "interrupted", rep.PausedThread)
	assert.Len(t, rep.HistoryInterrupts, 1)
	assert.Equal(t, rep.HistoryInterrupts, rep.StateInterrupts)
	assert.Equal(t, []string{"metadata", "updates", "values"}, rep.Joined)
	assert.Equal(t, "interrupted", rep.CancelledRun)
	want := map[string]any{"title": "ask config", "type": "object", "additionalProperties": true, "properties": map[string]any{
		"tone":  map[string]any{"title": "tone", "type": "string", "default": "friendly"},
		"delay": map[string]any{"title": "delay", "type": "number", "default": 0.0},
	}}
	assert.Equal(t, want, rep.ConfigSchema, "each key of the file's config section, with its type and default")
	assert.Equal(t, want, rep.ContextSchema)
}

func TestPlatformRunThatPausedAtAnInterruptSucceededWhileItsThreadIsInterrupted(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(draftGraph(t))})
	id := e.platformThread(alice, nil)
	var out map[string]any
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "ask", "input": map[string]any{"text": "go"}}, http.StatusOK, &out)
	require.Contains(t, out, "__interrupt__")
	var runs []map[string]any
	e.call("GET", "/threads/"+id+"/runs", alice, nil, http.StatusOK, &runs)
	assert.Equal(t, "success", runs[0]["status"], "LangGraph keeps interrupted for cancelled runs")
	var th map[string]any
	e.call("GET", "/threads/"+id, alice, nil, http.StatusOK, &th)
	assert.Equal(t, "interrupted", th["status"])
}

func TestPlatformHistoryListsAPastCheckpointsTasksWithTheirInterrupts(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(draftGraph(t))})
	id := e.platformThread(alice, nil)
	var out map[string]any
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "ask", "input": map[string]any{"text": "go"}}, http.StatusOK, &out)
	asked := out["__interrupt__"].([]any)[0].(map[string]any)

	var before []map[string]any
	e.call("POST", "/threads/"+id+"/history", alice, map[string]any{"limit": 10}, http.StatusOK, &before)
	require.NotEmpty(t, before)
	require.NotEmpty(t, before[0]["tasks"], "the head lists its waiting task")
	draft := before[0]["tasks"].([]any)[0].(map[string]any)
	assert.Equal(t, "draft", draft["name"])
	assert.Equal(t, []any{asked}, draft["interrupts"], "the head lists its waiting task")

	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "ask", "command": map[string]any{"resume": map[string]any{"ok": true}}}, http.StatusOK, &out)
	var history []map[string]any
	e.call("POST", "/threads/"+id+"/history", alice, map[string]any{"limit": 10}, http.StatusOK, &history)
	var names []string
	var past map[string]any
	for _, h := range history {
		for _, task := range h["tasks"].([]any) {
			names = append(names, task.(map[string]any)["name"].(string))
			if task.(map[string]any)["name"] == "draft" {
				past = h
			}
		}
	}
	assert.Contains(t, names, "after", "past entries list the tasks of their next step")
	require.NotNil(t, past)
	assert.Equal(t, []any{asked}, past["tasks"].([]any)[0].(map[string]any)["interrupts"], "the answered interrupt stays on its task")
	assert.Equal(t, []any{asked}, past["interrupts"])

	cp := past["checkpoint"].(map[string]any)["checkpoint_id"].(string)
	var state map[string]any
	e.call("GET", "/threads/"+id+"/state/"+cp, alice, nil, http.StatusOK, &state)
	assert.Equal(t, []any{asked}, state["tasks"].([]any)[0].(map[string]any)["interrupts"])
	assert.Equal(t, []any{asked}, state["interrupts"])
	var now map[string]any
	e.call("GET", "/threads/"+id+"/state", alice, nil, http.StatusOK, &now)
	assert.Empty(t, now["interrupts"], "the newest checkpoint waits on nothing")
}

func TestPlatformJoinTakesStreamModeInEveryFormTheSDKsSend(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Recorder: recorder(t)})
	id := e.platformThread(alice, nil)
	var ru map[string]any
	e.call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"},
		"stream_mode": []string{"values", "updates", "debug"}}, http.StatusOK, &ru)
	join := "/threads/" + id + "/runs/" + ru["run_id"].(string)
	e.call("GET", join+"/join", alice, nil, http.StatusOK, nil)
	for _, query := range []string{
		"stream_mode=values&stream_mode=updates",
		"stream_mode=values,updates",
		"stream_mode=" + url.QueryEscape(`["values","updates"]`),
		"stream_mode=" + url.QueryEscape(`["values"]`) + "&stream_mode=updates",
	} {
		evs := e.stream("GET", join+"/stream?"+query, alice, nil)
		got := map[string]bool{}
		for _, ev := range evs {
			got[ev.Event] = true
		}
		assert.Equal(t, map[string]bool{"metadata": true, "values": true, "updates": true}, got, query)
	}
	e.fails("GET", join+"/stream?stream_mode="+url.QueryEscape(`["values","nope"]`), alice, nil, http.StatusBadRequest, server.ErrorDetail{
		Code: "invalid_field", Field: "stream_mode",
		Message: `unknown stream mode "nope" (served: values, updates, messages, messages-tuple, custom, events, debug, tasks, checkpoints)`,
	})
}

func TestPlatformCustomModeCarriesWhatTheGraphEmits(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(draftGraph(t), shipGraph(t)), EventNames: []string{"deployed"}})
	custom := func(graphID string) []any {
		id := e.platformThread(alice, nil)
		var out []any
		for _, ev := range e.stream("POST", "/threads/"+id+"/runs/stream", alice, map[string]any{"assistant_id": graphID, "input": map[string]any{}, "stream_mode": "custom"}) {
			if ev.Event == "custom" {
				var v any
				require.NoError(t, json.Unmarshal([]byte(ev.Data), &v))
				out = append(out, v)
			}
		}
		return out
	}
	assert.Equal(t, []any{map[string]any{"progress": "drafting"}}, custom("ask"), "the plain value as emitted; the model call is not the graph's")
	assert.Equal(t, []any{
		map[string]any{"name": "deployed", "path": "ship/release", "data": map[string]any{"service": "api"}},
		"a plain value",
	}, custom("ship"), "a named event of the graph's own comes with its name")
}

// A run's recording keeps its final state, not each step's: a joined
// stream of an ended run replayed from it sends no values without a
// state (it sent null before), and the final values at the run's end.
func TestPlatformJoinOfARecordedRunSendsItsFinalValuesNotNull(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Recorder: recorder(t), EventBuffer: 1})
	id := e.platformThread(alice, nil)
	var ru map[string]any
	e.call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}, "stream_mode": []string{"values"}}, http.StatusOK, &ru)
	join := "/threads/" + id + "/runs/" + ru["run_id"].(string)
	e.call("GET", join+"/join", alice, nil, http.StatusOK, nil)
	var values []string
	for _, ev := range e.stream("GET", join+"/stream", alice, nil) {
		if ev.Event == "values" {
			values = append(values, ev.Data)
		}
	}
	require.Len(t, values, 1, "%v", values)
	assert.JSONEq(t, `{"count":1,"log":["upper","tally"],"text":"HI"}`, values[0])
}
