package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/trace"
	tmemory "github.com/coorflow/coorflow/trace/memory"
)

// configGraph: "read" writes the run's config, as JSON, to text; with ask
// set, it first waits for an answer, so that the config it reads is the
// resuming run's.
func configGraph(t *testing.T, name string, ask bool) *graph.Runnable {
	t.Helper()
	g := graph.New(name, textKey, logKey)
	g.AddNode("read", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if ask {
			if _, err := graph.Interrupt(ctx, "go on?"); err != nil {
				return graph.Command{}, err
			}
		}
		user, _ := runs.ConfigValue[string](ctx, "user_id")
		b, _ := json.Marshal(runs.ConfigFrom(ctx))
		return graph.Update(textKey.Set(string(b)), graph.AppendTo(logKey, "user="+user)), nil
	})
	g.AddEdge(graph.Start, "read")
	g.AddEdge("read", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// TestPlatformConfigurableReachesTheNodes: a LangGraph client's
// config.configurable and context reach the nodes as the run's config, the
// reserved keys left out, and the run records it.
func TestPlatformConfigurableReachesTheNodes(t *testing.T) {
	rec := trace.NewRecorder(tmemory.New(), trace.RecorderConfig{})
	e := newEnv(t, server.Config{Workflows: workflows(configGraph(t, "cfg", false)), Recorder: rec})
	id := e.platformThread(alice, nil)
	var out map[string]any
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "cfg", "input": map[string]any{"text": "x"},
		"config":  map[string]any{"configurable": map[string]any{"model": "fast", "user_id": "u1", "thread_id": id, "checkpoint_ns": ""}, "tags": []string{"t"}},
		"context": map[string]any{"delay": 2}}, http.StatusOK, &out)
	assert.JSONEq(t, `{"model":"fast","user_id":"u1","delay":2}`, out["text"].(string))
	assert.Equal(t, []any{"user=u1"}, out["log"])

	var list []map[string]any
	e.call("GET", "/threads/"+id+"/runs", alice, nil, http.StatusOK, &list)
	require.Len(t, list, 1)
	assert.Equal(t, map[string]any{"configurable": map[string]any{"model": "fast", "user_id": "u1", "thread_id": id, "checkpoint_ns": ""}, "tags": []any{"t"}},
		list[0]["kwargs"].(map[string]any)["config"], "the run shows the config it was asked for")

	require.NoError(t, rec.Close(t.Context()))
	recorded, err := rec.Store().Runs(t.Context(), trace.RunQuery{Thread: id})
	require.NoError(t, err)
	require.Len(t, recorded, 1)
	assert.JSONEq(t, `{"model":"fast","user_id":"u1","delay":2}`, recorded[0].Runtime[runs.RuntimeConfig], "the recording keeps the config, for replay")
}

// TestPlatformResumeCarriesItsOwnConfig: a run that answers an interrupt
// has the config of its request, as LangGraph's clients send it again.
func TestPlatformResumeCarriesItsOwnConfig(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(configGraph(t, "cfgask", true))})
	id := e.platformThread(alice, nil)
	var out map[string]any
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "cfgask", "input": map[string]any{"text": "x"},
		"config": map[string]any{"configurable": map[string]any{"user_id": "first"}}}, http.StatusOK, &out)
	require.NotNil(t, out["__interrupt__"])
	out = nil
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "cfgask", "command": map[string]any{"resume": true},
		"config": map[string]any{"configurable": map[string]any{"user_id": "second"}}}, http.StatusOK, &out)
	assert.Equal(t, []any{"user=second"}, out["log"])
}

func TestV1AndMCPRunsCarryConfig(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(configGraph(t, "cfg", false)),
		MCPTools: map[string]server.MCPTool{"cfg": {Description: "Reads config.", Input: "text", Output: "text"}}})
	e.thread(alice, "cfg", "v1")
	ru := e.wait(alice, "v1", map[string]any{"input": map[string]any{"text": "x"}, "config": map[string]any{"user_id": "u2", "n": 1.5}})
	require.Equal(t, server.StatusDone, ru.Status)
	assert.JSONEq(t, `{"user_id":"u2","n":1.5}`, mustMap(t, e.state(alice, "v1").Values)["text"].(string))

	cs := e.mcpClient(alice, "", nil)
	list, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	assert.Contains(t, list.Tools[0].InputSchema.(map[string]any)["properties"], "config")
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "cfg", Arguments: map[string]any{"text": "x", "config": map[string]any{"user_id": "u3"}}})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	assert.JSONEq(t, `{"user_id":"u3"}`, callText(t, res))
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "cfg", Arguments: map[string]any{"text": "x", "config": map[string]any{"coorflow.owner": "bob"}}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, callText(t, res), `config key "coorflow.owner": keys starting with coorflow. are the host's own runtime values`)
}

// TestConfigErrorsNameTheFieldAndStartNothing: oversize, nested too deep,
// host keys, reserved keys that contradict the request: each is refused
// with the field at fault, and no run starts.
func TestConfigErrorsNameTheFieldAndStartNothing(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(configGraph(t, "cfg", false))})
	id := e.platformThread(alice, nil)
	big := map[string]any{"blob": strings.Repeat("a", runs.MaxConfigBytes)}
	deep := any(1)
	for range runs.MaxConfigDepth + 1 {
		deep = []any{deep}
	}
	platform := func(cfg map[string]any, ctxValues map[string]any) map[string]any {
		body := map[string]any{"assistant_id": "cfg", "input": map[string]any{"text": "x"}, "config": map[string]any{"configurable": cfg}}
		if ctxValues != nil {
			body["context"] = ctxValues
		}
		return body
	}
	for _, c := range []struct {
		name  string
		path  string
		body  map[string]any
		field string
		msg   string
	}{
		{"oversize", "/threads/" + id + "/runs/wait", platform(big, nil), "config.configurable", "more than the 65536 a run's config may have"},
		{"too deep", "/threads/" + id + "/runs/wait", platform(map[string]any{"d": deep}, nil), "config.configurable", "values nested 34 deep, more than the 32"},
		{"host key", "/threads/" + id + "/runs/wait", platform(map[string]any{"coorflow.owner": "bob"}, nil), "config.configurable.coorflow.owner", "are the host's own runtime values"},
		{"other thread", "/threads/" + id + "/runs/wait", platform(map[string]any{"thread_id": "elsewhere"}, nil), "config.configurable.thread_id", `is "elsewhere", but the run is on thread "` + id + `"`},
		{"subgraph", "/threads/" + id + "/runs/wait", platform(map[string]any{"checkpoint_ns": "sub"}, nil), "config.configurable.checkpoint_ns", "must be empty"},
		{"context disagrees", "/threads/" + id + "/runs/wait", platform(map[string]any{"a": 1}, map[string]any{"a": 2}), "context.a", "given twice with different values (1 and 2)"},
		{"not an object", "/threads/" + id + "/runs/wait", map[string]any{"assistant_id": "cfg", "config": "fast"}, "config", `must be an object such as {"configurable"`},
		{"v1 reserved", "/v1/threads/" + id + "/runs/wait", map[string]any{"config": map[string]any{"thread_id": id}}, "config.thread_id", "is reserved"},
		{"v1 not an object", "/v1/threads/" + id + "/runs/wait", map[string]any{"config": []int{1}}, "config", "must be a JSON object of values by key"},
	} {
		var got server.ErrorBody
		e.call("POST", c.path, alice, c.body, http.StatusBadRequest, &got)
		assert.Equal(t, "invalid_field", got.Error.Code, c.name)
		assert.Equal(t, c.field, got.Error.Field, c.name)
		assert.Contains(t, got.Error.Message, c.msg, c.name)
	}
	var list []map[string]any
	e.call("GET", "/threads/"+id+"/runs", alice, nil, http.StatusOK, &list)
	assert.Empty(t, list, "no refused run started")
}

// TestConfigOfSharedRunsReachesTheNodes: on replicas, the run is executed
// from its stored request, config included, whichever replica takes it.
func TestConfigOfSharedRunsReachesTheNodes(t *testing.T) {
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(configGraph(t, "cfgask", true))})
	a, b := rs.envs[0], rs.envs[1]
	th := a.platformThread(alice, nil)
	var out map[string]any
	a.call("POST", "/threads/"+th+"/runs/wait", alice, map[string]any{"assistant_id": "cfgask", "input": map[string]any{"text": "x"},
		"config": map[string]any{"configurable": map[string]any{"user_id": "first"}}}, http.StatusOK, &out)
	require.NotNil(t, out["__interrupt__"])
	out = nil
	b.call("POST", "/threads/"+th+"/runs/wait", alice, map[string]any{"assistant_id": "cfgask", "command": map[string]any{"resume": true},
		"context": map[string]any{"user_id": "second"}}, http.StatusOK, &out)
	assert.Equal(t, []any{"user=second"}, out["log"])
	assert.JSONEq(t, `{"user_id":"second"}`, out["text"].(string))
}
