package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/server"
)

// rpc sends one JSON-RPC request (a string is sent as is) to path with
// A2A-Version 1.0 and returns the HTTP status and the response.
func (e *env) rpc(path, token string, body any, header ...string) (int, a2a.Response) {
	e.t.Helper()
	if m, ok := body.(map[string]any); ok {
		if _, set := m["jsonrpc"]; !set {
			m["jsonrpc"], m["id"] = "2.0", 1
		}
	}
	resp := e.request("POST", path, token, body, append([]string{a2a.VersionHeader, a2a.ProtocolVersion}, header...)...)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	var out a2a.Response
	require.NoError(e.t, json.Unmarshal(data, &out), "%d %s", resp.StatusCode, data)
	return resp.StatusCode, out
}

// a2aSend sends a text to workflow's agent and returns the task.
func (e *env) a2aSend(token, workflow, text string) a2a.Task {
	e.t.Helper()
	_, res := e.rpc("/a2a/"+workflow, token, map[string]any{"method": "SendMessage",
		"params": a2a.SendMessageRequest{Message: a2a.UserText(text)}})
	require.Nil(e.t, res.Error)
	var out a2a.SendMessageResponse
	require.NoError(e.t, json.Unmarshal(res.Result, &out))
	require.NotNil(e.t, out.Task)
	return *out.Task
}

func rpcCode(res a2a.Response) int {
	if res.Error == nil {
		return 0
	}
	return res.Error.Code
}

// a2aOwnerChecks are the cases of TestEveryRouteKeepsOwnersApart for the
// A2A routes: bob reaches none of alice's tasks, by any method, and
// changes nothing of them.
func a2aOwnerChecks(e *env) map[string]func(t *testing.T) {
	task := e.a2aSend(alice, "echo", "alice's secret")
	unchanged := func(t *testing.T) {
		_, res := e.rpc("/a2a", alice, map[string]any{"method": "GetTask", "params": map[string]any{"id": task.ID}})
		require.Nil(t, res.Error)
		var got a2a.Task
		require.NoError(t, json.Unmarshal(res.Result, &got))
		assert.Equal(t, a2a.StateCompleted, got.Status.State)
		assert.Len(t, got.History, 1, "no message of bob's reached alice's task")
		assert.Empty(t, got.Metadata["push"])
	}
	routes := func(path string) func(t *testing.T) {
		return func(t *testing.T) {
			for _, call := range []map[string]any{
				{"method": "GetTask", "params": map[string]any{"id": task.ID}},
				{"method": "CancelTask", "params": map[string]any{"id": task.ID}},
				{"method": "SubscribeToTask", "params": map[string]any{"id": task.ID}},
				{"method": "SendMessage", "params": map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "taskId": task.ID, "parts": []any{map[string]any{"text": "x"}}}}},
				{"method": "SendStreamingMessage", "params": map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "taskId": task.ID, "parts": []any{map[string]any{"text": "x"}}}}},
				{"method": "GetTaskPushNotificationConfig", "params": map[string]any{"taskId": task.ID, "id": "p"}},
			} {
				status, res := e.rpc(path, bob, call)
				assert.Equal(t, http.StatusOK, status)
				assert.Contains(t, []int{a2a.CodeTaskNotFound, a2a.CodePushNotificationNotSupported}, rpcCode(res), "%s: %+v", call["method"], res.Error)
				if call["method"] != "GetTaskPushNotificationConfig" {
					assert.Equal(t, a2a.CodeTaskNotFound, rpcCode(res), "%s", call["method"])
				}
			}
			_, res := e.rpc(path, bob, map[string]any{"method": "ListTasks", "params": map[string]any{}})
			require.Nil(t, res.Error)
			var list a2a.ListTasksResponse
			require.NoError(t, json.Unmarshal(res.Result, &list))
			assert.Empty(t, list.Tasks, "bob lists none of alice's tasks")
			unchanged(t)
		}
	}
	card := func(path string) func(t *testing.T) {
		return func(t *testing.T) {
			read := func(token string) string {
				resp := e.request("GET", path, token, nil)
				defer resp.Body.Close()
				data, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s", data)
				return string(data)
			}
			assert.Equal(t, read(""), read(bob), "a card is public, the same for everyone")
			assert.NotContains(t, read(alice), task.ID)
		}
	}
	rest := func(method, path string, body any, status int) func(t *testing.T) {
		return func(t *testing.T) {
			resp := e.request(method, "/a2a/echo/rest"+strings.ReplaceAll(path, "TASK", task.ID), bob, body, a2a.VersionHeader, a2a.ProtocolVersion)
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, status, resp.StatusCode, "%s", data)
			if status == http.StatusOK {
				var list a2a.ListTasksResponse
				require.NoError(t, json.Unmarshal(data, &list))
				assert.Empty(t, list.Tasks, "bob lists none of alice's tasks")
			} else {
				assert.Contains(t, string(data), `"status":"NOT_FOUND"`)
			}
			unchanged(t)
		}
	}
	answer := map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "taskId": task.ID, "parts": []any{map[string]any{"text": "x"}}}}
	return map[string]func(t *testing.T){
		"POST /a2a/{workflow}/rest/message:send":   rest("POST", "/message:send", answer, http.StatusNotFound),
		"POST /a2a/{workflow}/rest/message:stream": rest("POST", "/message:stream", answer, http.StatusNotFound),
		"GET /a2a/{workflow}/rest/tasks":           rest("GET", "/tasks", nil, http.StatusOK),
		"GET /a2a/{workflow}/rest/tasks/{task}":    rest("GET", "/tasks/TASK", nil, http.StatusNotFound),
		"POST /a2a/{workflow}/rest/tasks/{task}": func(t *testing.T) {
			rest("POST", "/tasks/TASK:cancel", nil, http.StatusNotFound)(t)
			rest("POST", "/tasks/TASK:subscribe", nil, http.StatusNotFound)(t)
		},
		"POST /a2a/{workflow}/rest/tasks/{task}/pushNotificationConfigs":            rest("POST", "/tasks/TASK/pushNotificationConfigs", map[string]any{"url": "http://127.0.0.1/x"}, http.StatusNotFound),
		"GET /a2a/{workflow}/rest/tasks/{task}/pushNotificationConfigs":             rest("GET", "/tasks/TASK/pushNotificationConfigs", nil, http.StatusNotFound),
		"GET /a2a/{workflow}/rest/tasks/{task}/pushNotificationConfigs/{config}":    rest("GET", "/tasks/TASK/pushNotificationConfigs/p", nil, http.StatusNotFound),
		"DELETE /a2a/{workflow}/rest/tasks/{task}/pushNotificationConfigs/{config}": rest("DELETE", "/tasks/TASK/pushNotificationConfigs/p", nil, http.StatusNotFound),
		"GET /a2a/{workflow}/rest/extendedAgentCard": func(t *testing.T) {
			resp := e.request("GET", "/a2a/echo/rest/extendedAgentCard", bob, nil)
			resp.Body.Close()
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "no extended card, for anyone")
		},
		"GET /.well-known/agent-card.json":                card("/.well-known/agent-card.json"),
		"GET /a2a/{workflow}/.well-known/agent-card.json": card("/a2a/echo/.well-known/agent-card.json"),
		"POST /a2a":            routes("/a2a"),
		"POST /a2a/{workflow}": routes("/a2a/echo"),
	}
}

// TestA2ABadRequestsGetTheSpecsErrorsAndChangeNothing sends what a client
// should not: each gets its JSON-RPC error, and no task or thread is made.
func TestA2ABadRequestsGetTheSpecsErrorsAndChangeNothing(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, MaxBodyBytes: 4 << 10})
	send := func(text string) map[string]any {
		return map[string]any{"method": "SendMessage", "params": map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}}}
	}
	for _, tc := range []struct {
		name   string
		body   any
		header []string
		status int
		code   int
	}{
		{"not JSON", `{"jsonrpc": "2.0", "id": 1, "method":`, nil, http.StatusOK, a2a.CodeParseError},
		{"no jsonrpc", `{"id": 1, "method": "GetTask", "params": {}}`, nil, http.StatusOK, a2a.CodeInvalidRequest},
		{"object id", `{"jsonrpc": "2.0", "id": {}, "method": "GetTask", "params": {}}`, nil, http.StatusOK, a2a.CodeInvalidRequest},
		{"unknown method", map[string]any{"method": "message/send", "params": map[string]any{}}, nil, http.StatusOK, a2a.CodeMethodNotFound},
		{"params not an object", map[string]any{"method": "GetTask", "params": []any{1}}, nil, http.StatusOK, a2a.CodeInvalidParams},
		{"unknown task", map[string]any{"method": "GetTask", "params": map[string]any{"id": "nope"}}, nil, http.StatusOK, a2a.CodeTaskNotFound},
		{"unknown task of a context", map[string]any{"method": "CancelTask", "params": map[string]any{"id": "ctx~nope"}}, nil, http.StatusOK, a2a.CodeTaskNotFound},
		{"answer to an unknown task", map[string]any{"method": "SendMessage", "params": map[string]any{"message": map[string]any{"messageId": "m", "taskId": "x~y", "parts": []any{map[string]any{"text": "a"}}}}}, nil, http.StatusOK, a2a.CodeTaskNotFound},
		{"no message", map[string]any{"method": "SendMessage", "params": map[string]any{}}, nil, http.StatusOK, a2a.CodeInvalidParams},
		{"no parts", map[string]any{"method": "SendMessage", "params": map[string]any{"message": map[string]any{"messageId": "m"}}}, nil, http.StatusOK, a2a.CodeInvalidParams},
		{"an agent's message", map[string]any{"method": "SendMessage", "params": map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_AGENT", "parts": []any{map[string]any{"text": "a"}}}}}, nil, http.StatusOK, a2a.CodeInvalidParams},
		{"bad context id", map[string]any{"method": "SendMessage", "params": map[string]any{"message": map[string]any{"messageId": "m", "contextId": "../x", "parts": []any{map[string]any{"text": "a"}}}}}, nil, http.StatusOK, a2a.CodeInvalidParams},
		{"oversized", send(strings.Repeat("x", 8<<10)), nil, http.StatusRequestEntityTooLarge, a2a.CodeInvalidRequest},
		{"old version", send("a"), []string{a2a.VersionHeader, "0.3"}, http.StatusOK, a2a.CodeVersionNotSupported},
		{"push to a URL not allowed", map[string]any{"method": "SendMessage", "params": map[string]any{"message": map[string]any{"messageId": "m", "parts": []any{map[string]any{"text": "a"}}},
			"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"url": "http://169.254.169.254/latest"}}}}, nil, http.StatusOK, a2a.CodePushNotificationNotSupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, res := e.rpc("/a2a/echo", alice, tc.body, tc.header...)
			assert.Equal(t, tc.status, status)
			require.NotNil(t, res.Error)
			assert.Equal(t, tc.code, res.Error.Code, res.Error.Message)
			assert.NotEmpty(t, res.Error.Message)
		})
	}
	// The REST binding: the same errors, as HTTP statuses and
	// google.rpc statuses.
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		want               string
	}{
		{"not JSON", "POST", "/message:send", `{"message":`, http.StatusBadRequest, `"status":"INVALID_ARGUMENT"`},
		{"no message", "POST", "/message:send", map[string]any{}, http.StatusBadRequest, `"reason":"INVALID_PARAMS"`},
		{"unknown task", "GET", "/tasks/nope~1", nil, http.StatusNotFound, `"reason":"TASK_NOT_FOUND"`},
		{"unknown verb", "POST", "/tasks/nope~1:archive", nil, http.StatusNotFound, `"status":"NOT_FOUND"`},
		{"bad page size", "GET", "/tasks?pageSize=x", nil, http.StatusBadRequest, `"status":"INVALID_ARGUMENT"`},
		{"oversized", "POST", "/message:send", send(strings.Repeat("x", 8<<10))["params"], http.StatusRequestEntityTooLarge, `"status":"INVALID_ARGUMENT"`},
	} {
		t.Run("rest "+tc.name, func(t *testing.T) {
			resp := e.request(tc.method, "/a2a/echo/rest"+tc.path, alice, tc.body, a2a.VersionHeader, a2a.ProtocolVersion)
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.status, resp.StatusCode, "%s", data)
			assert.Contains(t, string(data), tc.want)
		})
	}
	resp := e.request("POST", "/a2a/echo", "", send("a"), a2a.VersionHeader, a2a.ProtocolVersion)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token, no agent")

	_, res := e.rpc("/a2a", alice, map[string]any{"method": "ListTasks", "params": map[string]any{}})
	var list a2a.ListTasksResponse
	require.NoError(t, json.Unmarshal(res.Result, &list))
	assert.Empty(t, list.Tasks, "no request made a task")
	var threads []map[string]any
	e.call("POST", "/threads/search", alice, map[string]any{}, http.StatusOK, &threads)
	assert.Empty(t, threads, "nor a thread")
}

// TestA2APushNotificationsOnlyToAllowedURLs: a push config's URL must be
// under Config.WebhookAllow, as a webhook's; an allowed one gets the task
// when its run ends.
func TestA2APushNotificationsOnlyToAllowedURLs(t *testing.T) {
	got := make(chan a2a.StreamResponse, 1)
	hook := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		var ev a2a.StreamResponse
		_ = json.NewDecoder(r.Body).Decode(&ev)
		assert.Equal(t, "tok", r.Header.Get("X-A2A-Notification-Token"))
		got <- ev
	})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, WebhookAllow: []string{hook + "/hooks"}})
	push := func(url string) map[string]any {
		return map[string]any{"method": "SendMessage", "params": map[string]any{
			"message":       map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}},
			"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"url": url, "token": "tok"}}}}
	}
	for _, bad := range []string{hook + "/other", hook + "/hooks/../other", "http://169.254.169.254/hooks", "file:///etc/passwd"} {
		_, res := e.rpc("/a2a/echo", alice, push(bad))
		assert.Equal(t, a2a.CodeInvalidParams, rpcCode(res), bad)
	}
	_, res := e.rpc("/a2a/echo", alice, push(hook+"/hooks/a2a"))
	require.Nil(t, res.Error)
	ev := <-got
	require.NotNil(t, ev.Task)
	assert.Equal(t, a2a.StateCompleted, ev.Task.Status.State)
	require.Len(t, ev.Task.Artifacts, 1)
	assert.Equal(t, "HI", *ev.Task.Artifacts[0].Parts[0].Text)
}

// TestA2AOwnersTasksLimitHolds: 100 parallel tasks of one owner beyond
// its quota of active runs are refused, none of them half made.
func TestA2ATasksCountInTheOwnersQuota(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), MCPTools: a2aTools, MaxActiveRuns: 3, QueueBusy: true})
	var wg sync.WaitGroup
	codes := make(chan int, 100)
	for i := range 100 {
		wg.Go(func() {
			_, res := e.rpc("/a2a/block", alice, map[string]any{"method": "SendMessage", "params": map[string]any{
				"message":       map[string]any{"messageId": fmt.Sprint(i), "role": "ROLE_USER", "parts": []any{map[string]any{"text": `["go"]`}}},
				"configuration": map[string]any{"returnImmediately": true}}})
			codes <- rpcCode(res)
		})
	}
	wg.Wait()
	close(codes)
	ok, refused := 0, 0
	for c := range codes {
		switch c {
		case 0:
			ok++
		case a2a.CodeUnsupportedOperation:
			refused++
		default:
			t.Errorf("unexpected code %d", c)
		}
	}
	assert.Equal(t, 3, ok, "the quota's runs")
	assert.Equal(t, 97, refused)
	_, res := e.rpc("/a2a", alice, map[string]any{"method": "ListTasks", "params": map[string]any{}})
	var list a2a.ListTasksResponse
	require.NoError(t, json.Unmarshal(res.Result, &list))
	assert.Len(t, list.Tasks, 3, "a refused task leaves no record")
	var threads []map[string]any
	e.call("POST", "/threads/search", alice, map[string]any{"limit": 1000}, http.StatusOK, &threads)
	assert.Len(t, threads, 3, "nor a context")
	b.open()
}

// httptestServer serves h on loopback until t ends and returns its URL.
func httptestServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// FuzzA2ARequests sends arbitrary JSON-RPC bodies to an agent: the answer
// is never a 5xx, and it is a JSON-RPC response with a result or an
// error with a code and a message.
//
//	go test -run '^$' -fuzz=FuzzA2ARequests -fuzztime=5s ./server
func FuzzA2ARequests(f *testing.F) {
	srv, err := server.New(server.Config{Workflows: workflows(echoGraph(f)), MCPTools: mcpTools, Saver: memory.New(), Tokens: tokens,
		Logger: slog.New(slog.DiscardHandler), MaxBodyBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			f.Error(err)
		}
	})
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"GetTask","params":{"id":"a~b"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"pageSize":0}}`,
		`{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"taskId":"~","parts":[{"data":{}}]}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"CancelTask","params":{"id":""}}`,
		`[]`, `{}`, `null`, `{"jsonrpc":"2.0","method":"GetTask","params":"x"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/a2a/echo", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+alice)
		req.Header.Set(a2a.VersionHeader, a2a.ProtocolVersion)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%d for %q: %s", w.Code, body, w.Body)
		}
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			return
		}
		var res a2a.Response
		if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || res.JSONRPC != "2.0" {
			t.Fatalf("not a JSON-RPC response for %q: %s", body, w.Body)
		}
		if res.Error != nil && (res.Error.Code == 0 || res.Error.Message == "" || res.Error.Code == a2a.CodeInternalError) {
			t.Fatalf("error without code or message, or internal, for %q: %s", body, w.Body)
		}
		if res.Error == nil && len(res.Result) == 0 {
			t.Fatalf("neither result nor error for %q: %s", body, w.Body)
		}
	})
}

// TestA2AARunThatFailsBeforeItStartsIsTheSendsError: a new task on a
// context whose run waits for an answer fails before it starts; that
// failure is the answer to the send, as on every transport, and leaves no
// task.
func TestA2AARunThatFailsBeforeItStartsIsTheSendsError(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false)), MCPTools: a2aTools})
	asked := e.a2aSend(alice, "ask", "draft")
	require.Equal(t, a2a.StateInputRequired, asked.Status.State)
	m := a2a.UserText("another")
	m.ContextID = asked.ContextID
	err := e.a2aCall("/a2a/ask", "SendMessage", a2a.SendMessageRequest{Message: m}, nil)
	require.NotNil(t, err)
	assert.Equal(t, a2a.CodeUnsupportedOperation, err.Code)
	assert.Contains(t, err.Message, fmt.Sprintf("thread %q is interrupted, waiting on", asked.ContextID))
	var list a2a.ListTasksResponse
	require.Nil(t, e.a2aCall("/a2a", "ListTasks", a2a.ListTasksRequest{ContextID: asked.ContextID}, &list))
	require.Len(t, list.Tasks, 1, "no task of the refused message")
	assert.Equal(t, a2a.StateInputRequired, list.Tasks[0].Status.State, "the waiting task is unchanged")
}
