package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/tools"
)

func TestPlatformRoutesCoorflowDoesNotServeAnswer501NamingThem(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	for _, route := range []string{
		"PATCH /threads/t/state", "POST /threads/t/commands", "POST /threads/t/stream/events",
	} {
		method, path, _ := strings.Cut(route, " ")
		var got server.ErrorBody
		e.call(method, path, alice, nil, http.StatusNotImplemented, &got)
		assert.Equal(t, "not_served", got.Error.Code, route)
		assert.Contains(t, got.Error.Message, "coorflow does not serve "+method+" /", route)
	}
	// Without a token, the answer is 401 as for every route.
	e.fails("POST", "/runs/crons", "", nil, http.StatusUnauthorized, server.ErrorDetail{Code: "unauthorized",
		Message: "missing bearer token: send the header Authorization: Bearer <token> (or X-Api-Key: <token>)"})
}

func TestPlatformTakesTheSDKsAPIKeyHeaderAsTheBearerToken(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	resp := e.request("POST", "/assistants/search", "", map[string]any{}, "X-Api-Key", alice)
	defer resp.Body.Close()
	var list []map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "echo", list[0]["assistant_id"])
	bad := e.request("POST", "/assistants/search", "", map[string]any{}, "X-Api-Key", "nope")
	defer bad.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, bad.StatusCode)
}

// platformThread creates a Platform thread and returns its id.
func (e *env) platformThread(token string, body map[string]any) string {
	e.t.Helper()
	var th map[string]any
	if body == nil {
		body = map[string]any{}
	}
	e.call("POST", "/threads", token, body, http.StatusOK, &th)
	return th["thread_id"].(string)
}

func TestPlatformWaitAnswersValuesAndInterruptsAndACommandResumes(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false))})
	id := e.platformThread(alice, map[string]any{"metadata": map[string]any{"team": "a"}})

	var out map[string]any
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "ask", "input": map[string]any{"text": "hi"}}, http.StatusOK, &out)
	ins := out["__interrupt__"].([]any)
	require.Len(t, ins, 1)
	q := ins[0].(map[string]any)
	assert.Equal(t, map[string]any{"question": "approve draft?"}, q["value"])

	var th map[string]any
	e.call("GET", "/threads/"+id, alice, nil, http.StatusOK, &th)
	assert.Equal(t, "interrupted", th["status"])
	assert.Equal(t, map[string]any{"ask/draft": []any{map[string]any{"id": q["id"], "value": map[string]any{"question": "approve draft?"}}}}, th["interrupts"])
	assert.Equal(t, map[string]any{"team": "a", "graph_id": "ask", "assistant_id": "ask"}, th["metadata"])

	// An answer keyed by the interrupt's id, as LangGraph's Command takes.
	out = nil
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "ask",
		"command": map[string]any{"resume": map[string]any{q["id"].(string): map[string]any{"ok": true}}}}, http.StatusOK, &out)
	assert.Equal(t, []any{"draft ok=true", "after"}, out["log"])
	assert.Nil(t, out["__interrupt__"], "%v", out)

	// The /v1 API sees the same thread and runs.
	assert.Equal(t, []any{"draft ok=true", "after"}, mustMap(t, e.state(alice, id).Values)["log"])
}

func mustMap(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func TestPlatformRunErrorsSayWhatIsWrongAndKeepTheThread(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t), askGraph(t, false))})
	id := e.platformThread(alice, nil)
	// Before any run, the thread has no workflow: /v1 says so.
	e.fails("GET", "/v1/threads/"+id+"/state", alice, nil, http.StatusConflict, server.ErrorDetail{Code: "no_workflow",
		Message: `thread "` + id + `" has no workflow yet: a Platform run (assistant_id) binds it to one`})
	var out map[string]any
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}}, http.StatusOK, &out)
	require.Equal(t, "HI", out["text"])

	runs := "/threads/" + id + "/runs/wait"
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		want   server.ErrorDetail
	}{
		{"no assistant", map[string]any{"input": map[string]any{}}, 400, server.ErrorDetail{Code: "invalid_field", Field: "assistant_id",
			Message: `field "assistant_id" is required: name a workflow or an assistant (POST /assistants/search lists them)`}},
		{"unknown assistant", map[string]any{"assistant_id": "nope"}, 404, server.ErrorDetail{Code: "unknown_workflow",
			Message: `unknown assistant "nope": each workflow is an assistant, named like it, and POST /assistants creates more (POST /assistants/search lists them)`}},
		{"another workflow", map[string]any{"assistant_id": "ask", "input": map[string]any{}}, 409, server.ErrorDetail{Code: "wrong_workflow",
			Message: `thread "` + id + `" runs assistant "echo", not "ask": create another thread for it`}},
		{"stream mode", map[string]any{"assistant_id": "echo", "stream_mode": []string{"values", "telepathy"}}, 400, server.ErrorDetail{Code: "invalid_field", Field: "stream_mode",
			Message: `unknown stream mode "telepathy" (served: values, updates, messages, messages-tuple, custom, events, debug, tasks, checkpoints)`}},
		{"strategy", map[string]any{"assistant_id": "echo", "multitask_strategy": "shove"}, 400, server.ErrorDetail{Code: "invalid_field", Field: "multitask_strategy",
			Message: `field "multitask_strategy" must be reject, enqueue, interrupt or rollback, not "shove"`}},
		{"webhook off", map[string]any{"assistant_id": "echo", "input": map[string]any{}, "webhook": "http://10.0.0.1/hook"}, 400, server.ErrorDetail{Code: "invalid_field", Field: "webhook",
			Message: `webhooks are off on this server: its operator allows URL prefixes with --webhook-allow (Config.WebhookAllow)`}},
		{"command update", map[string]any{"assistant_id": "echo", "command": map[string]any{"update": map[string]any{"text": "x"}}}, 400, server.ErrorDetail{Code: "invalid_field", Field: "command.update",
			Message: `field "command.update" is not supported: update the state first (POST /threads/{thread_id}/state)`}},
		{"unknown channel", map[string]any{"assistant_id": "echo", "input": map[string]any{"nope": 1}}, 400, server.ErrorDetail{Code: "unknown_channel", Field: "input.nope"}},
		{"unknown checkpoint", map[string]any{"assistant_id": "echo", "checkpoint_id": "nope"}, 404, server.ErrorDetail{Code: "unknown_checkpoint",
			Message: `thread "` + id + `" has no checkpoint "nope"`}},
	} {
		var got server.ErrorBody
		e.call("POST", runs, alice, c.body, c.status, &got)
		if c.want.Message == "" {
			c.want.Message = got.Error.Message
			assert.Contains(t, got.Error.Message, "nope", c.name)
		}
		assert.Equal(t, c.want, got.Error, c.name)
	}
	var st map[string]any
	e.call("GET", "/threads/"+id+"/state", alice, nil, http.StatusOK, &st)
	assert.Equal(t, "HI", st["values"].(map[string]any)["text"], "the thread's state is kept")
	var list []map[string]any
	e.call("GET", "/threads/"+id+"/runs", alice, nil, http.StatusOK, &list)
	require.Len(t, list, 1, "refused runs are not listed")
	assert.Equal(t, "success", list[0]["status"])
	// Bob cannot see alice's thread.
	e.fails("GET", "/threads/"+id, bob, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "` + id + `"`})
}

func TestPlatformWebhookPostsTheEndedRunToAnAllowedURLAndFollowsNoRedirect(t *testing.T) {
	got := make(chan map[string]any, 1)
	redirected := make(chan string, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			redirected <- r.URL.Path
			return
		}
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		got <- body
	}))
	defer hook.Close()
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), WebhookAllow: []string{hook.URL + "/hooks/"}})
	id := e.platformThread(alice, nil)

	var out map[string]any
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "a"},
		"webhook": hook.URL + "/hooks/done"}, http.StatusOK, &out)
	body := <-got
	assert.Equal(t, "success", body["status"])
	assert.Equal(t, "A", body["values"].(map[string]any)["text"])

	var refused server.ErrorBody
	e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "b"},
		"webhook": hook.URL + "/other"}, http.StatusBadRequest, &refused)
	assert.Equal(t, `webhook "`+hook.URL+`/other" is not under a URL prefix this server allows (--webhook-allow)`, refused.Error.Message)

	// An allowed URL that redirects elsewhere: the redirect is not followed.
	e2 := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), WebhookAllow: []string{hook.URL + "/moved"}})
	id2 := e2.platformThread(alice, nil)
	e2.call("POST", "/threads/"+id2+"/runs/wait", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "c"},
		"webhook": hook.URL + "/moved"}, http.StatusOK, &out)
	require.NoError(t, e2.srv.Shutdown(t.Context())) // the webhook call ends before the run's goroutine does
	select {
	case p := <-redirected:
		t.Fatalf("the webhook followed a redirect to %s", p)
	default:
	}
}

func TestPlatformStoreKeepsOwnersApartAndRefusesBadNamespaces(t *testing.T) {
	st := storemem.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Store: st})
	put := map[string]any{"namespace": []string{"docs", "a"}, "key": "k1", "value": map[string]any{"n": 1}}
	e.call("PUT", "/store/items", alice, put, http.StatusNoContent, nil)

	var item map[string]any
	e.call("GET", "/store/items?namespace=docs.a&key=k1", alice, nil, http.StatusOK, &item)
	assert.Equal(t, map[string]any{"n": float64(1)}, item["value"])
	assert.Equal(t, []any{"docs", "a"}, item["namespace"])
	resp := e.request("GET", "/store/items?namespace=docs.a&key=k1", bob, nil)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "null\n", string(data), "bob does not see alice's item")

	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"namespace": []string{"do/cs"}, "key": "k", "value": map[string]any{}}, "namespace"},
		{map[string]any{"namespace": []string{"docs"}, "key": "", "value": map[string]any{}}, "key"},
		{map[string]any{"namespace": []string{"docs"}, "key": "k", "value": []int{1}}, "value"},
	} {
		var got server.ErrorBody
		e.call("PUT", "/store/items", alice, bad.body, http.StatusBadRequest, &got)
		assert.Equal(t, bad.field, got.Error.Field)
	}
	var found map[string][]map[string]any
	e.call("POST", "/store/items/search", alice, map[string]any{"namespace_prefix": []string{"docs"}}, http.StatusOK, &found)
	require.Len(t, found["items"], 1, "the refused puts stored nothing; the first item is kept")
	assert.Equal(t, "k1", found["items"][0]["key"])

	// Without a store, the routes say so.
	e2 := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	e2.fails("PUT", "/store/items", alice, put, http.StatusNotImplemented, server.ErrorDetail{Code: "not_served",
		Message: "this server has no store (Config.Store): the /store routes are off"})
}

// platformOwnerChecks are the cases of TestEveryRouteKeepsOwnersApart for
// the Platform API: alice's thread a1 (run ra, ended) and live (run
// live, in progress), asked for by bob.
func platformOwnerChecks(e *env, ra, live string) map[string]func(t *testing.T) {
	noThread := func(id string) server.ErrorDetail {
		return server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "` + id + `"`}
	}
	noRun := func(thread, id string) server.ErrorDetail {
		return server.ErrorDetail{Code: "unknown_run", Message: `unknown run "` + id + `" on thread "` + thread + `"`}
	}
	same := func(method, path string, body any) func(t *testing.T) {
		return func(t *testing.T) {
			var a, b any
			e.call(method, path, alice, body, http.StatusOK, &a)
			e.call(method, path, bob, body, http.StatusOK, &b)
			assert.Equal(t, a, b, "the assistants are the served workflows, everyone's")
		}
	}
	threadOnly := func(method, path string, body any) func(t *testing.T) {
		return func(t *testing.T) {
			for _, id := range []string{"a1", "live"} {
				e.fails(method, strings.Replace(path, "{thread}", id, 1), bob, body, http.StatusNotFound, noThread(id))
			}
		}
	}
	runOnly := func(method, suffix string) func(t *testing.T) {
		return func(t *testing.T) {
			e.fails(method, "/threads/a1/runs/"+ra+suffix, bob, nil, http.StatusNotFound, noRun("a1", ra))
			e.fails(method, "/threads/live/runs/"+live+suffix, bob, nil, http.StatusNotFound, noRun("live", live))
			var ru map[string]any
			e.call("GET", "/threads/live/runs/"+live, alice, nil, http.StatusOK, &ru)
			assert.Equal(t, "running", ru["status"], "alice's run goes on")
		}
	}
	run := map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "bob"}}
	// stateless: bob's stateless run keeps its thread, which is bob's;
	// bob then deletes it.
	stateless := func(path string) func(t *testing.T) {
		return func(t *testing.T) {
			resp := e.request("POST", path, bob, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "bob"}, "on_completion": "keep"})
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			loc := resp.Header.Get("Content-Location")
			thread, _, _ := strings.Cut(strings.TrimPrefix(loc, "/threads/"), "/")
			e.call("GET", loc+"/join", bob, nil, http.StatusOK, nil) // it has ended
			e.fails("GET", "/threads/"+thread, alice, nil, http.StatusNotFound, noThread(thread))
			e.call("GET", "/threads/"+thread, bob, nil, http.StatusOK, nil)
			e.call("DELETE", "/threads/"+thread, bob, nil, http.StatusNoContent, nil) // and its recorded run
		}
	}
	aliveFor := func(t *testing.T) {
		var ru map[string]any
		e.call("GET", "/threads/live/runs/"+live, alice, nil, http.StatusOK, &ru)
		assert.Equal(t, "running", ru["status"], "alice's run goes on")
	}
	checks := map[string]func(t *testing.T){
		"POST /runs/batch": func(t *testing.T) {
			var runs []map[string]any
			e.call("POST", "/runs/batch", bob, []any{map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "bob"}, "on_completion": "keep"}}, http.StatusOK, &runs)
			require.Len(t, runs, 1)
			thread, run := runs[0]["thread_id"].(string), runs[0]["run_id"].(string)
			e.call("GET", "/threads/"+thread+"/runs/"+run+"/join", bob, nil, http.StatusOK, nil)
			e.fails("GET", "/threads/"+thread+"/runs/"+run, alice, nil, http.StatusNotFound, noRun(thread, run))
			e.fails("GET", "/threads/"+thread, alice, nil, http.StatusNotFound, noThread(thread))
			e.call("DELETE", "/threads/"+thread, bob, nil, http.StatusNoContent, nil)
		},
		"POST /runs/cancel": func(t *testing.T) {
			e.fails("POST", "/runs/cancel", bob, map[string]any{"run_ids": []string{live}}, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run", Message: `unknown run "` + live + `"`})
			e.fails("POST", "/runs/cancel", bob, map[string]any{"thread_id": "live", "run_ids": []string{live}}, http.StatusNotFound, noRun("live", live))
			e.fails("POST", "/runs/cancel", bob, map[string]any{"thread_id": "live", "status": "all"}, http.StatusNotFound, noThread("live"))
			e.call("POST", "/runs/cancel", bob, map[string]any{"status": "all"}, http.StatusNoContent, nil)
			aliveFor(t)
		},
		"GET /runs/{run}/stream": func(t *testing.T) {
			for _, id := range []string{ra, live} {
				e.fails("GET", "/runs/"+id+"/stream", bob, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run", Message: `unknown run "` + id + `"`})
			}
			aliveFor(t)
		},
		"POST /threads/prune": func(t *testing.T) {
			var got map[string]int
			e.call("POST", "/threads/prune", bob, map[string]any{"thread_ids": []string{"a1", "live"}}, http.StatusOK, &got)
			assert.Equal(t, map[string]int{"pruned_count": 0}, got, "bob has no thread a1 or live")
			e.call("GET", "/threads/a1", alice, nil, http.StatusOK, nil)
			aliveFor(t)
		},
		"POST /runs":                   stateless("/runs"),
		"POST /runs/wait":              stateless("/runs/wait"),
		"POST /runs/stream":            stateless("/runs/stream"),
		"GET /threads/{thread}/stream": threadOnly("GET", "/threads/{thread}/stream", nil),
		"GET /ok":                      func(t *testing.T) { e.call("GET", "/ok", "", nil, http.StatusOK, nil) },
		"GET /info":                    func(t *testing.T) { e.call("GET", "/info", "", nil, http.StatusOK, nil) },

		"POST /assistants/search":                           same("POST", "/assistants/search", map[string]any{}),
		"POST /assistants/count":                            same("POST", "/assistants/count", map[string]any{}),
		"GET /assistants/{assistant}":                       same("GET", "/assistants/echo", nil),
		"GET /assistants/{assistant}/graph":                 same("GET", "/assistants/echo/graph", nil),
		"GET /assistants/{assistant}/schemas":               same("GET", "/assistants/echo/schemas", nil),
		"GET /assistants/{assistant}/subgraphs":             same("GET", "/assistants/echo/subgraphs", nil),
		"GET /assistants/{assistant}/subgraphs/{namespace}": same("GET", "/assistants/echo/subgraphs/x", nil),
		"POST /assistants/{assistant}/versions":             same("POST", "/assistants/echo/versions", map[string]any{}),

		"POST /threads": func(t *testing.T) {
			var th map[string]any
			e.call("POST", "/threads", alice, map[string]any{"thread_id": "pf-same", "metadata": map[string]any{"of": "alice"}}, http.StatusOK, &th)
			e.call("POST", "/threads", bob, map[string]any{"thread_id": "pf-same", "metadata": map[string]any{"of": "bob"}}, http.StatusOK, &th)
			e.call("GET", "/threads/pf-same", alice, nil, http.StatusOK, &th)
			assert.Equal(t, "alice", th["metadata"].(map[string]any)["of"], "bob's thread of the same id is another thread")
		},
		"POST /threads/search": func(t *testing.T) {
			var list []map[string]any
			e.call("POST", "/threads/search", bob, map[string]any{"limit": 100}, http.StatusOK, &list)
			require.NotEmpty(t, list)
			for _, th := range list {
				assert.NotContains(t, []string{"a1", "live"}, th["thread_id"], "bob's threads only")
			}
		},
		"POST /threads/count": func(t *testing.T) {
			var n int
			var list []map[string]any
			e.call("POST", "/threads/count", bob, map[string]any{"metadata": map[string]any{"of": "alice"}}, http.StatusOK, &n)
			assert.Zero(t, n, "none of bob's threads is alice's")
			e.call("POST", "/threads/search", alice, map[string]any{"metadata": map[string]any{"of": "alice"}}, http.StatusOK, &list)
			for _, th := range list {
				assert.NotEqual(t, "bob", th["metadata"].(map[string]any)["of"])
			}
		},
		"GET /threads/{thread}":                    threadOnly("GET", "/threads/{thread}", nil),
		"PATCH /threads/{thread}":                  threadOnly("PATCH", "/threads/{thread}", map[string]any{"metadata": map[string]any{"x": 1}}),
		"DELETE /threads/{thread}":                 threadOnly("DELETE", "/threads/{thread}", nil),
		"POST /threads/{thread}/copy":              threadOnly("POST", "/threads/{thread}/copy", nil),
		"GET /threads/{thread}/state":              threadOnly("GET", "/threads/{thread}/state", nil),
		"GET /threads/{thread}/state/{checkpoint}": threadOnly("GET", "/threads/{thread}/state/x", nil),
		"POST /threads/{thread}/state/checkpoint":  threadOnly("POST", "/threads/{thread}/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": "x"}}),
		"POST /threads/{thread}/state":             threadOnly("POST", "/threads/{thread}/state", map[string]any{"values": map[string]any{"text": "bob"}}),
		"POST /threads/{thread}/history":           threadOnly("POST", "/threads/{thread}/history", map[string]any{}),
		"GET /threads/{thread}/history":            threadOnly("GET", "/threads/{thread}/history", nil),
		"POST /threads/{thread}/runs":              threadOnly("POST", "/threads/{thread}/runs", run),
		"POST /threads/{thread}/runs/stream":       threadOnly("POST", "/threads/{thread}/runs/stream", run),
		"POST /threads/{thread}/runs/wait":         threadOnly("POST", "/threads/{thread}/runs/wait", run),
		"GET /threads/{thread}/runs":               threadOnly("GET", "/threads/{thread}/runs", nil),
		"GET /threads/{thread}/runs/{run}":         runOnly("GET", ""),
		"DELETE /threads/{thread}/runs/{run}":      runOnly("DELETE", ""),
		"POST /threads/{thread}/runs/{run}/cancel": runOnly("POST", "/cancel"),
		"GET /threads/{thread}/runs/{run}/join":    runOnly("GET", "/join"),
		"GET /threads/{thread}/runs/{run}/stream":  runOnly("GET", "/stream"),

		"PUT /store/items": func(t *testing.T) {
			item := map[string]any{"namespace": []string{"notes"}, "key": "k", "value": map[string]any{"of": "alice"}}
			e.call("PUT", "/store/items", alice, item, http.StatusNoContent, nil)
			item["value"] = map[string]any{"of": "bob"}
			e.call("PUT", "/store/items", bob, item, http.StatusNoContent, nil)
			var got map[string]any
			e.call("GET", "/store/items?namespace=notes&key=k", alice, nil, http.StatusOK, &got)
			assert.Equal(t, map[string]any{"of": "alice"}, got["value"], "bob's item of the same key is another item")
		},
		"GET /store/items": func(t *testing.T) {
			e.call("PUT", "/store/items", alice, map[string]any{"namespace": []string{"secret"}, "key": "k", "value": map[string]any{}}, http.StatusNoContent, nil)
			var got any
			e.call("GET", "/store/items?namespace=secret&key=k", bob, nil, http.StatusOK, &got)
			assert.Nil(t, got)
		},
		"DELETE /store/items": func(t *testing.T) {
			e.call("PUT", "/store/items", alice, map[string]any{"namespace": []string{"keep"}, "key": "k", "value": map[string]any{}}, http.StatusNoContent, nil)
			e.call("DELETE", "/store/items", bob, map[string]any{"namespace": []string{"keep"}, "key": "k"}, http.StatusNoContent, nil)
			var got any
			e.call("GET", "/store/items?namespace=keep&key=k", alice, nil, http.StatusOK, &got)
			assert.NotNil(t, got, "alice's item is kept")
		},
		"POST /store/items/search": func(t *testing.T) {
			e.call("PUT", "/store/items", alice, map[string]any{"namespace": []string{"hidden"}, "key": "k", "value": map[string]any{"t": "needle"}}, http.StatusNoContent, nil)
			var got map[string][]any
			e.call("POST", "/store/items/search", bob, map[string]any{"namespace_prefix": []string{"hidden"}}, http.StatusOK, &got)
			assert.Empty(t, got["items"])
			e.call("POST", "/store/items/search", bob, map[string]any{"query": "needle"}, http.StatusOK, &got)
			assert.Empty(t, got["items"])
		},
		"POST /store/namespaces": func(t *testing.T) {
			e.call("PUT", "/store/items", alice, map[string]any{"namespace": []string{"alices"}, "key": "k", "value": map[string]any{}}, http.StatusNoContent, nil)
			var got map[string][][]string
			e.call("POST", "/store/namespaces", bob, map[string]any{}, http.StatusOK, &got)
			assert.NotContains(t, got["namespaces"], []string{"alices"})
		},
	}
	cronOf := func(t *testing.T) string {
		var c map[string]any
		e.call("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "@yearly", "input": map[string]any{"text": "x"}}, http.StatusOK, &c)
		return c["cron_id"].(string)
	}
	noCron := func(id string) server.ErrorDetail {
		return server.ErrorDetail{Code: "not_found", Message: `unknown cron "` + id + `"`}
	}
	checks["POST /runs/crons"] = func(t *testing.T) {
		cronOf(t)
		var n int
		e.call("POST", "/runs/crons/count", bob, map[string]any{}, http.StatusOK, &n)
		assert.Zero(t, n, "alice's crons are not bob's")
	}
	checks["POST /threads/{thread}/runs/crons"] = threadOnly("POST", "/threads/{thread}/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "@daily"})
	checks["PATCH /runs/crons/{cron}"] = func(t *testing.T) {
		id := cronOf(t)
		e.fails("PATCH", "/runs/crons/"+id, bob, map[string]any{"enabled": false}, http.StatusNotFound, noCron(id))
	}
	checks["DELETE /runs/crons/{cron}"] = func(t *testing.T) {
		id := cronOf(t)
		e.fails("DELETE", "/runs/crons/"+id, bob, nil, http.StatusNotFound, noCron(id))
	}
	// An assistant alice creates for a check, deleted after it, so that
	// the searches above stay everyone's.
	aliceAssistant := func(t *testing.T, id string) {
		e.call("POST", "/assistants", alice, map[string]any{"graph_id": "echo", "assistant_id": id, "name": "alice's"}, http.StatusOK, nil)
		t.Cleanup(func() { e.call("DELETE", "/assistants/"+id, alice, nil, http.StatusNoContent, nil) })
	}
	const aid = "0d6f1e2a-3b4c-4d5e-8f60-718293a4b5c6"
	noAssistant := server.ErrorDetail{Code: "unknown_workflow",
		Message: `unknown assistant "` + aid + `": each workflow is an assistant, named like it, and POST /assistants creates more (POST /assistants/search lists them)`}
	aliceUnchanged := func(t *testing.T) {
		var a map[string]any
		e.call("GET", "/assistants/"+aid, alice, nil, http.StatusOK, &a)
		assert.Equal(t, "alice's", a["name"])
		assert.Equal(t, 1.0, a["version"])
	}
	checks["POST /assistants"] = func(t *testing.T) {
		aliceAssistant(t, aid)
		var a map[string]any
		e.call("POST", "/assistants", bob, map[string]any{"graph_id": "echo", "assistant_id": aid, "name": "bob's"}, http.StatusOK, &a)
		assert.Equal(t, "bob's", a["name"], "bob's assistant of the same id is another assistant")
		aliceUnchanged(t)
		e.call("DELETE", "/assistants/"+aid, bob, nil, http.StatusNoContent, nil)
	}
	checks["PATCH /assistants/{assistant}"] = func(t *testing.T) {
		aliceAssistant(t, aid)
		e.fails("PATCH", "/assistants/"+aid, bob, map[string]any{"name": "bob's"}, http.StatusNotFound, noAssistant)
		aliceUnchanged(t)
	}
	checks["DELETE /assistants/{assistant}"] = func(t *testing.T) {
		aliceAssistant(t, aid)
		e.fails("DELETE", "/assistants/"+aid, bob, nil, http.StatusNotFound, noAssistant)
		aliceUnchanged(t)
	}
	checks["POST /assistants/{assistant}/latest"] = func(t *testing.T) {
		aliceAssistant(t, aid)
		e.fails("POST", "/assistants/"+aid+"/latest", bob, map[string]any{"version": 1}, http.StatusNotFound, noAssistant)
		e.fails("GET", "/assistants/"+aid, bob, nil, http.StatusNotFound, noAssistant)
		e.fails("POST", "/assistants/"+aid+"/versions", bob, map[string]any{}, http.StatusNotFound, noAssistant)
		e.fails("GET", "/assistants/"+aid+"/graph", bob, nil, http.StatusNotFound, noAssistant)
		aliceUnchanged(t)
	}
	checks["POST /runs/crons/search"] = func(t *testing.T) {
		cronOf(t)
		var list []any
		e.call("POST", "/runs/crons/search", bob, map[string]any{}, http.StatusOK, &list)
		assert.Empty(t, list)
	}
	checks["POST /runs/crons/count"] = func(t *testing.T) {
		var n int
		e.call("POST", "/runs/crons/count", bob, map[string]any{}, http.StatusOK, &n)
		assert.Zero(t, n)
	}
	for _, route := range server.PlatformNotServed() {
		checks[route] = func(t *testing.T) {
			method, path, _ := strings.Cut(route, " ")
			var got server.ErrorBody
			e.call(method, strings.NewReplacer("{assistant}", "echo", "{thread}", "a1", "{cron}", "c", "{run}", ra).Replace(path), bob, nil, http.StatusNotImplemented, &got)
			assert.Equal(t, "not_served", got.Error.Code)
		}
	}
	return checks
}

func TestPlatformCancelWithRollbackOfAQueuedRunKeepsTheThread(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r)})
	id := e.platformThread(alice, map[string]any{"metadata": map[string]any{"graph_id": "block"}})
	var r1, r2 map[string]any
	e.call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "block", "input": map[string]any{}}, http.StatusOK, &r1)
	b.waitEntered(t)
	e.call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "block", "input": map[string]any{}, "multitask_strategy": "enqueue"}, http.StatusOK, &r2)
	require.Equal(t, "pending", r2["status"])
	var before map[string]any
	e.call("GET", "/threads/"+id+"/state", alice, nil, http.StatusOK, &before)

	// Rolling back the queued run forgets it; the thread is untouched.
	e.call("POST", "/threads/"+id+"/runs/"+r2["run_id"].(string)+"/cancel?action=rollback", alice, nil, http.StatusNoContent, nil)
	e.fails("GET", "/threads/"+id+"/runs/"+r2["run_id"].(string), alice, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run",
		Message: `unknown run "` + r2["run_id"].(string) + `" on thread "` + id + `"`})
	var after map[string]any
	e.call("GET", "/threads/"+id+"/state", alice, nil, http.StatusOK, &after)
	assert.Equal(t, before, after)

	// Rolling back the running one returns the thread to where it started:
	// a new thread, so no state at all.
	e.call("POST", "/threads/"+id+"/runs/"+r1["run_id"].(string)+"/cancel?action=rollback", alice, nil, http.StatusNoContent, nil)
	e.call("GET", "/threads/"+id+"/state", alice, nil, http.StatusOK, &after)
	assert.Equal(t, map[string]any{}, after["values"])
	assert.Nil(t, after["checkpoint"])
	var th map[string]any
	e.call("GET", "/threads/"+id, alice, nil, http.StatusOK, &th)
	assert.Equal(t, "idle", th["status"], "the thread and its record are kept")
	assert.Zero(t, b.counts()["c"], "the cancelled run did not finish")
}

func TestPlatformThreadWithoutARunCanBeDeleted(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	id := e.platformThread(alice, nil)
	e.call("DELETE", "/threads/"+id, alice, nil, http.StatusNoContent, nil)
	e.fails("GET", "/threads/"+id, alice, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "` + id + `"`})
}

// chatGraph: talk streams two tokens of a model call, then writes text.
func chatGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	g := graph.New("chat", textKey)
	g.AddNode("talk", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, llm.Token("Hel"))
		graph.Emit(ctx, llm.Token("lo"))
		graph.Emit(ctx, llm.ModelCall{Model: "m", PromptTokens: 3, CompletionTokens: 2})
		graph.Emit(ctx, tools.CallEvent{ID: "c1", Name: "shout", Args: json.RawMessage(`{}`)})
		return graph.Update(textKey.Set("Hello")), nil
	})
	g.AddEdge(graph.Start, "talk")
	g.AddEdge("talk", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func TestPlatformStreamModesHaveTheShapesOfLangGraph(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(chatGraph(t))})
	stream := func(modes ...string) []sse {
		id := e.platformThread(alice, nil)
		resp := e.request("POST", "/threads/"+id+"/runs/stream", alice, map[string]any{"assistant_id": "chat", "input": map[string]any{"text": "hi"}, "stream_mode": modes})
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		assert.Regexp(t, `^/threads/`+id+`/runs/[0-9a-f]+$`, resp.Header.Get("Content-Location"))
		assert.Equal(t, resp.Header.Get("Content-Location")+"/stream", resp.Header.Get("Location"))
		evs := readEvents(t, resp.Body, nil)
		require.Equal(t, "metadata", evs[0].Event)
		assert.Contains(t, resp.Header.Get("Content-Location"), mustMap(t, json.RawMessage(evs[0].Data))["run_id"])
		return evs[1:]
	}
	data := func(ev sse) any {
		var v any
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &v))
		return v
	}

	evs := stream("values", "updates")
	assert.Equal(t, []string{"updates", "values"}, names(evs))
	assert.Equal(t, map[string]any{"talk": map[string]any{"text": "Hello"}}, data(evs[0]))
	assert.Equal(t, map[string]any{"text": "Hello"}, data(evs[1]))

	evs = stream("messages")
	assert.Equal(t, []string{"messages/metadata", "messages/partial", "messages/partial", "messages/complete"}, names(evs))
	assert.Equal(t, "Hel", data(evs[1]).([]any)[0].(map[string]any)["content"])
	done := data(evs[3]).([]any)[0].(map[string]any)
	assert.Equal(t, "Hello", done["content"])
	assert.Equal(t, map[string]any{"input_tokens": float64(3), "output_tokens": float64(2), "total_tokens": float64(5)}, done["usage_metadata"])

	evs = stream("messages-tuple")
	assert.Equal(t, []string{"messages", "messages"}, names(evs))
	tuple := data(evs[1]).([]any)
	assert.Equal(t, "lo", tuple[0].(map[string]any)["content"])
	assert.Equal(t, "talk", tuple[1].(map[string]any)["langgraph_node"])

	evs = stream("custom")
	assert.Empty(t, names(evs), "the model call and the tool call are coorflow's own, not the graph's (TestPlatformCustomModeCarriesWhatTheGraphEmits)")

	evs = stream("events")
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, data(ev).(map[string]any)["event"].(string))
	}
	assert.Equal(t, []string{"on_chain_start", "on_chat_model_stream", "on_chat_model_stream", "on_chat_model_end", "on_tool_start", "on_chain_end"}, kinds)

	evs = stream("tasks", "checkpoints")
	assert.Equal(t, []string{"checkpoints", "tasks", "tasks", "checkpoints"}, names(evs))
	cp := data(evs[3]).(map[string]any)["config"].(map[string]any)["configurable"].(map[string]any)
	assert.NotEmpty(t, cp["checkpoint_id"])
}

func TestPlatformStreamOfAFailedRunEndsWithAnErrorEvent(t *testing.T) {
	g := graph.New("fail", textKey)
	g.AddNode("boom", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Command{}, errors.New("the node broke")
	})
	g.AddEdge(graph.Start, "boom")
	g.AddEdge("boom", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r)})
	id := e.platformThread(alice, nil)
	evs := e.stream("POST", "/threads/"+id+"/runs/stream", alice, map[string]any{"assistant_id": "fail", "input": map[string]any{"text": "x"}})
	last := evs[len(evs)-1]
	assert.Equal(t, "error", last.Event)
	assert.Equal(t, map[string]any{"error": "node_failed", "message": `graph: node "boom" (step 0, attempt 1): the node broke`}, mustMap(t, json.RawMessage(last.Data)))
	var ru []map[string]any
	e.call("GET", "/threads/"+id+"/runs", alice, nil, http.StatusOK, &ru)
	assert.Equal(t, "error", ru[0]["status"])
	var th map[string]any
	e.call("GET", "/threads/"+id, alice, nil, http.StatusOK, &th)
	assert.Equal(t, "error", th["status"])
}

func TestPlatformCronsStartRunsWhenDueWithinACountPerOwner(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MaxCrons: 2})
	id := e.platformThread(alice, nil)
	var onThread, fresh map[string]any
	e.call("POST", "/threads/"+id+"/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "*/5 * * * *",
		"input": map[string]any{"text": "tick"}}, http.StatusOK, &onThread)
	e.call("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "@hourly",
		"input": map[string]any{"text": "new"}, "metadata": map[string]any{"k": "v"}}, http.StatusOK, &fresh)
	assert.Equal(t, id, onThread["thread_id"])
	assert.Nil(t, fresh["thread_id"])

	// Bad requests store nothing; a third cron is beyond alice's count.
	var got server.ErrorBody
	e.call("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "every day"}, http.StatusBadRequest, &got)
	assert.Equal(t, "schedule", got.Error.Field)
	e.call("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "@daily", "input": map[string]any{"nope": 1}}, http.StatusBadRequest, &got)
	assert.Equal(t, "input.nope", got.Error.Field)
	e.fails("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "@daily"}, http.StatusTooManyRequests,
		server.ErrorDetail{Code: "quota_exceeded", Message: `owner "alice" has 2 crons, the most allowed: delete one first`, Quota: "crons", Limit: 2})
	var n int
	e.call("POST", "/runs/crons/count", alice, map[string]any{}, http.StatusOK, &n)
	assert.Equal(t, 2, n)
	e.call("POST", "/runs/crons/count", bob, map[string]any{}, http.StatusOK, &n)
	assert.Zero(t, n, "bob sees none of alice's crons")

	// When due, each starts its run: on its thread, or on a new one.
	due, err := time.Parse(time.RFC3339, fresh["next_run_date"].(string))
	require.NoError(t, err)
	server.FireCrons(e.srv, due)
	var runs []map[string]any
	e.call("GET", "/threads/"+id+"/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs, 1)
	var out map[string]any
	e.call("GET", "/threads/"+id+"/runs/"+runs[0]["run_id"].(string)+"/join", alice, nil, http.StatusOK, &out)
	assert.Equal(t, "TICK", out["text"])
	var made []map[string]any
	e.call("POST", "/threads/search", alice, map[string]any{"metadata": map[string]any{"cron_id": fresh["cron_id"]}}, http.StatusOK, &made)
	require.Len(t, made, 1, "the cron without a thread made one")

	// Disabled, it does not run; deleted, it is gone (bob cannot delete it).
	e.call("PATCH", "/runs/crons/"+onThread["cron_id"].(string), alice, map[string]any{"enabled": false}, http.StatusOK, &out)
	assert.Nil(t, out["next_run_date"])
	server.FireCrons(e.srv, due.Add(time.Hour))
	e.call("GET", "/threads/"+id+"/runs", alice, nil, http.StatusOK, &runs)
	assert.Len(t, runs, 1)
	e.fails("DELETE", "/runs/crons/"+onThread["cron_id"].(string), bob, nil, http.StatusNotFound, server.ErrorDetail{Code: "not_found",
		Message: `unknown cron "` + onThread["cron_id"].(string) + `"`})
	e.call("DELETE", "/runs/crons/"+onThread["cron_id"].(string), alice, nil, http.StatusNoContent, nil)
	var list []map[string]any
	e.call("POST", "/runs/crons/search", alice, map[string]any{}, http.StatusOK, &list)
	require.Len(t, list, 1)
	assert.Equal(t, fresh["cron_id"], list[0]["cron_id"])
}

func TestACronEnabledAgainIsNextDueAfterNow(t *testing.T) {
	st := storemem.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Store: st})
	id := e.platformThread(alice, nil)
	var c map[string]any
	e.call("POST", "/threads/"+id+"/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "@hourly",
		"input": map[string]any{"text": "tick"}}, http.StatusOK, &c)
	cronPath := "/runs/crons/" + c["cron_id"].(string)
	e.call("PATCH", cronPath, alice, map[string]any{"enabled": false}, http.StatusOK, nil)

	// It stays disabled past its next run date.
	var metas []store.Meta
	for m, err := range store.All(t.Context(), st, "#coorflow-server", "crons/") {
		require.NoError(t, err)
		metas = append(metas, m)
	}
	require.Len(t, metas, 1)
	it, err := st.Get(t.Context(), "#coorflow-server", metas[0].Path)
	require.NoError(t, err)
	var job map[string]any
	require.NoError(t, json.Unmarshal([]byte(it.Content), &job))
	job["next"] = "2000-01-01T00:00:00Z"
	content, err := json.Marshal(job)
	require.NoError(t, err)
	_, err = st.Edit(t.Context(), "#coorflow-server", metas[0].Path, store.Replace(it.Revision, string(content)))
	require.NoError(t, err)

	before := time.Now().UTC()
	e.call("PATCH", cronPath, alice, map[string]any{"enabled": true}, http.StatusOK, &c)
	next, err := time.Parse(time.RFC3339Nano, c["next_run_date"].(string))
	require.NoError(t, err)
	assert.True(t, next.After(before), "next run date %v is after the cron was enabled again (%v)", next, before)
	server.FireCrons(e.srv, before)
	var runs []map[string]any
	e.call("GET", "/threads/"+id+"/runs", alice, nil, http.StatusOK, &runs)
	assert.Empty(t, runs, "enabled again, it does not fire at once for the date it missed")
}

func TestACronUpdateWithABadInputIsRefusedAndChangesNothing(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	var c map[string]any
	e.call("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "@hourly",
		"input": map[string]any{"text": "tick"}}, http.StatusOK, &c)
	cronPath := "/runs/crons/" + c["cron_id"].(string)
	e.fails("PATCH", cronPath, alice, map[string]any{"input": map[string]any{"nope": 1}, "metadata": map[string]any{"k": "v"}},
		http.StatusBadRequest, server.ErrorDetail{Code: server.CodeUnknownChannel, Field: "input.nope",
			Message: `graph: unknown channel "nope": graph "echo" declares "text", "log", "count"`})
	var list []map[string]any
	e.call("POST", "/runs/crons/search", alice, map[string]any{}, http.StatusOK, &list)
	require.Len(t, list, 1)
	assert.Equal(t, map[string]any{"text": "tick"}, list[0]["payload"].(map[string]any)["input"], "the stored cron is unchanged")
	assert.Empty(t, list[0]["metadata"])
}

func TestCronsInTheStoreAreNoStoreRoutesItems(t *testing.T) {
	st := storemem.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Store: st})
	var c map[string]any
	e.call("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "@yearly", "input": map[string]any{"text": "x"}}, http.StatusOK, &c)
	id := c["cron_id"].(string)
	var metas []store.Meta
	for m, err := range store.All(t.Context(), st, "#coorflow-server", "crons/") {
		require.NoError(t, err)
		metas = append(metas, m)
	}
	require.Len(t, metas, 1, "the cron is an item of the server's own owner")
	ns := strings.Split(strings.TrimSuffix(metas[0].Path, "/"+id), "/")

	for _, token := range []string{alice, bob} {
		var spaces map[string][][]string
		e.call("POST", "/store/namespaces", token, map[string]any{}, http.StatusOK, &spaces)
		assert.Empty(t, spaces["namespaces"])
		var found map[string][]any
		e.call("POST", "/store/items/search", token, map[string]any{"namespace_prefix": []string{"crons"}}, http.StatusOK, &found)
		assert.Empty(t, found["items"])
		var got any
		e.call("GET", "/store/items?namespace="+strings.Join(ns, ".")+"&key="+id, token, nil, http.StatusOK, &got)
		assert.Nil(t, got)
		e.call("PUT", "/store/items", token, map[string]any{"namespace": ns, "key": id, "value": map[string]any{"schedule": "* * * * *"}}, http.StatusNoContent, nil)
		e.call("DELETE", "/store/items", token, map[string]any{"namespace": ns, "key": id}, http.StatusNoContent, nil)
	}
	var list []map[string]any
	e.call("POST", "/runs/crons/search", alice, map[string]any{}, http.StatusOK, &list)
	require.Len(t, list, 1, "the cron outlives its path's deletion through /store")
	assert.Equal(t, "@yearly", list[0]["schedule"])
}

// TestPlatformModelCallsAtOnePathAreMessagesOfTheirOwn: an agent that
// calls its model twice in one node (a ReAct agent around a tool call)
// streams two messages, each with its own id, as LangGraph gives each
// model call's message its own: a chat UI that groups chunks by id shows
// each reply apart, not the second glued to the first.
func TestPlatformModelCallsAtOnePathAreMessagesOfTheirOwn(t *testing.T) {
	g := graph.New("twice", textKey)
	g.AddNode("talk", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, llm.Token("Let me "))
		graph.Emit(ctx, llm.Token("look."))
		graph.Emit(ctx, llm.ModelCall{Model: "m", PromptTokens: 3, CompletionTokens: 2})
		graph.Emit(ctx, llm.Token("Found "))
		graph.Emit(ctx, llm.Token("it."))
		graph.Emit(ctx, llm.ModelCall{Model: "m", PromptTokens: 5, CompletionTokens: 2})
		return graph.Update(textKey.Set("Found it.")), nil
	})
	g.AddEdge(graph.Start, "talk")
	g.AddEdge("talk", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r)})
	stream := func(mode string) []sse {
		id := e.platformThread(alice, nil)
		return e.stream("POST", "/threads/"+id+"/runs/stream", alice, map[string]any{"assistant_id": "twice", "input": map[string]any{"text": "hi"}, "stream_mode": mode})
	}
	message := func(ev sse) map[string]any {
		var v []map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &v))
		return v[0]
	}

	var ids []string
	texts := map[string]string{}
	for _, ev := range stream("messages-tuple") {
		if ev.Event != "messages" {
			continue
		}
		m := message(ev)
		id := m["id"].(string)
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		texts[id] += m["content"].(string)
	}
	require.Len(t, ids, 2, "two model calls, two messages")
	assert.Equal(t, []string{"Let me look.", "Found it."}, []string{texts[ids[0]], texts[ids[1]]})

	var done []string
	var doneIDs []string
	for _, ev := range stream("messages") {
		if ev.Event == "messages/complete" {
			m := message(ev)
			done = append(done, m["content"].(string))
			doneIDs = append(doneIDs, m["id"].(string))
		}
	}
	assert.Equal(t, []string{"Let me look.", "Found it."}, done, "the second message's text is its own")
	require.Len(t, doneIDs, 2)
	assert.NotEqual(t, doneIDs[0], doneIDs[1])
}
