package server_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
)

// ownerAgents lists each owner's agents.
type ownerAgents map[string][]server.AgentInfo

func (a ownerAgents) ListAgents(_ context.Context, owner string) ([]server.AgentInfo, error) {
	return a[owner], nil
}

// TestEveryRouteKeepsOwnersApart walks every route the server registers —
// a new route without a case here fails — with alice's threads, runs and
// recordings, asked for by bob.
func TestEveryRouteKeepsOwnersApart(t *testing.T) {
	b := newBlocker(t)
	agents := ownerAgents{"alice": {{Name: "alice-agent"}}, "bob": {{Name: "bob-agent"}}}
	st := storemem.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t), b.r), Recorder: recorder(t), Agents: agents, MCPTools: mcpTools,
		Store: st})
	// Alice's eval run, as coorflow eval keeps it.
	require.NoError(t, eval.NewDocStore(st, "alice").SaveRun(t.Context(), &eval.Result{ID: "e-alice", Workflow: "echo", Status: eval.RunDone}))

	// Alice: a finished run on a1, a run in progress on live. Bob: a run on b1.
	e.thread(alice, "echo", "a1")
	done := e.wait(alice, "a1", map[string]any{"input": map[string]any{"text": "alice's secret"}})
	e.thread(alice, "block", "live")
	var live server.Run
	e.call("POST", "/v1/threads/live/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &live)
	b.waitEntered(t)
	e.thread(bob, "echo", "b1")
	bobs := e.wait(bob, "b1", map[string]any{"input": map[string]any{"text": "bob's"}})

	noThread := func(id string) server.ErrorDetail {
		return server.ErrorDetail{Code: "unknown_thread", Message: `unknown thread "` + id + `"`}
	}
	noRun := func(thread, id string) server.ErrorDetail {
		return server.ErrorDetail{Code: "unknown_run", Message: `unknown run "` + id + `" on thread "` + thread + `"`}
	}
	noRecording := func(id string) server.ErrorDetail {
		return server.ErrorDetail{Code: "unknown_run", Message: `no recorded run "` + id + `"`}
	}
	body := func(method, path, token string) string {
		resp := e.request(method, path, token, nil)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s: %s", method, path, data)
		return string(data)
	}
	runsOf := func(token, thread string) []string {
		var list server.RunList
		e.call("GET", "/v1/threads/"+thread+"/runs", token, nil, http.StatusOK, &list)
		var ids []string
		for _, ru := range list.Runs {
			ids = append(ids, ru.ID)
		}
		return ids
	}
	aliceRuns := runsOf(alice, "a1")
	startRun := func(path string) func(t *testing.T) {
		return func(t *testing.T) {
			for _, req := range []any{map[string]any{"input": map[string]any{"text": "bob"}}, map[string]any{"resume": true}, map[string]any{}} {
				e.fails("POST", path, bob, req, http.StatusNotFound, noThread("a1"))
				e.fails("POST", "/v1/threads/live/"+path[len("/v1/threads/a1/"):], bob, req, http.StatusNotFound, noThread("live"))
			}
			assert.Equal(t, aliceRuns, runsOf(alice, "a1"), "no run was started on alice's thread")
		}
	}
	ra := done.ID

	checks := map[string]func(t *testing.T){
		"/mcp": func(t *testing.T) {
			cs := e.mcpClient(bob, "", nil)
			// Resuming alice's thread: bob has no thread a1.
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"thread_id": "a1", "resume": "go on"}})
			require.NoError(t, err)
			require.True(t, res.IsError)
			assert.Equal(t, `unknown thread "a1"`, callText(t, res), "bob cannot reach alice's thread")
			assert.Equal(t, aliceRuns, runsOf(alice, "a1"), "no run was started on alice's thread")
		},
		"GET /healthz": func(t *testing.T) { assert.JSONEq(t, `{"status": "ok"}`, body("GET", "/healthz", "")) },
		"GET /viewer/": func(t *testing.T) {
			page := body("GET", "/viewer/", "")
			assert.NotContains(t, page, ra, "the page holds no data")
		},
		"GET /v1/workflows": func(t *testing.T) {
			assert.Equal(t, body("GET", "/v1/workflows", alice), body("GET", "/v1/workflows", bob), "the served workflows are everyone's")
		},
		"GET /v1/workflows/{workflow}": func(t *testing.T) {
			assert.Equal(t, body("GET", "/v1/workflows/echo", alice), body("GET", "/v1/workflows/echo", bob))
		},
		"GET /v1/usage": func(t *testing.T) {
			var got server.Usage
			e.call("GET", "/v1/usage", bob, nil, http.StatusOK, &got)
			assert.Equal(t, "bob", got.Owner)
			assert.Equal(t, 1, got.Runs, "bob's run, not alice's")
			assert.Equal(t, 5, got.Usage.Tokens())
		},
		"GET /v1/agents": func(t *testing.T) {
			var got server.AgentList
			e.call("GET", "/v1/agents", bob, nil, http.StatusOK, &got)
			assert.Equal(t, []server.AgentInfo{{Name: "bob-agent"}}, got.Agents, "bob's agents, and only his")
		},
		"POST /v1/threads": func(t *testing.T) {
			e.call("POST", "/v1/threads", alice, map[string]any{"workflow": "echo", "thread_id": "same", "metadata": map[string]any{"of": "alice"}}, http.StatusCreated, nil)
			e.call("POST", "/v1/threads", bob, map[string]any{"workflow": "echo", "thread_id": "same", "metadata": map[string]any{"of": "bob"}}, http.StatusCreated, nil)
			var th server.Thread
			e.call("GET", "/v1/threads/same", alice, nil, http.StatusOK, &th)
			assert.Equal(t, map[string]any{"of": "alice"}, th.Metadata, "bob's thread of the same id is another thread")
		},
		"GET /v1/threads/{thread}": func(t *testing.T) {
			e.fails("GET", "/v1/threads/a1", bob, nil, http.StatusNotFound, noThread("a1"))
		},
		"DELETE /v1/threads/{thread}": func(t *testing.T) {
			e.fails("DELETE", "/v1/threads/a1", bob, nil, http.StatusNotFound, noThread("a1"))
			e.call("GET", "/v1/threads/a1", alice, nil, http.StatusOK, nil)
		},
		"GET /v1/threads/{thread}/state": func(t *testing.T) {
			e.fails("GET", "/v1/threads/a1/state", bob, nil, http.StatusNotFound, noThread("a1"))
		},
		"GET /v1/threads/{thread}/history": func(t *testing.T) {
			e.fails("GET", "/v1/threads/a1/history", bob, nil, http.StatusNotFound, noThread("a1"))
		},
		"POST /v1/threads/{thread}/runs":        startRun("/v1/threads/a1/runs"),
		"POST /v1/threads/{thread}/runs/wait":   startRun("/v1/threads/a1/runs/wait"),
		"POST /v1/threads/{thread}/runs/stream": startRun("/v1/threads/a1/runs/stream"),
		"GET /v1/threads/{thread}/runs": func(t *testing.T) {
			e.fails("GET", "/v1/threads/a1/runs", bob, nil, http.StatusNotFound, noThread("a1"))
			assert.Equal(t, []string{bobs.ID}, runsOf(bob, "b1"), "bob lists his runs only")
		},
		"GET /v1/threads/{thread}/runs/{run}": func(t *testing.T) {
			e.fails("GET", "/v1/threads/a1/runs/"+ra, bob, nil, http.StatusNotFound, noRun("a1", ra))
			e.fails("GET", "/v1/threads/b1/runs/"+ra, bob, nil, http.StatusNotFound, noRun("b1", ra))
			e.fails("GET", "/v1/threads/b1/runs/"+live.ID, bob, nil, http.StatusNotFound, noRun("b1", live.ID))
		},
		"GET /v1/threads/{thread}/runs/{run}/stream": func(t *testing.T) {
			e.fails("GET", "/v1/threads/a1/runs/"+ra+"/stream", bob, nil, http.StatusNotFound, noRun("a1", ra))
			e.fails("GET", "/v1/threads/b1/runs/"+ra+"/stream", bob, nil, http.StatusNotFound, noRun("b1", ra))
			e.fails("GET", "/v1/threads/live/runs/"+live.ID+"/stream", bob, nil, http.StatusNotFound, noRun("live", live.ID))
		},
		"POST /v1/threads/{thread}/runs/{run}/cancel": func(t *testing.T) {
			e.fails("POST", "/v1/threads/live/runs/"+live.ID+"/cancel", bob, nil, http.StatusNotFound, noRun("live", live.ID))
			e.fails("POST", "/v1/threads/b1/runs/"+live.ID+"/cancel", bob, nil, http.StatusNotFound, noRun("b1", live.ID))
			var ru server.Run
			e.call("GET", "/v1/threads/live/runs/"+live.ID, alice, nil, http.StatusOK, &ru)
			assert.Equal(t, "running", ru.Status, "alice's run goes on")
		},
		"GET /v1/trace/runs": func(t *testing.T) {
			for _, q := range []string{"", "?thread=a1", "?workflow=echo", "?status=done", "?thread=live"} {
				var got server.TraceRunList
				e.call("GET", "/v1/trace/runs"+q, bob, nil, http.StatusOK, &got)
				for _, ru := range got.Runs {
					assert.Equal(t, "bob", ru.Owner, "bob's recordings only (%s)", q)
				}
			}
			var got server.TraceRunList
			e.call("GET", "/v1/trace/runs", bob, nil, http.StatusOK, &got)
			require.Len(t, got.Runs, 1)
			assert.Equal(t, bobs.ID, got.Runs[0].ID)
		},
		"GET /v1/trace/runs/{run}": func(t *testing.T) {
			e.fails("GET", "/v1/trace/runs/"+ra, bob, nil, http.StatusNotFound, noRecording(ra))
			e.fails("GET", "/v1/trace/runs/"+live.ID, bob, nil, http.StatusNotFound, noRecording(live.ID))
		},
		"GET /v1/trace/runs/{run}/timeline": func(t *testing.T) {
			e.fails("GET", "/v1/trace/runs/"+ra+"/timeline", bob, nil, http.StatusNotFound, noRecording(ra))
		},
		"GET /v1/trace/runs/{run}/agents/{agent}": func(t *testing.T) {
			e.fails("GET", "/v1/trace/runs/"+ra+"/agents/1", bob, nil, http.StatusNotFound, noRecording(ra))
		},
		"GET /v1/evals": func(t *testing.T) {
			var list server.EvalRunList
			e.call("GET", "/v1/evals", bob, nil, http.StatusOK, &list)
			assert.Empty(t, list.Evals, "bob sees none of alice's eval runs")
			e.call("GET", "/v1/evals", alice, nil, http.StatusOK, &list)
			require.Len(t, list.Evals, 1)
			assert.Equal(t, "e-alice", list.Evals[0].ID)
		},
		"GET /v1/evals/{eval}": func(t *testing.T) {
			e.fails("GET", "/v1/evals/e-alice", bob, nil, http.StatusNotFound, server.ErrorDetail{Code: server.CodeUnknownEval, Message: `no eval run "e-alice"`})
			e.call("GET", "/v1/evals/e-alice", alice, nil, http.StatusOK, nil)
		},
		"GET /v1/trace/runs/{run}/events": func(t *testing.T) {
			e.fails("GET", "/v1/trace/runs/"+ra+"/events", bob, nil, http.StatusNotFound, noRecording(ra))
			e.fails("GET", "/v1/trace/runs/"+live.ID+"/events", bob, nil, http.StatusNotFound, noRecording(live.ID))
		},
	}

	for pattern, check := range platformOwnerChecks(e, ra, live.ID) {
		checks[pattern] = check
	}
	for pattern, check := range openaiOwnerChecks(e) {
		checks[pattern] = check
	}
	for pattern, check := range a2aOwnerChecks(e) {
		checks[pattern] = check
	}
	routes := server.Routes(e.srv)
	for _, pattern := range routes {
		check, ok := checks[pattern]
		if !assert.True(t, ok, "route %q has no case in this test: add one saying what another owner sees of it", pattern) {
			continue
		}
		t.Run(pattern, check)
	}
	for pattern := range checks {
		assert.Contains(t, routes, pattern, "a case for a route the server does not serve")
	}
	b.open()
}
