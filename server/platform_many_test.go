package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/lgsdktest"
	"github.com/coorflow/coorflow/server"
)

func TestPlatformBatchStartsStatelessRuns(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	var runs []statelessRun
	// The SDK's createBatch sends assistantId beside assistant_id, and its
	// payload's other names in camelCase.
	e.call("POST", "/runs/batch", alice, []any{
		map[string]any{"assistant_id": "echo", "assistantId": "echo", "input": map[string]any{"text": "a"}},
		map[string]any{"assistantId": "echo", "input": map[string]any{"text": "b"}, "onCompletion": "keep"},
		map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "c"}, "metadata": map[string]any{"n": 3}},
	}, http.StatusOK, &runs)
	require.Len(t, runs, 3)
	for i, want := range []string{"A", "B", "C"} {
		var out map[string]any
		e.call("GET", "/threads/"+runs[i].ThreadID+"/runs/"+runs[i].RunID+"/join", alice, nil, http.StatusOK, &out)
		assert.Equal(t, want, out["text"])
	}
	assert.Equal(t, 1, e.threadCount(alice), "the kept thread; the others were deleted with their runs")
	var kept map[string]any
	e.call("GET", "/threads/"+runs[1].ThreadID, alice, nil, http.StatusOK, &kept)
	assert.Equal(t, "B", kept["values"].(map[string]any)["text"])
}

func TestPlatformBatchErrorsStartNothing(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	ok := map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "a"}}
	many := make([]any, 101)
	for i := range many {
		many[i] = ok
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
		want   server.ErrorDetail
	}{
		{"not a list", ok, http.StatusBadRequest, server.ErrorDetail{Code: "malformed_json", Message: "request body must be a JSON list of runs (each as POST /runs takes it)"}},
		{"empty", []any{}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Message: "a batch has 1 to 100 runs, not 0"}},
		{"too many", many, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Message: "a batch has 1 to 100 runs, not 101"}},
		{"unknown field", []any{ok, map[string]any{"assistant_id": "echo", "input": map[string]any{}, "colour": "red"}}, http.StatusBadRequest,
			server.ErrorDetail{Code: "unknown_field", Field: "[1].colour", Message: `run [1] of the batch: unknown field "colour" (a run takes ` + lgRunFields(t) + `)`}},
		{"no input", []any{ok, map[string]any{"assistant_id": "echo"}}, http.StatusBadRequest,
			server.ErrorDetail{Code: "invalid_field", Field: "[1].input", Message: `run [1] of the batch: field "input" is required: a stateless run starts on a new thread`}},
		{"unknown assistant", []any{ok, ok, map[string]any{"assistant_id": "nope", "input": map[string]any{}}}, http.StatusNotFound,
			server.ErrorDetail{Code: "unknown_workflow", Message: `run [2] of the batch: unknown assistant "nope": each workflow is an assistant, named like it, and POST /assistants creates more (POST /assistants/search lists them)`}},
		{"bad channel", []any{map[string]any{"assistant_id": "echo", "input": map[string]any{"nope": 1}}}, http.StatusBadRequest,
			server.ErrorDetail{Code: "unknown_channel", Field: "[0].input.nope", Message: `run [0] of the batch: graph: unknown channel "nope": graph "echo" declares "text", "log", "count"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.fails("POST", "/runs/batch", alice, tc.body, tc.status, tc.want)
			assert.Zero(t, e.threadCount(alice), "no run was started, no thread left")
			assert.Empty(t, server.RunCounts(e.srv))
		})
	}
}

// lgRunFields lists the fields a run request takes, as an unknown
// field's message does.
func lgRunFields(t *testing.T) string {
	t.Helper()
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	var got server.ErrorBody
	e.call("POST", "/runs", alice, map[string]any{"colour": "red"}, http.StatusBadRequest, &got)
	_, list, ok := strings.Cut(got.Error.Message, "(this endpoint takes ")
	require.True(t, ok, got.Error.Message)
	return strings.TrimSuffix(list, ")")
}

// Batches sent all at once, on one server and through replicas, get
// exactly the active-run quota: each batch's runs are admitted in order
// until one is refused, each as a single run is.
func TestParallelBatchesGetExactlyTheActiveRunQuota(t *testing.T) {
	const n, size, quota = 100, 3, 16
	for _, b := range admissionBackends {
		t.Run(b.name, func(t *testing.T) {
			h := newHoldFlow(t, n*size)
			es := b.start(t, server.Config{Workflows: workflows(h.r), MaxActiveRuns: quota})
			paths := make([]string, n)
			for i := range paths {
				paths[i] = "/runs/batch"
			}
			run := map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "x"}}
			answers := fire(t, es, paths, func(int) any { return []any{run, run, run} })
			want := server.ErrorDetail{Code: "quota_exceeded", Quota: "active_runs", Limit: quota,
				Message: fmt.Sprintf(`owner "alice" has %d runs in progress, the most allowed: wait for one to end, or cancel one, then try again`, quota)}
			var accepted []statelessRun
			for _, a := range answers {
				switch a.status {
				case http.StatusOK:
					var runs []statelessRun
					require.NoError(t, json.Unmarshal(a.body, &runs), "%s", a.body)
					require.NotEmpty(t, runs)
					accepted = append(accepted, runs...)
				case http.StatusTooManyRequests:
					var got server.ErrorBody
					require.NoError(t, json.Unmarshal(a.body, &got), "%s", a.body)
					assert.Equal(t, want, got.Error)
				default:
					t.Errorf("status %d: %s", a.status, a.body)
				}
			}
			t.Logf("%s: %d of %d runs in %d batches asked for at once accepted; active run quota %d", b.name, len(accepted), n*size, n, quota)
			require.Equal(t, quota, len(accepted), "runs accepted")
			h.waitEntered(t, quota)
			assert.Equal(t, quota, es[0].threadCount(alice), "the threads of the runs in progress, none of the refused ones")
			h.open()
			for i, ru := range accepted {
				es[(i+1)%len(es)].call("GET", "/threads/"+ru.ThreadID+"/runs/"+ru.RunID+"/join", alice, nil, http.StatusOK, nil)
			}
			assert.LessOrEqual(t, h.max.Load(), int64(quota), "runs in progress at once")
			for _, e := range es {
				assert.Equal(t, 0, e.threadCount(alice), "the threads of the ended runs")
			}
		})
	}
}

func TestPlatformBatchBeyondTheQuotaAdmitsWhatFitsAndSaysWhatItRefused(t *testing.T) {
	h := newHoldFlow(t, 4)
	e := newEnv(t, server.Config{Workflows: workflows(h.r), MaxActiveRuns: 2})
	run := map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "x"}}
	var runs []statelessRun
	resp := e.call("POST", "/runs/batch", alice, []any{run, run, run, run}, http.StatusOK, &runs)
	assert.Len(t, runs, 2)
	assert.Equal(t, `2 of 4 runs: quota_exceeded: owner "alice" has 2 runs in progress, the most allowed: wait for one to end, or cancel one, then try again`,
		resp.Header.Get("X-Coorflow-Batch-Refused"))
	h.waitEntered(t, 2)
	assert.Equal(t, 2, e.threadCount(alice), "no thread of a refused run")
	e.fails("POST", "/runs/batch", alice, []any{run}, http.StatusTooManyRequests, server.ErrorDetail{Code: "quota_exceeded", Quota: "active_runs", Limit: 2,
		Message: `owner "alice" has 2 runs in progress, the most allowed: wait for one to end, or cancel one, then try again`})
	h.open()
}

func TestPlatformCancelManyCancelsTheCallersRuns(t *testing.T) {
	h := newHoldFlow(t, 8)
	e := newEnv(t, server.Config{Workflows: workflows(h.r, echoGraph(t)), QueueBusy: true})
	start := func(thread string, strategy string) string {
		var ru statelessRun
		e.call("POST", "/threads/"+thread+"/runs", alice, map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "x"}, "multitask_strategy": strategy}, http.StatusOK, &ru)
		return ru.RunID
	}
	status := func(thread, run string) string {
		var ru statelessRun
		e.call("GET", "/threads/"+thread+"/runs/"+run, alice, nil, http.StatusOK, &ru)
		return ru.Status
	}
	t1, t2 := e.platformThread(alice, nil), e.platformThread(alice, nil)
	a, queued := start(t1, "reject"), start(t1, "enqueue")
	b := start(t2, "reject")
	h.waitEntered(t, 2)

	// By status on a thread: its pending run only.
	e.call("POST", "/runs/cancel", alice, map[string]any{"thread_id": t1, "status": "pending"}, http.StatusNoContent, nil)
	assert.Equal(t, "interrupted", status(t1, queued))
	assert.Equal(t, "running", status(t1, a))
	// By run ids, without a thread.
	e.call("POST", "/runs/cancel", alice, map[string]any{"run_ids": []string{b}}, http.StatusNoContent, nil)
	var out map[string]any
	e.call("GET", "/threads/"+t2+"/runs/"+b+"/join", alice, nil, http.StatusOK, &out)
	assert.Equal(t, "interrupted", status(t2, b))
	assert.Equal(t, "running", status(t1, a))
	// By status, every thread of the caller's: bob's cancel reaches none
	// of alice's runs.
	e.call("POST", "/runs/cancel", bob, map[string]any{"status": "all"}, http.StatusNoContent, nil)
	assert.Equal(t, "running", status(t1, a))
	e.call("POST", "/runs/cancel?action=interrupt", alice, map[string]any{"status": "running"}, http.StatusNoContent, nil)
	e.call("GET", "/threads/"+t1+"/runs/"+a+"/join", alice, nil, http.StatusOK, &out)
	assert.Equal(t, "interrupted", status(t1, a))
	// An ended run named again is left as it is.
	e.call("POST", "/runs/cancel", alice, map[string]any{"thread_id": t1, "run_ids": []string{a, queued}}, http.StatusNoContent, nil)
}

func TestPlatformCancelManyErrors(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r)})
	id := e.platformThread(alice, nil)
	var ru statelessRun
	e.call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "block", "input": map[string]any{}}, http.StatusOK, &ru)
	b.waitEntered(t)
	for _, tc := range []struct {
		name   string
		path   string
		token  string
		body   any
		status int
		want   server.ErrorDetail
	}{
		{"nothing named", "/runs/cancel", alice, map[string]any{}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "run_ids",
			Message: `send "run_ids" (the runs to cancel, with or without "thread_id") or "status" (pending, running or all)`}},
		{"both", "/runs/cancel", alice, map[string]any{"run_ids": []string{ru.RunID}, "status": "all"}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "status",
			Message: `send "run_ids" or "status", not both`}},
		{"bad status", "/runs/cancel", alice, map[string]any{"status": "done"}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "status",
			Message: `field "status" must be pending, running or all, not "done"`}},
		{"bad action", "/runs/cancel?action=stop", alice, map[string]any{"status": "all"}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_query", Field: "action",
			Message: `query parameter "action" must be interrupt or rollback, not "stop"`}},
		{"unknown run among known", "/runs/cancel", alice, map[string]any{"run_ids": []string{ru.RunID, "nope"}}, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run",
			Message: `unknown run "nope"`}},
		{"another owner's run", "/runs/cancel", bob, map[string]any{"run_ids": []string{ru.RunID}}, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run",
			Message: fmt.Sprintf("unknown run %q", ru.RunID)}},
		{"another owner's thread", "/runs/cancel", bob, map[string]any{"thread_id": id, "status": "all"}, http.StatusNotFound, server.ErrorDetail{Code: "unknown_thread",
			Message: fmt.Sprintf("unknown thread %q", id)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.fails("POST", tc.path, tc.token, tc.body, tc.status, tc.want)
			var got statelessRun
			e.call("GET", "/threads/"+id+"/runs/"+ru.RunID, alice, nil, http.StatusOK, &got)
			assert.Equal(t, "running", got.Status, "nothing was cancelled")
		})
	}
	b.open()
}

// Among replicas, a status cancels the runs of one thread, and a run
// found by its id alone is the caller's.
func TestPlatformManyRunRoutesAmongReplicas(t *testing.T) {
	es := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(echoGraph(t))}).envs
	var ru statelessRun
	es[0].call("POST", "/runs", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "x"}, "on_completion": "keep"}, http.StatusOK, &ru)
	es[1].call("GET", "/threads/"+ru.ThreadID+"/runs/"+ru.RunID+"/join", alice, nil, http.StatusOK, nil)
	assert.NotEmpty(t, es[1].stream("GET", "/runs/"+ru.RunID+"/stream", alice, nil))
	es[1].fails("GET", "/runs/"+ru.RunID+"/stream", bob, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run", Message: fmt.Sprintf("unknown run %q", ru.RunID)})
	es[0].fails("GET", "/runs/nope/stream", alice, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run", Message: `unknown run "nope"`})
	es[1].fails("POST", "/runs/cancel", bob, map[string]any{"run_ids": []string{ru.RunID}}, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run", Message: fmt.Sprintf("unknown run %q", ru.RunID)})
	es[0].fails("POST", "/runs/cancel", alice, map[string]any{"status": "all"}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "thread_id",
		Message: `with replicas, "status" cancels the runs of one thread: send "thread_id" too (the replicas share runs by thread, not by owner)`})
}

func TestPlatformPruneDeletesTheCallersThreads(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t), b.r)})
	t1, t2, busy := e.platformThread(alice, nil), e.platformThread(alice, nil), e.platformThread(alice, nil)
	e.call("POST", "/threads/"+t1+"/runs/wait", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "x"}}, http.StatusOK, nil)
	bobs := e.platformThread(bob, nil)
	var got map[string]int
	e.call("POST", "/threads/prune", alice, map[string]any{"thread_ids": []string{t1, "nope", bobs, t2}}, http.StatusOK, &got)
	assert.Equal(t, map[string]int{"pruned_count": 2}, got, "alice's two; an unknown id and bob's thread are not hers")
	for _, id := range []string{t1, t2} {
		e.fails("GET", "/threads/"+id, alice, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_thread", Message: fmt.Sprintf("unknown thread %q", id)})
	}
	e.call("GET", "/threads/"+bobs, bob, nil, http.StatusOK, nil)

	e.call("POST", "/threads/"+busy+"/runs", alice, map[string]any{"assistant_id": "block", "input": map[string]any{}}, http.StatusOK, nil)
	b.waitEntered(t)
	for _, tc := range []struct {
		name   string
		body   any
		status int
		want   server.ErrorDetail
	}{
		{"busy", map[string]any{"thread_ids": []string{busy}}, http.StatusConflict, server.ErrorDetail{Code: "thread_busy",
			Message: fmt.Sprintf("thread %q has a run in progress: cancel it first", busy)}},
		{"keep_latest", map[string]any{"thread_ids": []string{bobs}, "strategy": "keep_latest"}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "strategy",
			Message: `strategy "keep_latest" is not served: coorflow's checkpoint savers cannot delete a thread's older checkpoints and keep its newest (graph.Saver deletes a thread whole); prune with "delete"`}},
		{"bad strategy", map[string]any{"thread_ids": []string{bobs}, "strategy": "all"}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "strategy",
			Message: `field "strategy" must be delete, not "all"`}},
		{"too many", map[string]any{"thread_ids": make([]string, 101)}, http.StatusBadRequest, server.ErrorDetail{Code: "invalid_field", Field: "thread_ids",
			Message: `field "thread_ids" names at most 100 threads, not 101`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.fails("POST", "/threads/prune", alice, tc.body, tc.status, tc.want)
			e.call("GET", "/threads/"+busy, alice, nil, http.StatusOK, nil)
		})
	}
	b.open()
}

func TestPlatformRunStreamFindsARunByItsIDAlone(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Recorder: recorder(t)})
	id := e.platformThread(alice, nil)
	var ru statelessRun
	e.call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}, "stream_mode": []string{"updates"}}, http.StatusOK, &ru)
	e.call("GET", "/threads/"+id+"/runs/"+ru.RunID+"/join", alice, nil, http.StatusOK, nil)
	events := map[string]bool{}
	for _, ev := range e.stream("GET", "/runs/"+ru.RunID+"/stream", alice, nil) {
		events[ev.Event] = true
	}
	assert.Equal(t, map[string]bool{"metadata": true, "updates": true}, events, "the run's own modes")
	e.fails("GET", "/runs/"+ru.RunID+"/stream", bob, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run", Message: fmt.Sprintf("unknown run %q", ru.RunID)})
	e.fails("GET", "/runs/nope/stream", alice, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_run", Message: `unknown run "nope"`})
}

// manyReport is what many.mjs saw.
type manyReport struct {
	Steps     []string
	Batch     []string
	Joined    []string
	Cancelled []string
	Pruned    int
}

// checkMany checks many.mjs's report with sdk: 2.0.0 has no cancelMany
// and no prune.
func checkMany(t *testing.T, sdk lgsdktest.SDK, rep manyReport) {
	t.Helper()
	if sdk.Version == "2.0.0" {
		assert.Equal(t, []string{"batch", "joinStream"}, rep.Steps)
	} else {
		assert.Equal(t, []string{"batch", "joinStream", "cancelMany", "prune"}, rep.Steps)
		assert.Equal(t, []string{"interrupted", "interrupted"}, rep.Cancelled)
		assert.Equal(t, 2, rep.Pruned)
	}
	assert.Equal(t, []string{"A", "B"}, rep.Batch)
	assert.Equal(t, []string{"metadata", "values"}, rep.Joined)
}

// TestTheLangGraphSDKsActOnManyRunsAndThreads runs many.mjs with each
// pinned SDK, on one server and through three replicas behind a
// round-robin proxy: runs.createBatch, runs.joinStream without a thread,
// runs.cancelMany and threads.prune.
func TestTheLangGraphSDKsActOnManyRunsAndThreads(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		for _, where := range []string{"one server", "three replicas"} {
			t.Run(sdk.Version+"/"+where, func(t *testing.T) {
				lgsdktest.NodeModulesOf(t, sdk)
				b := newBlocker(t)
				cfg := server.Config{Workflows: workflows(echoGraph(t), b.r), Recorder: recorder(t)}
				var url string
				if where == "one server" {
					url = newEnv(t, cfg).hs.URL
				} else {
					cfg.Recorder = nil
					url = roundRobin(t, newReplicaSet(t, 3, time.Minute, cfg).envs)
				}
				var rep manyReport
				lgsdktest.RunScript(t, sdk, "many.mjs", map[string]string{"LG_URL": url, "LG_KEY": alice, "LG_ECHO": "echo", "LG_BLOCK": "block"}, &rep)
				checkMany(t, sdk, rep)
			})
		}
	}
}
