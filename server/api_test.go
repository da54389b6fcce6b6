package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

func TestNewRejectsIncompleteConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  server.Config
		msg  string
	}{
		{"NoSaver", server.Config{Tokens: tokens}, "server: Config.Saver is nil"},
		{"NoTokens", server.Config{Saver: memory.New()}, "server: Config.Tokens is empty"},
		{"EmptyOwner", server.Config{Saver: memory.New(), Tokens: map[string]string{"t": ""}}, "a token and its owner must both be non-empty"},
		{"ServerOwner", server.Config{Saver: memory.New(), Tokens: map[string]string{"t": "#coorflow-server"}},
			`server: Config.Tokens: owner "#coorflow-server": owners starting with '#' are the server's own`},
		{"SlashInWorkflowName", server.Config{Saver: memory.New(), Tokens: tokens, Workflows: map[string]*graph.Runnable{"a/b": echoGraph(t)}},
			`server: Config.Workflows: "a/b" must be a non-empty name without '/'`},
		{"NilWorkflow", server.Config{Saver: memory.New(), Tokens: tokens, Workflows: map[string]*graph.Runnable{"x": nil}},
			`server: Config.Workflows: "x" must be a non-empty name without '/' mapped to a compiled graph`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := server.New(tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestAuthRequiresAKnownBearerToken(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	tests := []struct {
		name      string
		header    string
		message   string
		challenge string
	}{
		{"NoHeader", "", "missing bearer token: send the header Authorization: Bearer <token> (or X-Api-Key: <token>)", `Bearer realm="coorflow"`},
		{"OtherScheme", "Basic YWxpY2U6eA==", "missing bearer token: send the header Authorization: Bearer <token> (or X-Api-Key: <token>)", `Bearer realm="coorflow"`},
		{"EmptyToken", "Bearer ", "missing bearer token: send the header Authorization: Bearer <token> (or X-Api-Key: <token>)", `Bearer realm="coorflow"`},
		{"UnknownToken", "Bearer tok-mallory", "unknown bearer token", `Bearer realm="coorflow", error="invalid_token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.header != "" {
				hdr = []string{"Authorization", tt.header}
			}
			resp := e.request("GET", "/v1/workflows", "", nil, hdr...)
			defer resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			assert.Equal(t, tt.challenge, resp.Header.Get("WWW-Authenticate"))
			var body server.ErrorBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			assert.Equal(t, server.ErrorDetail{Code: "unauthorized", Message: tt.message}, body.Error)
		})
	}
	t.Run("HealthNeedsNoToken", func(t *testing.T) {
		var body map[string]string
		e.call("GET", "/healthz", "", nil, http.StatusOK, &body)
		assert.Equal(t, map[string]string{"status": "ok"}, body)
	})
}

func TestUnknownRoutesAnswerJSON(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.fails("GET", "/v1/nothing", alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "not_found", Message: "no route for GET /v1/nothing"})
	resp := e.request("PUT", "/v1/threads", alice, nil)
	defer resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))
	var body server.ErrorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, server.ErrorDetail{Code: "method_not_allowed", Message: "method PUT is not allowed on /v1/threads (allowed: POST)"}, body.Error)
}

func TestWorkflowsAreListedWithChannelsNodesAndMermaid(t *testing.T) {
	echo, ask := echoGraph(t), askGraph(t, false)
	e := newEnv(t, server.Config{Workflows: workflows(echo, ask)})
	var list server.WorkflowList
	e.call("GET", "/v1/workflows", alice, nil, http.StatusOK, &list)
	require.Len(t, list.Workflows, 2)
	assert.Equal(t, "ask", list.Workflows[0].Name, "sorted by name")
	got := list.Workflows[1]
	assert.Equal(t, server.WorkflowInfo{
		Name: "echo", Graph: "echo",
		Channels: []server.ChannelInfo{
			{Name: "text", Reducer: "last", Type: "string"},
			{Name: "log", Reducer: "append", Type: "[]string"},
			{Name: "count", Reducer: "sum", Type: "int"},
		},
		Nodes:   []string{"upper", "tally"},
		Mermaid: echo.Mermaid(),
	}, got)
	assert.True(t, strings.HasPrefix(got.Mermaid, "flowchart TD"))

	var one server.WorkflowInfo
	e.call("GET", "/v1/workflows/ask", alice, nil, http.StatusOK, &one)
	assert.Equal(t, list.Workflows[0], one)
	e.fails("GET", "/v1/workflows/nope", alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_workflow", Message: `unknown workflow "nope": GET /v1/workflows lists them`})
}

type fakeAgents struct{}

func (fakeAgents) ListAgents(ctx context.Context, owner string) ([]server.AgentInfo, error) {
	return []server.AgentInfo{{Name: "coder-of-" + owner, Tier: "code", Tools: []string{"python"}}}, nil
}

func TestAgentsListing(t *testing.T) {
	t.Run("NoneWithoutAFactory", func(t *testing.T) {
		e := newEnv(t, server.Config{})
		var list server.AgentList
		e.call("GET", "/v1/agents", alice, nil, http.StatusOK, &list)
		assert.Equal(t, server.AgentList{Agents: []server.AgentInfo{}}, list)
	})
	t.Run("TheOwnersAgents", func(t *testing.T) {
		e := newEnv(t, server.Config{Agents: fakeAgents{}})
		var list server.AgentList
		e.call("GET", "/v1/agents", bob, nil, http.StatusOK, &list)
		assert.Equal(t, []server.AgentInfo{{Name: "coder-of-bob", Tier: "code", Tools: []string{"python"}}}, list.Agents)
	})
}

func TestCreateThread(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	t.Run("GeneratedID", func(t *testing.T) {
		var th server.Thread
		resp := e.call("POST", "/v1/threads", alice, map[string]any{"workflow": "echo", "metadata": map[string]any{"topic": "x"}}, http.StatusCreated, &th)
		assert.Len(t, th.ID, 32)
		assert.Equal(t, "echo", th.Workflow)
		assert.Equal(t, map[string]any{"topic": "x"}, th.Metadata)
		assert.Equal(t, "/v1/threads/"+th.ID, resp.Header.Get("Location"))
		var got server.Thread
		e.call("GET", "/v1/threads/"+th.ID, alice, nil, http.StatusOK, &got)
		assert.Equal(t, th, got)
	})
	t.Run("ChosenID", func(t *testing.T) {
		th := e.thread(alice, "echo", "my-thread.1")
		assert.Equal(t, "my-thread.1", th.ID)
		e.fails("POST", "/v1/threads", alice, map[string]any{"workflow": "echo", "thread_id": "my-thread.1"}, http.StatusConflict,
			server.ErrorDetail{Code: "thread_exists", Message: `thread "my-thread.1" already exists`})
	})
	bad := []struct {
		name   string
		body   any
		status int
		want   server.ErrorDetail
	}{
		{"UnknownWorkflow", map[string]any{"workflow": "nope"}, http.StatusNotFound,
			server.ErrorDetail{Code: "unknown_workflow", Message: `unknown workflow "nope": GET /v1/workflows lists them`}},
		{"NoWorkflow", map[string]any{}, http.StatusBadRequest,
			server.ErrorDetail{Code: "invalid_field", Field: "workflow", Message: `field "workflow" is required: name one of GET /v1/workflows`}},
		{"EmptyBody", "", http.StatusBadRequest,
			server.ErrorDetail{Code: "invalid_field", Field: "workflow", Message: `field "workflow" is required: name one of GET /v1/workflows`}},
		{"BadThreadID", map[string]any{"workflow": "echo", "thread_id": "a/b"}, http.StatusBadRequest,
			server.ErrorDetail{Code: "invalid_field", Field: "thread_id", Message: `field "thread_id" must be 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit`}},
		{"UnknownField", map[string]any{"workflow": "echo", "name": "x"}, http.StatusBadRequest,
			server.ErrorDetail{Code: "unknown_field", Field: "name", Message: `unknown field "name" (this endpoint takes metadata, thread_id, workflow)`}},
		{"WrongType", `{"workflow": 3}`, http.StatusBadRequest,
			server.ErrorDetail{Code: "invalid_field", Field: "workflow", Message: `field "workflow" must be a string, not a number`}},
		{"WrongNestedType", `{"workflow": "echo", "metadata": [1]}`, http.StatusBadRequest,
			server.ErrorDetail{Code: "invalid_field", Field: "metadata", Message: `field "metadata" must be a JSON object, not an array`}},
		{"NotAnObject", `["echo"]`, http.StatusBadRequest,
			server.ErrorDetail{Code: "malformed_json", Message: `request body must be a JSON object, not an array`}},
		{"Null", `null`, http.StatusBadRequest,
			server.ErrorDetail{Code: "malformed_json", Message: `request body must be a JSON object, not null`}},
		{"Malformed", `{"workflow": "echo",}`, http.StatusBadRequest,
			server.ErrorDetail{Code: "malformed_json", Message: `request body is not valid JSON: invalid character '}' looking for beginning of object key string (at byte 21)`}},
		{"Truncated", `{"workflow": "ec`, http.StatusBadRequest,
			server.ErrorDetail{Code: "malformed_json", Message: `request body is not valid JSON: it ends too early`}},
		{"TrailingData", `{"workflow": "echo"} {}`, http.StatusBadRequest,
			server.ErrorDetail{Code: "malformed_json", Message: `request body is not valid JSON: unexpected data after the JSON value`}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			e.fails("POST", "/v1/threads", alice, tt.body, tt.status, tt.want)
		})
	}
}

func TestBodiesOverTheLimitAre413(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MaxBodyBytes: 64})
	th := e.thread(alice, "echo", "t")
	big := `{"input": {"text": "` + strings.Repeat("x", 100) + `"}}`
	e.fails("POST", "/v1/threads/"+th.ID+"/runs/wait", alice, big, http.StatusRequestEntityTooLarge,
		server.ErrorDetail{Code: "body_too_large", Message: "request body is larger than 64 bytes"})
	e.fails("POST", "/v1/threads", alice, `{"workflow": "echo", "metadata": {"pad": "`+strings.Repeat("y", 64)+`"}}`,
		http.StatusRequestEntityTooLarge, server.ErrorDetail{Code: "body_too_large", Message: "request body is larger than 64 bytes"})
}

func TestOwnersCannotSeeEachOthersThreadsOrRuns(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e.thread(alice, "echo", "shared-name")
	ru := e.wait(alice, "shared-name", map[string]any{"input": map[string]any{"text": "alice's secret"}})
	require.Equal(t, "done", ru.Status)

	notFound := server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "shared-name"`}
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/threads/shared-name"},
		{"GET", "/v1/threads/shared-name/state"},
		{"GET", "/v1/threads/shared-name/history"},
		{"GET", "/v1/threads/shared-name/runs"},
		{"POST", "/v1/threads/shared-name/runs/wait"},
		{"DELETE", "/v1/threads/shared-name"},
	} {
		e.fails(r.method, r.path, bob, nil, http.StatusNotFound, notFound)
	}
	e.fails("GET", "/v1/threads/shared-name/runs/"+ru.ID, bob, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_run", Message: `unknown run "` + ru.ID + `" on thread "shared-name"`})
	e.fails("POST", "/v1/threads/shared-name/runs/"+ru.ID+"/cancel", bob, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_run", Message: `unknown run "` + ru.ID + `" on thread "shared-name"`})

	// Bob's thread of the same name is his own.
	e.thread(bob, "echo", "shared-name")
	bobs := e.wait(bob, "shared-name", map[string]any{"input": map[string]any{"text": "bob"}})
	assert.JSONEq(t, `{"text": "BOB", "log": ["upper", "tally"], "count": 1}`, string(bobs.Values))
	assert.JSONEq(t, `{"text": "ALICE'S SECRET", "log": ["upper", "tally"], "count": 1}`, string(e.state(alice, "shared-name").Values))
}

func TestDeleteThread(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t), b.r)})
	e.thread(alice, "echo", "gone")
	e.wait(alice, "gone", map[string]any{"input": map[string]any{"text": "x"}})
	e.call("DELETE", "/v1/threads/gone", alice, nil, http.StatusNoContent, nil)
	e.fails("GET", "/v1/threads/gone/state", alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "gone"`})
	e.thread(alice, "echo", "gone") // the id is free again

	e.thread(alice, "block", "busy")
	var ru server.Run
	e.call("POST", "/v1/threads/busy/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &ru)
	b.waitEntered(t)
	e.fails("DELETE", "/v1/threads/busy", alice, nil, http.StatusConflict,
		server.ErrorDetail{Code: "thread_busy", Message: `thread "busy" has a run in progress: cancel it first`})
}
