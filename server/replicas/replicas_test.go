package replicas_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

var textKey = graph.NewKey[string]("text")

// gateGraph upper-cases text once gate is closed; its node waits on it, or
// on its run's cancellation.
func gateGraph(t *testing.T, gate <-chan struct{}) *graph.Runnable {
	t.Helper()
	g := graph.New("gate", textKey)
	g.AddNode("wait", func(ctx context.Context, s graph.State) (graph.Command, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return graph.Command{}, ctx.Err()
		}
		return graph.Update(textKey.Set(strings.ToUpper(textKey.Get(s)))), nil
	})
	g.AddEdge(graph.Start, "wait")
	g.AddEdge("wait", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// cluster is n servers on one database schema.
type cluster struct {
	saver  *postgres.Saver
	schema string
	srvs   []*server.Server
	urls   []string
}

func newCluster(t *testing.T, n int, wf *graph.Runnable, ttl time.Duration, opts ...func(*server.Config)) *cluster {
	t.Helper()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	c := &cluster{saver: postgres.New(pool, postgres.WithSchema(schema)), schema: schema}
	for i := range n {
		reps, err := replicas.New(pool, replicas.Config{Saver: c.saver, Name: "r" + string(rune('0'+i)), LeaseTTL: ttl, Schema: schema})
		require.NoError(t, err)
		require.NoError(t, reps.Start(t.Context()))
		cfg := server.Config{
			Workflows: map[string]*graph.Runnable{"gate": wf}, Saver: c.saver, Tokens: map[string]string{"tok": "alice"},
			Replicas: reps, LeaseTTL: ttl,
		}
		for _, o := range opts {
			o(&cfg)
		}
		srv, err := server.New(cfg)
		require.NoError(t, err)
		hs := httptest.NewServer(srv)
		t.Cleanup(func() {
			hs.Close()
			ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
			defer cancel()
			assert.NoError(t, srv.Shutdown(ctx))
			assert.NoError(t, reps.Close())
		})
		c.urls, c.srvs = append(c.urls, hs.URL), append(c.srvs, srv)
	}
	return c
}

// call sends a request as alice and decodes a JSON answer into out.
func call(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil {
		require.NoError(t, json.Unmarshal(data, out), "%s", data)
	}
	return resp.StatusCode
}

// thread creates a thread on url and returns its id.
func thread(t *testing.T, url string) string {
	t.Helper()
	var th server.Thread
	require.Equal(t, http.StatusCreated, call(t, http.MethodPost, url+"/v1/threads", `{"workflow":"gate"}`, &th))
	return th.ID
}

// stream opens a run's stream and returns a scanner of its lines.
func stream(t *testing.T, url string) *bufio.Scanner {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Cleanup(func() { resp.Body.Close() })
	return bufio.NewScanner(resp.Body)
}

// nextEvent reads the name of the next event of sc.
func nextEvent(t *testing.T, sc *bufio.Scanner) (string, []byte) {
	t.Helper()
	name := ""
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			name = string(line[7:])
		case bytes.HasPrefix(line, []byte("data: ")):
			return name, bytes.Clone(line[6:])
		}
	}
	t.Fatalf("the stream ended: %v", sc.Err())
	return "", nil
}

func TestAnotherReplicaStreamsGetsAndListsARun(t *testing.T) {
	gate := make(chan struct{})
	c := newCluster(t, 2, gateGraph(t, gate), time.Minute)
	a, b := c.urls[0], c.urls[1]
	th := thread(t, a)
	var run server.Run
	require.Equal(t, http.StatusAccepted, call(t, http.MethodPost, a+"/v1/threads/"+th+"/runs", `{"input":{"text":"hi"}}`, &run))
	assert.Equal(t, "r0", run.Replica)

	events := stream(t, b+"/v1/threads/"+th+"/runs/"+run.ID+"/stream")
	name, _ := nextEvent(t, events)
	assert.Equal(t, "run_start", name, "replica B streams the run A runs")
	var got server.Run
	require.Equal(t, http.StatusOK, call(t, http.MethodGet, b+"/v1/threads/"+th+"/runs/"+run.ID, "", &got))
	assert.Equal(t, server.StatusRunning, got.Status)
	assert.Equal(t, "r0", got.Replica)

	var busy server.Thread
	require.Equal(t, http.StatusOK, call(t, http.MethodGet, b+"/v1/threads/"+th, "", &busy))
	assert.Equal(t, run.ID, busy.ActiveRun, "replica B knows the thread is busy")
	var undeleted struct{ Error server.ErrorDetail }
	require.Equal(t, http.StatusConflict, call(t, http.MethodDelete, b+"/v1/threads/"+th, "", &undeleted))
	assert.Equal(t, `thread "`+th+`" has a run in progress: cancel it first`, undeleted.Error.Message)

	var refused struct{ Error server.ErrorDetail }
	require.Equal(t, http.StatusConflict, call(t, http.MethodPost, b+"/v1/threads/"+th+"/runs", `{"input":{"text":"again"}}`, &refused))
	assert.Equal(t, server.ErrorDetail{Code: server.CodeThreadBusy, RunID: run.ID,
		Message: `thread "` + th + `" already has run "` + run.ID + `" in progress: wait for it, cancel it, or enable queueing`}, refused.Error)

	close(gate)
	for name != "end" {
		var data []byte
		name, data = nextEvent(t, events)
		if name == "end" {
			require.NoError(t, json.Unmarshal(data, &got))
		}
	}
	assert.Equal(t, server.StatusDone, got.Status)
	assert.JSONEq(t, `{"text":"HI"}`, string(got.Values))

	var list server.RunList
	require.Equal(t, http.StatusOK, call(t, http.MethodGet, b+"/v1/threads/"+th+"/runs", "", &list))
	require.Len(t, list.Runs, 1)
	assert.Equal(t, server.StatusDone, list.Runs[0].Status)
}

func TestACancelOnAnotherReplicaStopsTheRun(t *testing.T) {
	c := newCluster(t, 2, gateGraph(t, make(chan struct{})), time.Minute)
	a, b := c.urls[0], c.urls[1]
	th := thread(t, a)
	var run server.Run
	require.Equal(t, http.StatusAccepted, call(t, http.MethodPost, a+"/v1/threads/"+th+"/runs", `{"input":{"text":"hi"}}`, &run))

	var got server.Run
	require.Equal(t, http.StatusOK, call(t, http.MethodPost, b+"/v1/threads/"+th+"/runs/"+run.ID+"/cancel", "", &got))
	assert.Equal(t, server.StatusCancelled, got.Status)
	require.NotNil(t, got.Error)
	assert.Equal(t, "run cancelled: cancelled by request", got.Error.Message)

	var again struct{ Error server.ErrorDetail }
	require.Equal(t, http.StatusConflict, call(t, http.MethodPost, b+"/v1/threads/"+th+"/runs/"+run.ID+"/cancel", "", &again))
	assert.Equal(t, `run "`+run.ID+`" has already ended (cancelled)`, again.Error.Message)
}

func TestARunWhoseReplicaStoppedRenewingIsTakenOver(t *testing.T) {
	gate := make(chan struct{})
	close(gate)
	wf := gateGraph(t, gate)
	// The live replica leaves a run another enqueued to it for its lease,
	// 2s: long enough for the dead one to claim it first on a loaded
	// machine (with 200ms it sometimes took the run before the claim).
	c := newCluster(t, 1, wf, 2*time.Second)
	th := thread(t, c.urls[0])
	// A replica that claims the run and dies at once: its lease of no
	// duration is never renewed.
	pool := pgtest.Pool(t)
	dead, err := replicas.New(pool, replicas.Config{Saver: c.saver, Name: "dead", LeaseTTL: time.Microsecond, Schema: c.schema})
	require.NoError(t, err)
	defer dead.Close()
	sr := server.SharedRun{ID: "run-1", Thread: th, Key: "alice/" + th, Owner: "alice", Workflow: "gate",
		Request: json.RawMessage(`{"input":{"text":"hi"}}`), CreatedAt: time.Now()}
	require.NoError(t, dead.Enqueue(t.Context(), sr, runs.Refuse, runs.NoLimits))
	claim, err := dead.Claim(t.Context(), sr.ID, []string{sr.Workflow})
	require.NoError(t, err)
	require.NotNil(t, claim)

	events := stream(t, c.urls[0]+"/v1/threads/"+th+"/runs/run-1/stream")
	var got server.Run
	for name := ""; name != "end"; {
		var data []byte
		name, data = nextEvent(t, events)
		if name == "end" {
			require.NoError(t, json.Unmarshal(data, &got))
		}
	}
	assert.Equal(t, server.StatusDone, got.Status)
	assert.Equal(t, "r0", got.Replica, "the live replica took the run over")
	assert.Equal(t, 1, got.Takeovers)
	assert.JSONEq(t, `{"text":"HI"}`, string(got.Values))

	_, err = dead.Renew(t.Context(), claim)
	assert.ErrorIs(t, err, graph.ErrCheckpointConflict, "the dead replica's lease is gone")
	// Its events are queued for the event log's next commit, which
	// refuses them: the next Publish, or its Finish, says so.
	err = dead.Publish(t.Context(), claim, server.SharedEvent{ID: 99, Name: "x", Frame: []byte("x")})
	require.NoError(t, err)
	err = dead.Finish(t.Context(), claim, claim.Run)
	assert.ErrorIs(t, err, graph.ErrCheckpointConflict, "and its events are refused")
	err = dead.Publish(t.Context(), claim, server.SharedEvent{ID: 100, Name: "x", Frame: []byte("x")})
	assert.ErrorIs(t, err, graph.ErrCheckpointConflict, "for good")
	evs, err := dead.Events(t.Context(), "run-1", 0, 1000)
	require.NoError(t, err)
	assert.NotEqual(t, int64(99), evs[len(evs)-1].ID)
}

func TestAReplicaShuttingDownHandsItsRunOver(t *testing.T) {
	gate := make(chan struct{})
	c := newCluster(t, 2, gateGraph(t, gate), time.Minute)
	a, b := c.urls[0], c.urls[1]
	th := thread(t, a)
	var run server.Run
	require.Equal(t, http.StatusAccepted, call(t, http.MethodPost, a+"/v1/threads/"+th+"/runs", `{"input":{"text":"hi"}}`, &run))
	require.Equal(t, "r0", run.Replica)
	events := stream(t, b+"/v1/threads/"+th+"/runs/"+run.ID+"/stream")

	require.NoError(t, c.srvs[0].Shutdown(t.Context()))
	// B takes the run over at once, without waiting for the lease (a
	// minute) to expire, and continues it from its last checkpoint.
	var taken server.Run
	for taken.Replica != "r1" {
		name, _ := nextEvent(t, events)
		require.NotEqual(t, "end", name)
		require.Equal(t, http.StatusOK, call(t, http.MethodGet, b+"/v1/threads/"+th+"/runs/"+run.ID, "", &taken))
	}
	close(gate)
	var got server.Run
	for name := ""; name != "end"; {
		var data []byte
		name, data = nextEvent(t, events)
		if name == "end" {
			require.NoError(t, json.Unmarshal(data, &got))
		}
	}
	assert.Equal(t, server.StatusDone, got.Status)
	assert.Equal(t, 1, got.Takeovers)
	assert.JSONEq(t, `{"text":"HI"}`, string(got.Values))
}

func TestAnOwnersQuotaCountsTheRunsOfEveryReplica(t *testing.T) {
	c := newCluster(t, 2, gateGraph(t, make(chan struct{})), time.Minute, func(cfg *server.Config) { cfg.MaxActiveRuns = 1 })
	a, b := c.urls[0], c.urls[1]
	first, second := thread(t, a), thread(t, b)
	var run server.Run
	require.Equal(t, http.StatusAccepted, call(t, http.MethodPost, a+"/v1/threads/"+first+"/runs", `{"input":{"text":"hi"}}`, &run))

	var refused struct{ Error server.ErrorDetail }
	require.Equal(t, http.StatusTooManyRequests, call(t, http.MethodPost, b+"/v1/threads/"+second+"/runs", `{"input":{"text":"hi"}}`, &refused))
	assert.Equal(t, server.ErrorDetail{Code: server.CodeQuotaExceeded, Quota: server.QuotaActiveRuns, Limit: 1,
		Message: `owner "alice" has 1 runs in progress, the most allowed: wait for one to end, or cancel one, then try again`}, refused.Error)
	var list server.RunList
	require.Equal(t, http.StatusOK, call(t, http.MethodGet, b+"/v1/threads/"+second+"/runs", "", &list))
	assert.Empty(t, list.Runs, "the refused run was not stored")

	var got server.Run
	require.Equal(t, http.StatusOK, call(t, http.MethodPost, b+"/v1/threads/"+first+"/runs/"+run.ID+"/cancel", "", &got))
	require.Equal(t, http.StatusAccepted, call(t, http.MethodPost, b+"/v1/threads/"+second+"/runs", `{"input":{"text":"hi"}}`, &run),
		"the quota has room once the first run ended")
	assert.Equal(t, "r1", run.Replica)
	require.Equal(t, http.StatusOK, call(t, http.MethodPost, a+"/v1/threads/"+second+"/runs/"+run.ID+"/cancel", "", &got))
}

func TestARunTheReplicaHasNoRoomForGoesToAnother(t *testing.T) {
	gate := make(chan struct{})
	c := newCluster(t, 2, gateGraph(t, gate), time.Minute, func(cfg *server.Config) { cfg.ReplicaRuns = 1 })
	a := c.urls[0]
	first, second := thread(t, a), thread(t, a)
	var run1, run2 server.Run
	require.Equal(t, http.StatusAccepted, call(t, http.MethodPost, a+"/v1/threads/"+first+"/runs", `{"input":{"text":"one"}}`, &run1))
	require.Equal(t, "r0", run1.Replica)
	require.Equal(t, http.StatusAccepted, call(t, http.MethodPost, a+"/v1/threads/"+second+"/runs", `{"input":{"text":"two"}}`, &run2))

	events := stream(t, a+"/v1/threads/"+second+"/runs/"+run2.ID+"/stream")
	name, _ := nextEvent(t, events)
	require.Equal(t, "run_start", name)
	require.Equal(t, http.StatusOK, call(t, http.MethodGet, a+"/v1/threads/"+second+"/runs/"+run2.ID, "", &run2))
	assert.Equal(t, "r1", run2.Replica, "the replica with room took the run at once")
	close(gate)
}

func TestActivityReadsAThreadsOpenRunsAndItsNewestOnly(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	saver := postgres.New(pool, postgres.WithSchema(schema))
	reps, err := replicas.New(pool, replicas.Config{Saver: saver, Name: "r0", LeaseTTL: time.Minute, Schema: schema})
	require.NoError(t, err)
	require.NoError(t, reps.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, reps.Close()) })
	ctx := t.Context()
	enqueue := func(key, id string) {
		t.Helper()
		recordThreads(t, saver, key)
		require.NoError(t, reps.Enqueue(ctx, server.SharedRun{ID: id, Key: key, Thread: key, Owner: "alice", Workflow: "gate",
			Request: json.RawMessage(`{}`), CreatedAt: time.Now()}, runs.Queue, runs.NoLimits))
	}
	claim := func(id string) *server.Claim {
		t.Helper()
		c, err := reps.Claim(ctx, id, []string{"gate"})
		require.NoError(t, err)
		require.NotNil(t, c)
		return c
	}
	statuses := func(key string) []string {
		t.Helper()
		runs, err := reps.Activity(ctx, key)
		require.NoError(t, err)
		var out []string
		for _, sr := range runs {
			out = append(out, sr.ID+":"+sr.Status)
		}
		return out
	}

	// Three ended runs: only the newest is read.
	for _, id := range []string{"a", "b", "c"} {
		enqueue("ended", id)
		require.NoError(t, reps.Finish(ctx, claim(id), server.SharedRun{ID: id, Status: server.StatusDone}))
	}
	assert.Equal(t, []string{"c:done"}, statuses("ended"))

	// A run in progress behind a newer run cancelled while queued: both.
	enqueue("open", "d")
	claim("d")
	enqueue("open", "e")
	live, err := reps.Cancel(ctx, "e")
	require.NoError(t, err)
	require.True(t, live)
	assert.Equal(t, []string{"d:running", "e:cancelled"}, statuses("open"))
	assert.Empty(t, statuses("none"))
}
