package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/lgsdktest"
	"github.com/coorflow/coorflow/server"
)

// threadCount is how many threads the owner sees (POST /threads/count).
func (e *env) threadCount(token string) int {
	e.t.Helper()
	var n int
	e.call("POST", "/threads/count", token, map[string]any{}, http.StatusOK, &n)
	return n
}

// statelessRun is a stateless run's answer: its run and thread ids.
type statelessRun struct {
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
	Status   string `json:"status"`
}

func TestStatelessWaitAnswersTheValuesAndDeletesItsThread(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	var out map[string]any
	resp := e.call("POST", "/runs/wait", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}}, http.StatusOK, &out)
	assert.Equal(t, "HI", out["text"])
	assert.Equal(t, []any{"upper", "tally"}, out["log"])
	loc := resp.Header.Get("Content-Location")
	require.True(t, strings.HasPrefix(loc, "/threads/"), "Content-Location %q", loc)
	thread, _, _ := strings.Cut(strings.TrimPrefix(loc, "/threads/"), "/")
	// on_completion "delete" (the default): the thread is gone once the
	// run has ended, and the owner sees no thread.
	e.fails("GET", "/threads/"+thread, alice, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_thread",
		Message: fmt.Sprintf("unknown thread %q", thread)})
	assert.Equal(t, 0, e.threadCount(alice))
}

func TestStatelessRunWithOnCompletionKeepLeavesTheOwnerItsThread(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	var ru statelessRun
	e.call("POST", "/runs", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}, "on_completion": "keep"}, http.StatusOK, &ru)
	require.NotEmpty(t, ru.ThreadID)
	var out map[string]any
	e.call("GET", "/threads/"+ru.ThreadID+"/runs/"+ru.RunID+"/join", alice, nil, http.StatusOK, &out)
	assert.Equal(t, "HI", out["text"])
	var th map[string]any
	e.call("GET", "/threads/"+ru.ThreadID, alice, nil, http.StatusOK, &th)
	assert.Equal(t, "HI", th["values"].(map[string]any)["text"])
	assert.Equal(t, 1, e.threadCount(alice))
	// Another owner does not see it.
	e.call("GET", "/threads/"+ru.ThreadID, bob, nil, http.StatusNotFound, nil)
}

func TestStatelessStreamStreamsTheRunAndDeletesItsThread(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	evs := e.stream("POST", "/runs/stream", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}, "stream_mode": "values"})
	got := names(evs)
	require.NotEmpty(t, got)
	assert.Equal(t, "metadata", got[0])
	assert.Equal(t, "values", got[len(got)-1])
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1].Data), &last))
	assert.Equal(t, "HI", last["text"])
	assert.Equal(t, 0, e.threadCount(alice))
}

func TestStatelessRunErrorsSayWhatIsWrongAndLeaveNoThread(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	for _, path := range []string{"/runs", "/runs/wait", "/runs/stream"} {
		e.fails("POST", path, alice, map[string]any{"assistant_id": "nope", "input": map[string]any{"text": "hi"}}, http.StatusNotFound, server.ErrorDetail{Code: "unknown_workflow",
			Message: `unknown assistant "nope": each workflow is an assistant, named like it, and POST /assistants creates more (POST /assistants/search lists them)`})
		e.fails("POST", path, alice, map[string]any{"input": map[string]any{"text": "hi"}}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "assistant_id",
			Message: `field "assistant_id" is required: name a workflow or an assistant (POST /assistants/search lists them)`})
		e.fails("POST", path, alice, map[string]any{"assistant_id": "echo", "on_completion": "later"}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "on_completion",
			Message: `field "on_completion" must be delete or keep, not "later"`})
		e.fails("POST", path, alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}, "stream_mode": "loud"}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "stream_mode",
			Message: `unknown stream mode "loud" (served: values, updates, messages, messages-tuple, custom, events, debug, tasks, checkpoints)`})
		e.fails("POST", path, alice, map[string]any{"assistant_id": "echo", "command": map[string]any{"resume": true}}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "input",
			Message: `field "input" is required: a stateless run starts on a new thread`})
		// A run refused after its thread was made leaves none behind.
		e.fails("POST", path, alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": 3}}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "input.text",
			Message: `graph: decode channel "text" as string: json: cannot unmarshal number into Go value of type string`})
		e.fails("POST", path, alice, `{"assistant_id": "echo",`, http.StatusBadRequest, server.ErrorDetail{Code: "malformed_json",
			Message: "request body is not valid JSON: it ends too early"})
		e.fails("POST", path, alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}, "colour": "red"}, http.StatusBadRequest, server.ErrorDetail{Code: "unknown_field", Field: "colour",
			Message: `unknown field "colour" (this endpoint takes after_seconds, assistant_id, checkpoint, checkpoint_during, checkpoint_id, command, config, context, durability, feedback_keys, if_not_exists, input, interrupt_after, interrupt_before, langsmith_tracer, metadata, multitask_strategy, on_completion, on_disconnect, stream_mode, stream_resumable, stream_subgraphs, strict_resume, webhook)`})
	}
	assert.Equal(t, 0, e.threadCount(alice))
}

// The quota of active runs holds for stateless runs asked for at once:
// exactly the quota is accepted, the refused ones leave no thread, and
// each accepted one deletes its thread when it ends.
func TestParallelStatelessRunsGetExactlyTheActiveRunQuota(t *testing.T) {
	const n, quota = 120, 16
	for _, b := range admissionBackends {
		t.Run(b.name, func(t *testing.T) {
			h := newHoldFlow(t, n)
			es := b.start(t, server.Config{Workflows: workflows(h.r), MaxActiveRuns: quota})
			e := es[0]
			paths := make([]string, n)
			for i := range paths {
				paths[i] = "/runs"
			}
			answers := fire(t, es, paths, func(int) any {
				return map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "x"}}
			})
			want := server.ErrorDetail{Code: "quota_exceeded", Quota: "active_runs", Limit: quota,
				Message: fmt.Sprintf(`owner "alice" has %d runs in progress, the most allowed: wait for one to end, or cancel one, then try again`, quota)}
			var accepted []statelessRun
			for _, a := range answers {
				switch a.status {
				case http.StatusOK:
					var ru statelessRun
					require.NoError(t, json.Unmarshal(a.body, &ru), "%s", a.body)
					accepted = append(accepted, ru)
				case http.StatusTooManyRequests:
					var got server.ErrorBody
					require.NoError(t, json.Unmarshal(a.body, &got), "%s", a.body)
					assert.Equal(t, want, got.Error)
				default:
					t.Errorf("status %d: %s", a.status, a.body)
				}
			}
			t.Logf("%s: %d of %d stateless runs asked for at once accepted; active run quota %d", b.name, len(accepted), n, quota)
			require.Equal(t, quota, len(accepted), "runs accepted")
			h.waitEntered(t, quota)
			assert.Equal(t, int64(quota), h.cur.Load(), "the accepted runs run")
			assert.Equal(t, quota, e.threadCount(alice), "the threads of the runs in progress, none of the refused ones")

			h.open()
			for i, ru := range accepted {
				var out map[string]any
				es[(i+1)%len(es)].call("GET", "/threads/"+ru.ThreadID+"/runs/"+ru.RunID+"/join", alice, nil, http.StatusOK, &out)
				assert.Equal(t, "held", out["text"], "run %s", ru.RunID)
			}
			assert.LessOrEqual(t, h.max.Load(), int64(quota), "runs in progress at once")
			for _, e := range es {
				assert.Equal(t, 0, e.threadCount(alice), "the threads of the ended runs")
				assert.Empty(t, server.RunCounts(e.srv), "every run that ended was counted out")
			}
		})
	}
}

// TestTheLangGraphSDKsRunStatelessRunsAndJoinAThreadsStream runs
// stateless.mjs with each pinned SDK: runs.wait, runs.stream and
// runs.create with no thread, and threads.joinStream.
func TestTheLangGraphSDKsRunStatelessRunsAndJoinAThreadsStream(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		t.Run(sdk.Version, func(t *testing.T) {
			lgsdktest.NodeModulesOf(t, sdk)
			b := newBlocker(t)
			e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t), b.r)})
			var rep struct {
				Steps            []string
				Waited           string
				Streamed         []string
				KeptThread       string
				DroppedThread    int
				UnknownAssistant int
				Joined           []string
			}
			lgsdktest.RunScript(t, sdk, "stateless.mjs", map[string]string{"LG_URL": e.hs.URL, "LG_KEY": alice, "LG_ECHO": "echo", "LG_BLOCK": "block"}, &rep)
			assert.Equal(t, []string{"wait", "stream", "create", "joinStream"}, rep.Steps)
			assert.Equal(t, "HI", rep.Waited)
			assert.Equal(t, []string{"metadata", "updates", "values"}, rep.Streamed)
			assert.Equal(t, "HI", rep.KeptThread)
			assert.Equal(t, http.StatusNotFound, rep.DroppedThread)
			assert.Equal(t, http.StatusNotFound, rep.UnknownAssistant)
			assert.Equal(t, []string{"metadata", "values", "error"}, rep.Joined)
			assert.Equal(t, 2, e.threadCount(alice), "the kept thread and the joined one; no other stateless run's")
		})
	}
}

// A run asked for on the thread of a stateless run in progress (its id is
// in the answer) is refused: the thread is deleted when the stateless run
// ends, and a run queued behind it would run on a deleted thread, leaving
// checkpoints nobody can see or delete.
func TestARunOnAStatelessRunsThreadIsRefusedAndLeavesNothing(t *testing.T) {
	h := newHoldFlow(t, 2)
	e := newEnv(t, server.Config{Workflows: workflows(h.r)})
	var ru statelessRun
	e.call("POST", "/runs", alice, map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "x"}}, http.StatusOK, &ru)
	h.waitEntered(t, 1)
	// Whatever its strategy: one that interrupts or rolls back the
	// stateless run would otherwise end it first, then run on its
	// deleted thread.
	for _, strategy := range []string{"enqueue", "interrupt", "rollback"} {
		e.fails("POST", "/threads/"+ru.ThreadID+"/runs", alice, map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "y"}, "multitask_strategy": strategy},
			http.StatusConflict, server.ErrorDetail{Code: server.CodeThreadBusy,
				Message: fmt.Sprintf(`thread %q is the thread of stateless run %q, deleted when it ends: start runs on a thread of your own (POST /threads)`, ru.ThreadID, ru.RunID)})
	}
	h.open()
	var out map[string]any
	e.call("GET", "/threads/"+ru.ThreadID+"/runs/"+ru.RunID+"/join", alice, nil, http.StatusOK, &out)
	assert.Equal(t, "held", out["text"])
	assert.Empty(t, server.RunCounts(e.srv), "every run ended")
	cps, err := e.saver.ListCheckpoints(t.Context(), "alice/"+ru.ThreadID, "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, cps, "no checkpoint of the deleted thread is left")
	assert.Equal(t, 0, e.threadCount(alice))
}
