package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sqlitesaver "github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// holdFlow is a workflow "hold" whose node waits until the test opens it
// (or its run is cancelled), counting the runs inside it and the most
// there were at once.
type holdFlow struct {
	r        *graph.Runnable
	entered  chan struct{} // receives each time a run enters the node
	release  chan struct{}
	once     sync.Once
	cur, max atomic.Int64
}

func newHoldFlow(t *testing.T, capacity int) *holdFlow {
	t.Helper()
	h := &holdFlow{entered: make(chan struct{}, capacity), release: make(chan struct{})}
	g := graph.New("hold", textKey)
	g.AddNode("hold", func(ctx context.Context, s graph.State) (graph.Command, error) {
		n := h.cur.Add(1)
		defer h.cur.Add(-1)
		for m := h.max.Load(); n > m && !h.max.CompareAndSwap(m, n); m = h.max.Load() {
		}
		h.entered <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
			return graph.Command{}, ctx.Err()
		}
		return graph.Update(textKey.Set("held")), nil
	})
	g.AddEdge(graph.Start, "hold")
	g.AddEdge("hold", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	h.r = r
	t.Cleanup(h.open)
	return h
}

func (h *holdFlow) open() { h.once.Do(func() { close(h.release) }) }

// waitEntered waits until n more runs have entered the node.
func (h *holdFlow) waitEntered(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-h.entered:
		case <-t.Context().Done():
			t.Fatal("the runs never entered the node")
		}
	}
}

// admissionBackends are the servers the admission tests fire at: one
// server keeping its threads in memory or in SQLite, and replicas on one
// PostgreSQL database, one or three.
var admissionBackends = []struct {
	name  string
	start func(t *testing.T, cfg server.Config) []*env
}{
	{"memory", func(t *testing.T, cfg server.Config) []*env { return []*env{newEnv(t, cfg)} }},
	{"sqlite", func(t *testing.T, cfg server.Config) []*env {
		saver, err := sqlitesaver.Open(t.Context(), filepath.Join(t.TempDir(), "threads.db"))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, saver.Close()) }) // after the server's Shutdown
		cfg.Saver = saver
		return []*env{newEnv(t, cfg)}
	}},
	{"postgres_1_replica", func(t *testing.T, cfg server.Config) []*env {
		return newReplicaSet(t, 1, time.Minute, cfg).envs
	}},
	{"postgres_3_replicas", func(t *testing.T, cfg server.Config) []*env {
		return newReplicaSet(t, 3, time.Minute, cfg).envs
	}},
}

// answer is one answer of fire.
type answer struct {
	status int
	retry  string
	body   []byte
}

// fire sends alice's POSTs to paths all at once, the i-th with body(i) to
// envs[i%len(envs)], and returns their answers, in order.
func fire(t *testing.T, envs []*env, paths []string, body func(i int) any) []answer {
	t.Helper()
	out, errs := make([]answer, len(paths)), make([]error, len(paths))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, path := range paths {
		e := envs[i%len(envs)]
		data, err := json.Marshal(body(i))
		require.NoError(t, err)
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), "POST", e.hs.URL+path, bytes.NewReader(data))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+alice)
			<-start
			resp, err := e.client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			out[i].status, out[i].retry = resp.StatusCode, resp.Header.Get("Retry-After")
			out[i].body, errs[i] = io.ReadAll(resp.Body)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return out
}

// admitted splits answers into the runs accepted (/v1's 202, the
// Platform's 200) and requires every
// other answer to be the 429 want, with Retry-After 5.
func admitted(t *testing.T, answers []answer, want server.ErrorDetail) []server.Run {
	t.Helper()
	var accepted []server.Run
	for _, a := range answers {
		switch a.status {
		case http.StatusAccepted, http.StatusOK: // /v1's, the Platform's
			var ru server.Run
			require.NoError(t, json.Unmarshal(a.body, &ru), "%s", a.body)
			accepted = append(accepted, ru)
		case http.StatusTooManyRequests:
			var got server.ErrorBody
			require.NoError(t, json.Unmarshal(a.body, &got), "%s", a.body)
			assert.Equal(t, want, got.Error)
			assert.Equal(t, "5", a.retry)
		default:
			t.Errorf("status %d: %s", a.status, a.body)
		}
	}
	return accepted
}

// awaitRuns follows each run's stream on e to its end and requires it
// done.
func awaitRuns(t *testing.T, e *env, rs []server.Run) {
	t.Helper()
	for _, ru := range rs {
		evs := e.stream("GET", "/v1/threads/"+ru.ThreadID+"/runs/"+ru.ID+"/stream", alice, nil)
		require.NotEmpty(t, evs)
		assert.Equal(t, "done", evs[len(evs)-1].run(t).Status, "run %s", ru.ID)
	}
}

// The quota of active runs holds when many runs are asked for at once,
// on one server and among replicas: exactly the quota is accepted, and
// no more run at any moment.
func TestParallelRunsGetExactlyTheActiveRunQuota(t *testing.T) {
	const n, quota = 120, 16
	for _, b := range admissionBackends {
		t.Run(b.name, func(t *testing.T) {
			h := newHoldFlow(t, n)
			envs := b.start(t, server.Config{Workflows: workflows(h.r), MaxActiveRuns: quota})
			// Every other run is asked for through the Platform API.
			paths := make([]string, n)
			for i := range paths {
				th := envs[0].thread(alice, "hold", fmt.Sprintf("t%d", i))
				paths[i] = "/v1/threads/" + th.ID + "/runs"
				if i%2 == 1 {
					paths[i] = "/threads/" + th.ID + "/runs"
				}
			}
			body := func(i int) any {
				if i%2 == 1 {
					return map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "x"}}
				}
				return map[string]any{"input": map[string]any{"text": "x"}}
			}
			accepted := admitted(t, fire(t, envs, paths, body),
				server.ErrorDetail{Code: "quota_exceeded", Quota: "active_runs", Limit: quota,
					Message: fmt.Sprintf(`owner "alice" has %d runs in progress, the most allowed: wait for one to end, or cancel one, then try again`, quota)})
			t.Logf("%s: %d of %d runs asked for at once accepted; active run quota %d", b.name, len(accepted), n, quota)
			require.Equal(t, quota, len(accepted), "runs accepted")
			h.waitEntered(t, quota)
			assert.Equal(t, int64(quota), h.cur.Load(), "the accepted runs run")

			h.open()
			awaitRuns(t, envs[0], accepted)
			assert.LessOrEqual(t, h.max.Load(), int64(quota), "runs in progress at once")
			if b.name == "memory" || b.name == "sqlite" {
				assert.Empty(t, server.RunCounts(envs[0].srv), "every run that ended was counted out")
			}
		})
	}
}

// The quota of queued runs holds when many runs are asked for at once on
// busy threads: exactly the quota is queued.
func TestParallelRunsOnBusyThreadsGetExactlyTheQueuedRunQuota(t *testing.T) {
	const n, threads, quota = 120, 4, 10
	for _, b := range admissionBackends {
		t.Run(b.name, func(t *testing.T) {
			h := newHoldFlow(t, n+threads)
			envs := b.start(t, server.Config{Workflows: workflows(h.r), QueueBusy: true, MaxQueuedRuns: quota})
			input := map[string]any{"input": map[string]any{"text": "x"}}
			var first []server.Run
			for i := range threads {
				th := envs[0].thread(alice, "hold", fmt.Sprintf("t%d", i))
				var ru server.Run
				envs[i%len(envs)].call("POST", "/v1/threads/"+th.ID+"/runs", alice, input, http.StatusAccepted, &ru)
				first = append(first, ru)
			}
			h.waitEntered(t, threads) // each thread is busy
			paths := make([]string, n)
			for i := range paths {
				paths[i] = fmt.Sprintf("/v1/threads/t%d/runs", i%threads)
			}
			accepted := admitted(t, fire(t, envs, paths, func(int) any { return input }),
				server.ErrorDetail{Code: "quota_exceeded", Quota: "queued_runs", Limit: quota,
					Message: fmt.Sprintf(`owner "alice" has %d runs queued, the most allowed: wait for some to start, or cancel one, then try again`, quota)})
			t.Logf("%s: %d of %d runs asked for at once on %d busy threads accepted; queued run quota %d", b.name, len(accepted), n, threads, quota)
			require.Equal(t, quota, len(accepted), "runs queued")
			for _, ru := range accepted {
				assert.Equal(t, "queued", ru.Status)
			}

			h.open()
			awaitRuns(t, envs[0], append(first, accepted...))
			assert.LessOrEqual(t, h.max.Load(), int64(threads), "runs in progress at once: one per thread")
			if b.name == "memory" || b.name == "sqlite" {
				assert.Empty(t, server.RunCounts(envs[0].srv), "every run that ended was counted out")
			}
		})
	}
}

// A run admitted among replicas that waits for a replica with room
// counts as active, not queued: it waits behind no run of its thread.
func TestARunWaitingForAReplicaWithRoomCountsAsActive(t *testing.T) {
	const quota = 3
	h := newHoldFlow(t, 8)
	e := newReplicaSet(t, 1, time.Minute, server.Config{Workflows: workflows(h.r), MaxActiveRuns: quota, ReplicaRuns: 2}).envs[0]
	input := map[string]any{"input": map[string]any{"text": "x"}}
	var accepted []server.Run
	for i := range quota {
		th := e.thread(alice, "hold", fmt.Sprintf("t%d", i))
		var ru server.Run
		e.call("POST", "/v1/threads/"+th.ID+"/runs", alice, input, http.StatusAccepted, &ru)
		accepted = append(accepted, ru)
	}
	h.waitEntered(t, 2)
	assert.Equal(t, "queued", accepted[2].Status, "the replica has room for two")
	e.thread(alice, "hold", "one-more")
	got, retry := e.refused("POST", "/v1/threads/one-more/runs", alice, input)
	assert.Equal(t, server.ErrorDetail{Code: "quota_exceeded", Quota: "active_runs", Limit: quota,
		Message: `owner "alice" has 3 runs in progress, the most allowed: wait for one to end, or cancel one, then try again`}, got)
	assert.Equal(t, "5", retry)
	h.open()
	awaitRuns(t, e, accepted)
}

// The run of a replica that died counts against its owner's quota until
// the replica that takes it over ends it, once: the count is of the run
// rows, whoever holds them.
func TestARunTakenOverFromADeadReplicaCountsOnceUntilItEnds(t *testing.T) {
	h := newHoldFlow(t, 4)
	rs := newReplicaSet(t, 1, 2*time.Second, server.Config{Workflows: workflows(h.r), MaxActiveRuns: 1})
	live := rs.envs[0]
	live.thread(alice, "hold", "a")
	live.thread(alice, "hold", "b")
	// A replica that claims a run and dies at once: its lease of no
	// duration is never renewed.
	dead, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "dead", LeaseTTL: time.Microsecond, Schema: rs.schema})
	require.NoError(t, err)
	defer dead.Close()
	sr := server.SharedRun{ID: "run-1", Thread: "a", Key: "alice/a", Owner: "alice", Workflow: "hold",
		Request: json.RawMessage(`{"input":{"text":"x"}}`), CreatedAt: time.Now()}
	require.NoError(t, dead.Enqueue(t.Context(), sr, runs.Refuse, runs.Limits{MaxActive: 1, MaxQueued: 0}))
	claim, err := dead.Claim(t.Context(), sr.ID, []string{sr.Workflow})
	require.NoError(t, err)
	require.NotNil(t, claim)

	input := map[string]any{"input": map[string]any{"text": "x"}}
	got, _ := live.refused("POST", "/v1/threads/b/runs", alice, input)
	assert.Equal(t, "active_runs", got.Quota, "the dead replica's run counts")
	h.waitEntered(t, 1) // the live replica took it over
	got, _ = live.refused("POST", "/v1/threads/b/runs", alice, input)
	assert.Equal(t, "active_runs", got.Quota, "the run taken over counts once")

	h.open()
	awaitRuns(t, live, []server.Run{{ID: "run-1", ThreadID: "a"}})
	var ru server.Run
	live.call("POST", "/v1/threads/b/runs", alice, input, http.StatusAccepted, &ru)
	awaitRuns(t, live, []server.Run{ru})
}

// cancelRun cancels alice's run ru on e and follows it to its end, which
// must be a cancellation.
func cancelRun(t *testing.T, e *env, ru server.Run) {
	t.Helper()
	resp := e.request("POST", "/v1/threads/"+ru.ThreadID+"/runs/"+ru.ID+"/cancel", alice, nil)
	resp.Body.Close()
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, resp.StatusCode)
	evs := e.stream("GET", "/v1/threads/"+ru.ThreadID+"/runs/"+ru.ID+"/stream", alice, nil)
	require.NotEmpty(t, evs)
	assert.Equal(t, "cancelled", evs[len(evs)-1].run(t).Status)
}

// A run gives its place up however it ends: cancelled while queued or
// running, failed before it started, or stopped by a shutdown.
func TestEveryWayARunEndsGivesItsPlaceUp(t *testing.T) {
	for _, b := range admissionBackends {
		t.Run(b.name, func(t *testing.T) {
			h := newHoldFlow(t, 8)
			e := b.start(t, server.Config{Workflows: workflows(h.r), QueueBusy: true, MaxActiveRuns: 1, MaxQueuedRuns: 1})[0]
			e.thread(alice, "hold", "t1")
			e.thread(alice, "hold", "t2")
			input := map[string]any{"input": map[string]any{"text": "x"}}
			post := func(thread string) server.Run {
				t.Helper()
				var ru server.Run
				e.call("POST", "/v1/threads/"+thread+"/runs", alice, input, http.StatusAccepted, &ru)
				return ru
			}
			first := post("t1")
			h.waitEntered(t, 1)
			queued := post("t1")
			require.Equal(t, "queued", queued.Status)
			got, _ := e.refused("POST", "/v1/threads/t2/runs", alice, input)
			assert.Equal(t, "active_runs", got.Quota)
			got, _ = e.refused("POST", "/v1/threads/t1/runs", alice, input)
			assert.Equal(t, "queued_runs", got.Quota)

			cancelRun(t, e, queued)
			cancelRun(t, e, post("t1")) // the queued run's place was free
			cancelRun(t, e, first)
			// A run refused by the thread's state once admitted.
			e.call("POST", "/v1/threads/t2/runs", alice, map[string]any{"resume": "yes"}, http.StatusConflict, nil)
			last := post("t2") // the place of each was free
			h.waitEntered(t, 1)
			if b.name == "memory" || b.name == "sqlite" {
				assert.Equal(t, map[string][2]int{"alice": {1, 0}}, server.RunCounts(e.srv))
				post("t2") // queued
				require.NoError(t, e.srv.Shutdown(t.Context()))
				assert.Empty(t, server.RunCounts(e.srv), "the shutdown gave the places of its runs up")
				return
			}
			h.open()
			awaitRuns(t, e, []server.Run{last})
		})
	}
}
