package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/lgsdktest"
	"github.com/coorflow/coorflow/server"
)

// roundRobin serves the replicas envs behind one URL, each request going
// to the next replica in turn, as a load balancer would.
func roundRobin(t *testing.T, envs []*env) string {
	t.Helper()
	proxies := make([]*httputil.ReverseProxy, len(envs))
	for i, e := range envs {
		u, err := url.Parse(e.hs.URL)
		require.NoError(t, err)
		proxies[i] = httputil.NewSingleHostReverseProxy(u)
		proxies[i].FlushInterval = -1 // server-sent events pass at once
	}
	var next atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[int(next.Add(1)-1)%len(proxies)].ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// gone asserts that no replica of es knows the thread.
func gone(t *testing.T, es []*env, thread string) {
	t.Helper()
	for _, e := range es {
		e.fails("GET", "/threads/"+thread, alice, nil, http.StatusNotFound, server.ErrorDetail{Code: "unknown_thread",
			Message: fmt.Sprintf("unknown thread %q", thread)})
		assert.Equal(t, 0, e.threadCount(alice))
	}
}

// A stateless run among replicas: the replica that executes it deletes
// its thread when it ends, and keeps its final values in the shared run,
// so that a waiter on any replica gets them.
func TestStatelessRunsAreAnsweredThroughThreeReplicas(t *testing.T) {
	es := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(echoGraph(t))}).envs
	input := map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}}

	var out map[string]any
	resp := es[0].call("POST", "/runs/wait", alice, input, http.StatusOK, &out)
	assert.Equal(t, "HI", out["text"])
	assert.Equal(t, []any{"upper", "tally"}, out["log"])
	thread, _, _ := strings.Cut(strings.TrimPrefix(resp.Header.Get("Content-Location"), "/threads/"), "/")
	require.NotEmpty(t, thread)
	gone(t, es, thread)

	evs := es[1].stream("POST", "/runs/stream", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}, "stream_mode": []string{"values"}})
	require.NotEmpty(t, evs)
	assert.Equal(t, "metadata", evs[0].Event)
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1].Data), &last))
	assert.Equal(t, "HI", last["text"], "the stream's last values")
	var meta struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(evs[0].Data), &meta))

	// Started on one replica, joined on the others once its thread is
	// gone: their answer is the values the shared run kept.
	var ru statelessRun
	es[2].call("POST", "/runs", alice, input, http.StatusOK, &ru)
	for _, e := range []*env{es[0], es[1], es[2]} {
		out = nil
		e.call("GET", "/threads/"+ru.ThreadID+"/runs/"+ru.RunID+"/join", alice, nil, http.StatusOK, &out)
		assert.Equal(t, "HI", out["text"], "joined on %s", e.hs.URL)
	}
	gone(t, es, ru.ThreadID)
	for _, e := range es {
		assert.Empty(t, server.RunCounts(e.srv), "every run that ended was counted out")
	}
}

// A run asked for on the thread of a stateless run in progress on
// another replica is refused, as on one server.
func TestARunOnAStatelessRunsThreadIsRefusedOnEveryReplica(t *testing.T) {
	h := newHoldFlow(t, 2)
	es := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(h.r)}).envs
	var ru statelessRun
	es[0].call("POST", "/runs", alice, map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "x"}}, http.StatusOK, &ru)
	h.waitEntered(t, 1)
	for i, strategy := range []string{"enqueue", "interrupt", "rollback"} {
		es[i].fails("POST", "/threads/"+ru.ThreadID+"/runs", alice, map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "y"}, "multitask_strategy": strategy},
			http.StatusConflict, server.ErrorDetail{Code: server.CodeThreadBusy,
				Message: fmt.Sprintf(`thread %q is the thread of stateless run %q, deleted when it ends: start runs on a thread of your own (POST /threads)`, ru.ThreadID, ru.RunID)})
	}
	h.open()
	var out map[string]any
	es[1].call("GET", "/threads/"+ru.ThreadID+"/runs/"+ru.RunID+"/join", alice, nil, http.StatusOK, &out)
	assert.Equal(t, "held", out["text"])
	gone(t, es, ru.ThreadID)
}

// A thread's stream on one replica follows the thread's runs however the
// replicas share them: the run in progress, then the one queued behind
// it, each in its own modes.
func TestThreadStreamFollowsTheThreadsRunsThroughThreeReplicas(t *testing.T) {
	b := newBlocker(t)
	es := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(b.r)}).envs
	id := es[0].platformThread(alice, nil)
	var first, second statelessRun
	es[0].call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "block", "input": map[string]any{}}, http.StatusOK, &first)
	b.waitEntered(t)
	es[1].call("POST", "/threads/"+id+"/runs", alice, map[string]any{"assistant_id": "block", "input": map[string]any{},
		"multitask_strategy": "enqueue", "stream_mode": []string{"updates"}}, http.StatusOK, &second)

	resp := es[2].request("GET", "/threads/"+id+"/stream", alice, nil)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	head := readEvents(t, resp.Body, func(ev sse) bool { return ev.Event == "metadata" })
	require.Len(t, head, 1)
	assert.JSONEq(t, `{"run_id":"`+first.RunID+`","attempt":1}`, head[0].Data)
	b.open()
	rest := readEvents(t, resp.Body, nil) // to the end: no run left
	var modes []string
	for _, ev := range rest {
		if len(modes) == 0 || modes[len(modes)-1] != ev.Event {
			modes = append(modes, ev.Event)
		}
	}
	assert.Equal(t, []string{"values", "metadata", "updates"}, modes)
	var meta map[string]any
	for _, ev := range rest {
		if ev.Event == "metadata" {
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &meta))
		}
	}
	assert.Equal(t, second.RunID, meta["run_id"])
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(rest[len(rest)-1].Data), &last))
	assert.Contains(t, last, "c", "the second run's last update")

	// An idle thread's stream ends at once on any replica.
	assert.Empty(t, es[0].stream("GET", "/threads/"+id+"/stream", alice, nil))
}

// TestTheLangGraphSDKsRunStatelessRunsThroughThreeReplicas runs
// stateless.mjs with each pinned SDK against three replicas behind a
// round-robin proxy: each request of the script reaches the next replica.
func TestTheLangGraphSDKsRunStatelessRunsThroughThreeReplicas(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		t.Run(sdk.Version, func(t *testing.T) {
			lgsdktest.NodeModulesOf(t, sdk)
			b := newBlocker(t)
			es := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(echoGraph(t), b.r)}).envs
			var rep struct {
				Steps            []string
				Waited           string
				Streamed         []string
				KeptThread       string
				DroppedThread    int
				UnknownAssistant int
				Joined           []string
			}
			lgsdktest.RunScript(t, sdk, "stateless.mjs", map[string]string{"LG_URL": roundRobin(t, es), "LG_KEY": alice, "LG_ECHO": "echo", "LG_BLOCK": "block"}, &rep)
			assert.Equal(t, []string{"wait", "stream", "create", "joinStream"}, rep.Steps)
			assert.Equal(t, "HI", rep.Waited)
			assert.Equal(t, []string{"metadata", "updates", "values"}, rep.Streamed)
			assert.Equal(t, "HI", rep.KeptThread)
			assert.Equal(t, http.StatusNotFound, rep.DroppedThread)
			assert.Equal(t, http.StatusNotFound, rep.UnknownAssistant)
			assert.Equal(t, []string{"metadata", "values", "error"}, rep.Joined)
			for _, e := range es {
				assert.Equal(t, 2, e.threadCount(alice), "the kept thread and the joined one; no other stateless run's")
			}
		})
	}
}
