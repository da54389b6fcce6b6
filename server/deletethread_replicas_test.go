package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// race sends alice's requests all at once, the i-th to envs[i%len(envs)],
// and returns their answers, in order.
func race(t *testing.T, envs []*env, reqs []raceReq) []answer {
	t.Helper()
	out, errs := make([]answer, len(reqs)), make([]error, len(reqs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, rq := range reqs {
		e := envs[i%len(envs)]
		var body io.Reader
		if rq.body != nil {
			data, err := json.Marshal(rq.body)
			require.NoError(t, err)
			body = bytes.NewReader(data)
		}
		req, err := http.NewRequestWithContext(t.Context(), rq.method, e.hs.URL+rq.path, body)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+alice)
		wg.Go(func() {
			<-start
			resp, err := e.client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			out[i].status = resp.StatusCode
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

// raceReq is one request of race.
type raceReq struct {
	method, path string
	body         any
}

// runStarts are n requests that start a run on thread th.
func runStarts(n int, th string) []raceReq {
	out := make([]raceReq, n)
	for i := range out {
		out[i] = raceReq{"POST", "/v1/threads/" + th + "/runs", map[string]any{"input": map[string]any{"text": strconv.Itoa(i)}}}
	}
	return out
}

// errorOf decodes the error of answer a.
func errorOf(t *testing.T, a answer) server.ErrorDetail {
	t.Helper()
	var got server.ErrorBody
	require.NoError(t, json.Unmarshal(a.body, &got), "%s", a.body)
	return got.Error
}

// threadLeft requires that nothing of alice's thread th is left among the
// replicas of rs: no record, no checkpoint, no run.
func threadLeft(t *testing.T, rs *replicaSet, th string) {
	t.Helper()
	key := "alice/" + th
	for _, ns := range []string{"", server.ThreadRecordNS} {
		_, err := rs.saver.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: key, NS: ns})
		assert.ErrorIs(t, err, graph.ErrNotFound, "a checkpoint of thread %s in namespace %q", th, ns)
	}
	var n int
	require.NoError(t, rs.pool.QueryRow(t.Context(), `SELECT count(*) FROM `+rs.schema+`.server_runs WHERE thread_key = $1`, key).Scan(&n))
	assert.Zero(t, n, "the runs of thread %s", th)
}

// TestDeletingAThreadRacingItsRunsOnThreeReplicas: among replicas,
// DELETE checked that the thread had no run on any replica, then deleted
// its runs, checkpoints and recordings in later steps, closing it to runs
// only on its own replica: a run admitted on another replica between the
// check and the deletion, or after it by a request that had read the
// thread before, ran on a deleted thread (202 and 204 in one round,
// checkpoints left). Each round, 120 runs on one thread race its deletion
// across three replicas: the deletion is refused because one run was
// admitted first (that run alone, the others told so), or it succeeds
// and no run was admitted — each told the thread is being deleted, or
// unknown — and nothing of the thread is left.
func TestDeletingAThreadRacingItsRunsOnThreeReplicas(t *testing.T) {
	const rounds, n = 12, 120
	h := newHoldFlow(t, rounds*n)
	rs := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(h.r)})
	var deleted []string
	var admitted []server.Run
	outcomes := map[string]int{}
	for round := range rounds {
		th := fmt.Sprintf("race-%d", round)
		rs.envs[0].thread(alice, "hold", th)
		// The deletion first, each round from another replica.
		reqs := append([]raceReq{{"DELETE", "/v1/threads/" + th, nil}}, runStarts(n, th)...)
		envs := []*env{rs.envs[round%3], rs.envs[(round+1)%3], rs.envs[(round+2)%3]}
		answers := race(t, envs, reqs)
		var started []server.Run
		for _, a := range answers[1:] {
			if a.status == http.StatusAccepted {
				var ru server.Run
				require.NoError(t, json.Unmarshal(a.body, &ru), "%s", a.body)
				started = append(started, ru)
			}
		}
		busy := server.ErrorDetail{Code: server.CodeThreadBusy, Message: fmt.Sprintf(`thread %q has a run in progress: cancel it first`, th)}
		switch del := answers[0]; del.status {
		case http.StatusNoContent:
			deleted = append(deleted, th)
			assert.Empty(t, started, "round %d: runs admitted on the thread its deletion deleted", round)
		case http.StatusConflict:
			assert.Equal(t, busy, errorOf(t, del), "round %d", round)
			require.Len(t, started, 1, "round %d: the deletion was refused for a run", round)
			admitted = append(admitted, started[0])
		default:
			t.Fatalf("round %d: DELETE: %d %s", round, del.status, del.body)
		}
		for i, a := range answers[1:] {
			switch a.status {
			case http.StatusAccepted:
				continue
			case http.StatusConflict:
				got := errorOf(t, a)
				switch got.Message {
				case fmt.Sprintf(`thread %q is being deleted: wait for the deletion to end`, th):
					outcomes["being deleted"]++
				default:
					require.NotEmpty(t, started, "round %d, run %d: %s", round, i, a.body)
					outcomes["busy"]++
					assert.Equal(t, server.ErrorDetail{Code: server.CodeThreadBusy, RunID: started[0].ID,
						Message: fmt.Sprintf(`thread %q already has run %q in progress: wait for it, cancel it, or enable queueing`, th, started[0].ID)}, got)
					continue
				}
				assert.Equal(t, server.CodeThreadBusy, got.Code)
			case http.StatusNotFound:
				outcomes["unknown"]++
				assert.Equal(t, server.ErrorDetail{Code: server.CodeUnknownThread, Message: fmt.Sprintf(`unknown thread %q`, th)}, errorOf(t, a), "round %d", round)
			default:
				t.Errorf("round %d, run %d: %d %s", round, i, a.status, a.body)
			}
		}
	}
	t.Logf("%d rounds of %d runs racing a deletion on 3 replicas: %d deleted, %d refused for a run; the runs told: %v",
		rounds, n, len(deleted), len(admitted), outcomes)
	h.open()
	awaitRuns(t, rs.envs[1], admitted)
	for _, th := range deleted {
		threadLeft(t, rs, th)
	}
}

// gatedPGSaver is the replicas' Saver whose first DeleteThread waits
// until the test lets it go on.
type gatedPGSaver struct {
	graph.Saver
	once    sync.Once
	entered chan struct{} // closed when DeleteThread is called
	proceed chan struct{} // closed by the test
}

func (g *gatedPGSaver) DeleteThread(ctx context.Context, thread string) error {
	g.once.Do(func() {
		close(g.entered)
		<-g.proceed
	})
	return g.Saver.DeleteThread(ctx, thread)
}

// TestNoReplicaAdmitsARunOnAThreadBeingDeleted: while a replica deletes a
// thread (held in its Saver's DeleteThread), 120 runs asked for on it at
// once across three replicas are all refused, 409 thread_busy "being
// deleted", as is another deletion; once it is deleted, 120 more are 404.
func TestNoReplicaAdmitsARunOnAThreadBeingDeleted(t *testing.T) {
	const n = 120
	h := newHoldFlow(t, 2*n)
	cfg := server.Config{Workflows: workflows(h.r)}
	rs := newReplicaSet(t, 2, time.Minute, cfg)
	// The third replica deletes through a gated Saver.
	reps, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "r2", LeaseTTL: time.Minute, Schema: rs.schema})
	require.NoError(t, err)
	require.NoError(t, reps.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, reps.Close()) })
	gated := &gatedPGSaver{Saver: rs.saver, entered: make(chan struct{}), proceed: make(chan struct{})}
	cfg.Saver, cfg.Replicas, cfg.LeaseTTL = gated, reps, time.Minute
	deleter := newEnv(t, cfg)
	envs := []*env{rs.envs[0], rs.envs[1], deleter}
	deleter.thread(alice, "hold", "t")

	deleted := make(chan int, 1)
	go func() {
		req, err := http.NewRequestWithContext(t.Context(), "DELETE", deleter.hs.URL+"/v1/threads/t", nil)
		if err != nil {
			deleted <- 0
			return
		}
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := deleter.client.Do(req)
		if err != nil {
			deleted <- 0
			return
		}
		resp.Body.Close()
		deleted <- resp.StatusCode
	}()
	<-gated.entered // the deletion checked the thread and is deleting it
	answers := race(t, envs, append(runStarts(n, "t"), raceReq{"DELETE", "/v1/threads/t", nil}))
	close(gated.proceed)
	assert.Equal(t, http.StatusNoContent, <-deleted)
	closing := server.ErrorDetail{Code: server.CodeThreadBusy, Message: `thread "t" is being deleted: wait for the deletion to end`}
	for i, a := range answers {
		require.Equal(t, http.StatusConflict, a.status, "request %d was not refused on the thread being deleted: %s", i, a.body)
		assert.Equal(t, closing, errorOf(t, a), "request %d", i)
	}

	for i, a := range race(t, envs, runStarts(n, "t")) {
		require.Equal(t, http.StatusNotFound, a.status, "run %d on the deleted thread: %s", i, a.body)
		assert.Equal(t, server.ErrorDetail{Code: server.CodeUnknownThread, Message: `unknown thread "t"`}, errorOf(t, a))
	}
	threadLeft(t, rs, "t")
}
