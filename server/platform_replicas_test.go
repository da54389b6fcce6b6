package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	sqlitesaver "github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
	storepg "github.com/coorflow/coorflow/store/postgres"
	storesqlite "github.com/coorflow/coorflow/store/sqlite"
)

// replicaSet is servers sharing their runs on one PostgreSQL schema, each
// an env; pool, saver and schema are theirs.
type replicaSet struct {
	envs   []*env
	pool   *pgxpool.Pool
	saver  *postgres.Saver
	schema string
}

// newReplicaSet starts n replicas, r0..r(n-1), of a server over wfs on a
// schema of their own, with a lease of ttl.
func newReplicaSet(t *testing.T, n int, ttl time.Duration, cfg server.Config) *replicaSet {
	t.Helper()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	rs := &replicaSet{pool: pool, saver: postgres.New(pool, postgres.WithSchema(schema)), schema: schema}
	for range n {
		rs.add(t, ttl, cfg)
	}
	return rs
}

// add starts one more replica, r<n>, with its own cfg.
func (rs *replicaSet) add(t *testing.T, ttl time.Duration, cfg server.Config) *env {
	t.Helper()
	reps, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "r" + strconv.Itoa(len(rs.envs)), LeaseTTL: ttl, Schema: rs.schema})
	require.NoError(t, err)
	require.NoError(t, reps.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, reps.Close()) }) // after the server's Shutdown
	cfg.Saver, cfg.Replicas, cfg.LeaseTTL = rs.saver, reps, ttl
	e := newEnv(t, cfg)
	rs.envs = append(rs.envs, e)
	return e
}

// gate is a workflow "gate" whose node upper-cases text once open is
// closed, or ends with its run's cancellation.
func gate(t *testing.T, open <-chan struct{}) *graph.Runnable {
	t.Helper()
	return gateNamed(t, "gate", open)
}

// gateNamed is gate under another name.
func gateNamed(t *testing.T, name string, open <-chan struct{}) *graph.Runnable {
	t.Helper()
	g := graph.New(name, textKey)
	g.AddNode("wait", func(ctx context.Context, s graph.State) (graph.Command, error) {
		select {
		case <-open:
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

// lgRun is the part of a Platform run the tests read.
type lgRun struct {
	RunID             string         `json:"run_id"`
	ThreadID          string         `json:"thread_id"`
	AssistantID       string         `json:"assistant_id"`
	Status            string         `json:"status"`
	MultitaskStrategy string         `json:"multitask_strategy"`
	Metadata          map[string]any `json:"metadata"`
}

// openStream sends a request whose answer is an event stream and returns
// a reader of its events; the stream is closed when t ends.
func (e *env) openStream(method, path string, body any, header ...string) *eventReader {
	e.t.Helper()
	resp := e.request(method, path, alice, body, header...)
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	e.t.Cleanup(func() { resp.Body.Close() })
	return &eventReader{t: e.t, sc: bufio.NewScanner(resp.Body)}
}

// eventReader reads server-sent events one at a time.
type eventReader struct {
	t  *testing.T
	sc *bufio.Scanner
}

// next returns the next event, or false at the end of the stream.
func (r *eventReader) next() (sse, bool) {
	r.t.Helper()
	var cur sse
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "" && (cur.Event != "" || cur.Data != ""):
			return cur, true
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		}
	}
	return cur, false
}

// rest reads the events to the end of the stream.
func (r *eventReader) rest() []sse {
	var out []sse
	for ev, ok := r.next(); ok; ev, ok = r.next() {
		out = append(out, ev)
	}
	return out
}

// valuesOf returns the data of the stream's values events.
func valuesOf(evs []sse) []string {
	var out []string
	for _, ev := range evs {
		if ev.Event == "values" {
			out = append(out, ev.Data)
		}
	}
	return out
}

func TestPlatformRunsOfOneReplicaAreAnsweredByAnother(t *testing.T) {
	open := make(chan struct{})
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(gate(t, open))})
	a, b := rs.envs[0], rs.envs[1]
	th := a.platformThread(alice, nil)
	runs := "/threads/" + th + "/runs"

	var run lgRun
	a.call("POST", runs, alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "hi"},
		"metadata": map[string]any{"from": "a"}}, http.StatusOK, &run)
	assert.Equal(t, "running", run.Status)

	var got lgRun
	b.call("GET", runs+"/"+run.RunID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, lgRun{RunID: run.RunID, ThreadID: th, AssistantID: "gate", Status: "running", MultitaskStrategy: "reject",
		Metadata: map[string]any{"from": "a"}}, got, "replica B shows the run replica A runs, with its request's fields")
	var thread map[string]any
	b.call("GET", "/threads/"+th, alice, nil, http.StatusOK, &thread)
	assert.Equal(t, "busy", thread["status"])
	b.fails("POST", "/threads/"+th+"/state", alice, map[string]any{"values": map[string]any{"text": "x"}}, http.StatusConflict,
		server.ErrorDetail{Code: server.CodeThreadBusy, Message: `thread "` + th + `" has a run in progress: its state changes when the run ends`})
	b.fails("POST", runs, alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "no"}}, http.StatusConflict,
		server.ErrorDetail{Code: server.CodeThreadBusy, RunID: run.RunID,
			Message: `thread "` + th + `" already has run "` + run.RunID + `" in progress: wait for it, cancel it, or enable queueing`})

	var queued lgRun
	b.call("POST", runs, alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "again"},
		"multitask_strategy": "enqueue"}, http.StatusOK, &queued)
	assert.Equal(t, "pending", queued.Status, "enqueued behind the run replica A runs")
	b.fails("DELETE", runs+"/"+queued.RunID, alice, nil, http.StatusConflict,
		server.ErrorDetail{Code: server.CodeThreadBusy, Message: `run "` + queued.RunID + `" has not ended: cancel it first`})

	events := b.openStream("GET", runs+"/"+run.RunID+"/stream", nil)
	first, ok := events.next()
	require.True(t, ok)
	assert.Equal(t, "metadata", first.Event)
	close(open)
	assert.Equal(t, []string{`{"text":"HI"}`}, valuesOf(events.rest()), "B streams A's run to its end")

	var result map[string]any
	a.call("GET", runs+"/"+queued.RunID+"/join", alice, nil, http.StatusOK, &result)
	assert.Equal(t, map[string]any{"text": "AGAIN"}, result, "A joins the run B queued")

	var list []lgRun
	a.call("GET", runs, alice, nil, http.StatusOK, &list)
	require.Len(t, list, 2)
	assert.Equal(t, []string{queued.RunID, run.RunID}, []string{list[0].RunID, list[1].RunID}, "newest first")
	assert.Equal(t, []string{"success", "success"}, []string{list[0].Status, list[1].Status})
	a.call("GET", runs+"?status=success&limit=1&offset=1", alice, nil, http.StatusOK, &list)
	require.Len(t, list, 1)
	assert.Equal(t, run.RunID, list[0].RunID)

	b.call("DELETE", runs+"/"+run.RunID, alice, nil, http.StatusNoContent, nil)
	a.fails("GET", runs+"/"+run.RunID, alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: server.CodeUnknownRun, Message: `unknown run "` + run.RunID + `" on thread "` + th + `"`})
}

func TestAPlatformCancelOnAnotherReplicaInterruptsOrRollsBack(t *testing.T) {
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(gate(t, make(chan struct{})))})
	a, b := rs.envs[0], rs.envs[1]
	th := a.platformThread(alice, nil)
	runs := "/threads/" + th + "/runs"

	var first lgRun
	a.call("POST", runs, alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "one"}}, http.StatusOK, &first)
	b.call("POST", runs+"/"+first.RunID+"/cancel?wait=1", alice, nil, http.StatusNoContent, nil)
	var got lgRun
	a.call("GET", runs+"/"+first.RunID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "interrupted", got.Status, "the run replica A ran was cancelled by B")
	b.fails("POST", runs+"/"+first.RunID+"/cancel", alice, nil, http.StatusConflict,
		server.ErrorDetail{Code: server.CodeRunFinished, RunID: first.RunID, Message: `run "` + first.RunID + `" has already ended (interrupted)`})
	b.fails("POST", runs+"/"+first.RunID+"/cancel?action=undo", alice, nil, http.StatusBadRequest,
		server.ErrorDetail{Code: server.CodeInvalidQuery, Field: "action", Message: `query parameter "action" must be interrupt or rollback, not "undo"`})

	var second lgRun
	a.call("POST", runs, alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "two"}}, http.StatusOK, &second)
	b.call("POST", runs+"/"+second.RunID+"/cancel?action=rollback", alice, nil, http.StatusNoContent, nil)
	b.fails("GET", runs+"/"+second.RunID, alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: server.CodeUnknownRun, Message: `unknown run "` + second.RunID + `" on thread "` + th + `"`})
	var state map[string]any
	a.call("GET", "/threads/"+th+"/state", alice, nil, http.StatusOK, &state)
	assert.Equal(t, map[string]any{"text": "one"}, state["values"], "the thread is back where the rolled back run started")
}

func TestPlatformMultitaskStrategiesPreemptARunOfAnotherReplica(t *testing.T) {
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(gate(t, make(chan struct{})))})
	a, b := rs.envs[0], rs.envs[1]
	th := a.platformThread(alice, nil)
	runs := "/threads/" + th + "/runs"
	start := func(e *env, text, strategy string) lgRun {
		t.Helper()
		var run lgRun
		e.call("POST", runs, alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": text},
			"multitask_strategy": strategy}, http.StatusOK, &run)
		return run
	}
	status := func(run lgRun) string {
		t.Helper()
		var got lgRun
		a.call("GET", runs+"/"+run.RunID, alice, nil, http.StatusOK, &got)
		return got.Status
	}

	first := start(a, "one", "reject")
	second := start(b, "two", "interrupt")
	assert.Equal(t, "interrupted", status(first), "B's interrupt cancelled the run A ran")
	assert.Equal(t, "running", status(second))

	third := start(a, "three", "rollback")
	a.fails("GET", runs+"/"+second.RunID, alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: server.CodeUnknownRun, Message: `unknown run "` + second.RunID + `" on thread "` + th + `"`})
	assert.Equal(t, "running", status(third))
	var state map[string]any
	b.call("GET", "/threads/"+th+"/state", alice, nil, http.StatusOK, &state)
	assert.Equal(t, map[string]any{"text": "three"}, state["values"], "the rolled back run's input is gone, the new run's in")
	b.call("POST", runs+"/"+third.RunID+"/cancel?wait=1", alice, nil, http.StatusNoContent, nil)
}

func TestAPlatformCommandResumesOnAnotherReplica(t *testing.T) {
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(askGraph(t, false))})
	a, b := rs.envs[0], rs.envs[1]
	th := a.platformThread(alice, nil)

	var out map[string]any
	a.call("POST", "/threads/"+th+"/runs/wait", alice, map[string]any{"assistant_id": "ask", "input": map[string]any{"text": "hi"}}, http.StatusOK, &out)
	ins := out["__interrupt__"].([]any)
	require.Len(t, ins, 1)
	id := ins[0].(map[string]any)["id"].(string)

	out = nil
	b.call("POST", "/threads/"+th+"/runs/wait", alice, map[string]any{"assistant_id": "ask",
		"command": map[string]any{"resume": map[string]any{id: map[string]any{"ok": true}}}}, http.StatusOK, &out)
	assert.Equal(t, []any{"draft ok=true", "after"}, out["log"], "B resumed the thread A interrupted")
	b.fails("POST", "/threads/"+th+"/runs/wait", alice, map[string]any{"assistant_id": "ask", "command": map[string]any{"resume": true}},
		http.StatusConflict, server.ErrorDetail{Code: server.CodeNotInterrupted, Message: `graph: thread "` + th + `" is not interrupted; nothing to resume: graph: not interrupted`})
}

func TestAPlatformStreamResumesOnAnotherReplicaAfterLastEventID(t *testing.T) {
	open := make(chan struct{})
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(gate(t, open))})
	a, b := rs.envs[0], rs.envs[1]
	th := a.platformThread(alice, nil)
	body := map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "hi"}, "stream_mode": []string{"values", "updates", "debug"}}

	onA := a.openStream("POST", "/threads/"+th+"/runs/stream", body)
	meta, ok := onA.next()
	require.True(t, ok)
	require.Equal(t, "metadata", meta.Event)
	var run struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(meta.Data), &run))
	seen, ok := onA.next() // the first of the run's events, before the gate
	require.True(t, ok)
	require.NotEmpty(t, seen.ID)

	onB := b.openStream("GET", "/threads/"+th+"/runs/"+run.RunID+"/stream", nil, "Last-Event-ID", seen.ID)
	close(open)
	rest := onB.rest()
	whole := b.openStream("GET", "/threads/"+th+"/runs/"+run.RunID+"/stream", nil).rest()

	resumed := append([]sse{meta, seen}, rest[1:]...) // rest[0] is B's metadata event
	assert.Equal(t, "metadata", rest[0].Event)
	assert.Equal(t, whole, resumed, "A's events up to Last-Event-ID and B's after it are the run's, each once")
	assert.Contains(t, valuesOf(whole), `{"text":"HI"}`)
}

func TestAPlatformRunWhoseReplicaDiedIsTakenOverWithItsRequest(t *testing.T) {
	open := make(chan struct{})
	close(open)
	// The live replica leaves a run another enqueued to it for its lease,
	// 2s: long enough for the dead one to claim it first on a loaded
	// machine.
	rs := newReplicaSet(t, 1, 2*time.Second, server.Config{Workflows: workflows(gate(t, open))})
	live := rs.envs[0]
	th := live.platformThread(alice, map[string]any{"metadata": map[string]any{"graph_id": "gate"}})
	// A replica that claims the run and dies at once: its lease of no
	// duration is never renewed.
	dead, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "dead", LeaseTTL: time.Microsecond, Schema: rs.schema})
	require.NoError(t, err)
	defer dead.Close()
	req := `{"platform":{"assistant_id":"gate","input":{"text":"hi"},"stream_mode":["values","updates"],"metadata":{"k":"v"},"multitask_strategy":"enqueue"}}`
	sr := server.SharedRun{ID: "run-1", Thread: th, Key: "alice/" + th, Owner: "alice", Workflow: "gate", Request: json.RawMessage(req), CreatedAt: time.Now()}
	require.NoError(t, dead.Enqueue(t.Context(), sr, runs.Refuse, runs.NoLimits))
	claim, err := dead.Claim(t.Context(), sr.ID, []string{sr.Workflow})
	require.NoError(t, err)
	require.NotNil(t, claim)

	evs := live.openStream("GET", "/threads/"+th+"/runs/run-1/stream", nil).rest()
	assert.Equal(t, []string{`{"text":"HI"}`}, valuesOf(evs), "the live replica ran the run in the modes its request asked for")
	assert.Contains(t, names(evs), "updates")
	var got lgRun
	live.call("GET", "/threads/"+th+"/runs/run-1", alice, nil, http.StatusOK, &got)
	assert.Equal(t, lgRun{RunID: "run-1", ThreadID: th, AssistantID: "gate", Status: "success", MultitaskStrategy: "enqueue",
		Metadata: map[string]any{"k": "v"}}, got)
}

// cronOf creates a cron as alice on e and returns it.
func (e *env) cronOf(body map[string]any) map[string]any {
	e.t.Helper()
	var c map[string]any
	e.call("POST", "/runs/crons", alice, body, http.StatusOK, &c)
	return c
}

// cronThreads counts alice's threads that cron id made.
func (e *env) cronThreads(id any) int {
	e.t.Helper()
	var made []map[string]any
	e.call("POST", "/threads/search", alice, map[string]any{"metadata": map[string]any{"cron_id": id}}, http.StatusOK, &made)
	return len(made)
}

func TestACronOfTwoReplicasFiresOncePerTick(t *testing.T) {
	open := make(chan struct{})
	close(open)
	pool := pgtest.Pool(t)
	st := storepg.New(pool, storepg.WithSchema(pgtest.Schema(t, pool, "coorflow_test_store_")))
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(gate(t, open)), Store: st, MaxCrons: 1})
	a, b := rs.envs[0], rs.envs[1]
	c := a.cronOf(map[string]any{"assistant_id": "gate", "schedule": "@yearly", "input": map[string]any{"text": "tick"}})
	var n int
	b.call("POST", "/runs/crons/count", alice, map[string]any{}, http.StatusOK, &n)
	assert.Equal(t, 1, n, "replica B sees the cron A created")
	b.fails("POST", "/runs/crons", alice, map[string]any{"assistant_id": "gate", "schedule": "@daily"}, http.StatusTooManyRequests,
		server.ErrorDetail{Code: "quota_exceeded", Message: `owner "alice" has 1 crons, the most allowed: delete one first`, Quota: "crons", Limit: 1})

	due, err := time.Parse(time.RFC3339, c["next_run_date"].(string))
	require.NoError(t, err)
	for tick := range 3 {
		// Both replicas find the cron due at the same tick.
		var wg sync.WaitGroup
		for _, e := range rs.envs {
			wg.Go(func() { server.FireCrons(e.srv, due) })
		}
		wg.Wait()
		assert.Equal(t, tick+1, a.cronThreads(c["cron_id"]), "tick %d started one run", tick)
		var list []map[string]any
		a.call("POST", "/runs/crons/search", alice, map[string]any{}, http.StatusOK, &list)
		require.Len(t, list, 1)
		next, err := time.Parse(time.RFC3339, list[0]["next_run_date"].(string))
		require.NoError(t, err)
		require.True(t, next.After(due), "the next run date moved on from %v to %v", due, next)
		due = next
	}
}

func TestACronOutlivesItsServer(t *testing.T) {
	dir := t.TempDir()
	serve := func() *env {
		ctx := t.Context()
		saver, err := sqlitesaver.Open(ctx, filepath.Join(dir, "threads.db"))
		require.NoError(t, err)
		st, err := storesqlite.Open(ctx, filepath.Join(dir, "store.db"))
		require.NoError(t, err)
		t.Cleanup(func() {
			assert.NoError(t, st.Close())
			assert.NoError(t, saver.Close())
		})
		return newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Saver: saver, Store: st})
	}
	first := serve()
	c := first.cronOf(map[string]any{"assistant_id": "echo", "schedule": "0 9 * * 1", "timezone": "Europe/Paris",
		"input": map[string]any{"text": "monday"}})
	require.NoError(t, first.srv.Shutdown(t.Context()))

	second := serve()
	var list []map[string]any
	second.call("POST", "/runs/crons/search", alice, map[string]any{}, http.StatusOK, &list)
	require.Len(t, list, 1, "the restarted server has the cron")
	assert.Equal(t, c["cron_id"], list[0]["cron_id"])
	assert.Equal(t, c["next_run_date"], list[0]["next_run_date"])
	due, err := time.Parse(time.RFC3339, c["next_run_date"].(string))
	require.NoError(t, err)
	assert.Equal(t, 9, due.In(must(time.LoadLocation("Europe/Paris"))).Hour())
	server.FireCrons(second.srv, due)
	assert.Equal(t, 1, second.cronThreads(c["cron_id"]), "and fires it")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestReplicasWithoutAStoreServeNoCrons(t *testing.T) {
	rs := newReplicaSet(t, 1, time.Minute, server.Config{Workflows: workflows(echoGraph(t))})
	rs.envs[0].fails("POST", "/runs/crons", alice, map[string]any{"assistant_id": "echo", "schedule": "@daily"}, http.StatusNotImplemented,
		server.ErrorDetail{Code: server.CodeNotServed, Message: "crons need a store shared by the replicas (Config.Store): this server has none"})
}

func TestACronPastItsEndTimeIsDeletedInsteadOfFired(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	end := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Second)
	c := e.cronOf(map[string]any{"assistant_id": "echo", "schedule": "@daily", "end_time": end, "input": map[string]any{"text": "x"}})
	server.FireCrons(e.srv, end)
	var n int
	e.call("POST", "/runs/crons/count", alice, map[string]any{}, http.StatusOK, &n)
	assert.Zero(t, n, "the cron is gone")
	assert.Zero(t, e.cronThreads(c["cron_id"]), "and started nothing")
}

func TestMCPRunsAreSharedByReplicas(t *testing.T) {
	open := make(chan struct{})
	tools := map[string]server.MCPTool{"ask": mcpTools["ask"], "gate": {Description: "Waits, then shouts.", Input: "text", Output: "text"}}
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(askGraph(t, false), gate(t, open)), MCPTools: tools})
	a, b := rs.envs[0], rs.envs[1]
	cs := a.mcpClient(alice, "", nil)

	// A question asked on A is answered through A; the runs are B's to see.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"text": "x", "thread_id": "m-1"}})
	require.NoError(t, err)
	assert.Equal(t, "interrupted", structured(t, res)["status"], callText(t, res))
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"thread_id": "m-1", "resume": map[string]any{"ok": true}}})
	require.NoError(t, err)
	assert.Equal(t, []any{"draft ok=true", "after"}, structured(t, res)["output"])
	var list server.RunList
	b.call("GET", "/v1/threads/m-1/runs", alice, nil, http.StatusOK, &list)
	require.Len(t, list.Runs, 2, "replica B lists the runs of the MCP calls on A")
	assert.Equal(t, []string{server.StatusDone, server.StatusInterrupted}, []string{list.Runs[0].Status, list.Runs[1].Status})

	// A thread B runs is busy for a call on A.
	b.thread(alice, "gate", "m-2")
	var run server.Run
	b.call("POST", "/v1/threads/m-2/runs", alice, map[string]any{"input": map[string]any{"text": "hi"}}, http.StatusAccepted, &run)
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "gate", Arguments: map[string]any{"text": "x", "thread_id": "m-2"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, `thread "m-2" already has run "`+run.ID+`" in progress: wait for it, cancel it, or enable queueing`, callText(t, res))
	close(open)
}

func TestAnotherOwnersThreadOfTheSameIDReachesNoSharedRun(t *testing.T) {
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(gate(t, make(chan struct{})))})
	a, b := rs.envs[0], rs.envs[1]
	a.call("POST", "/threads", alice, map[string]any{"thread_id": "same", "metadata": map[string]any{"graph_id": "gate"}}, http.StatusOK, nil)
	b.call("POST", "/threads", bob, map[string]any{"thread_id": "same", "metadata": map[string]any{"graph_id": "gate"}}, http.StatusOK, nil)
	var run lgRun
	a.call("POST", "/threads/same/runs", alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "alice's"}}, http.StatusOK, &run)
	runPath := "/threads/same/runs/" + run.RunID
	noRun := server.ErrorDetail{Code: server.CodeUnknownRun, Message: `unknown run "` + run.RunID + `" on thread "same"`}

	// Bob, on his own thread of the same id, names alice's run.
	for _, e := range rs.envs {
		e.fails("GET", runPath, bob, nil, http.StatusNotFound, noRun)
		e.fails("GET", runPath+"/join", bob, nil, http.StatusNotFound, noRun)
		e.fails("GET", runPath+"/stream", bob, nil, http.StatusNotFound, noRun)
		e.fails("POST", runPath+"/cancel?action=rollback", bob, nil, http.StatusNotFound, noRun)
		e.fails("DELETE", runPath, bob, nil, http.StatusNotFound, noRun)
		var list []lgRun
		e.call("GET", "/threads/same/runs", bob, nil, http.StatusOK, &list)
		assert.Empty(t, list, "bob's thread has none of alice's runs")
		var th map[string]any
		e.call("GET", "/threads/same", bob, nil, http.StatusOK, &th)
		assert.Equal(t, "idle", th["status"], "alice's run does not make bob's thread busy")
	}
	// Bob's preempting runs on his thread leave alice's alone.
	for _, strategy := range []string{"interrupt", "rollback"} {
		var mine lgRun
		b.call("POST", "/threads/same/runs", bob, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "bob's"},
			"multitask_strategy": strategy}, http.StatusOK, &mine)
		b.call("POST", "/threads/same/runs/"+mine.RunID+"/cancel?wait=1", bob, nil, http.StatusNoContent, nil)
	}
	var got lgRun
	b.call("GET", runPath, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "running", got.Status, "alice's run goes on")
	var state map[string]any
	b.call("GET", "/threads/same/state", alice, nil, http.StatusOK, &state)
	assert.Equal(t, map[string]any{"text": "alice's"}, state["values"])
	a.call("POST", runPath+"/cancel?wait=1", alice, nil, http.StatusNoContent, nil)
}

func TestADeletedThreadTakesItsSharedRunsAlong(t *testing.T) {
	open := make(chan struct{})
	close(open)
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(gate(t, open))})
	a, b := rs.envs[0], rs.envs[1]
	a.call("POST", "/threads", alice, map[string]any{"thread_id": "again", "metadata": map[string]any{"graph_id": "gate"}}, http.StatusOK, nil)
	var run lgRun
	a.call("POST", "/threads/again/runs/wait", alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "x"}}, http.StatusOK, nil)
	var list []lgRun
	a.call("GET", "/threads/again/runs", alice, nil, http.StatusOK, &list)
	require.Len(t, list, 1)
	run = list[0]

	b.call("DELETE", "/threads/again", alice, nil, http.StatusNoContent, nil)
	b.call("POST", "/threads", alice, map[string]any{"thread_id": "again", "metadata": map[string]any{"graph_id": "gate"}}, http.StatusOK, nil)
	for _, e := range rs.envs {
		e.call("GET", "/threads/again/runs", alice, nil, http.StatusOK, &list)
		assert.Empty(t, list, "the new thread of the same id has no run of the deleted one")
		e.fails("GET", "/threads/again/runs/"+run.RunID, alice, nil, http.StatusNotFound,
			server.ErrorDetail{Code: server.CodeUnknownRun, Message: `unknown run "` + run.RunID + `" on thread "again"`})
		var v1 server.RunList
		e.call("GET", "/v1/threads/again/runs", alice, nil, http.StatusOK, &v1)
		assert.Empty(t, v1.Runs)
	}
}

func TestAReplicaNotServingARunsWorkflowSaysSo(t *testing.T) {
	rs := newReplicaSet(t, 0, time.Minute, server.Config{})
	a := rs.add(t, time.Minute, server.Config{Workflows: workflows(echoGraph(t), gateNamed(t, "slow", make(chan struct{})))})
	b := rs.add(t, time.Minute, server.Config{Workflows: workflows(gate(t, make(chan struct{})))})
	notServed := func(run, workflow string) server.ErrorDetail {
		return server.ErrorDetail{Code: server.CodeUnknownWorkflow,
			Message: `run "` + run + `" belongs to workflow "` + workflow + `", which this server does not serve`}
	}

	// A ended run of a workflow B does not serve: B has no values for it.
	a.call("POST", "/threads", alice, map[string]any{"thread_id": "e", "metadata": map[string]any{"graph_id": "echo"}}, http.StatusOK, nil)
	var done lgRun
	a.call("POST", "/threads/e/runs", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "x"}}, http.StatusOK, &done)
	a.call("GET", "/threads/e/runs/"+done.RunID+"/join", alice, nil, http.StatusOK, nil)
	b.fails("GET", "/threads/e/runs/"+done.RunID+"/join", alice, nil, http.StatusNotFound, notServed(done.RunID, "echo"))
	b.fails("GET", "/v1/threads/e/runs/"+done.RunID, alice, nil, http.StatusNotFound, notServed(done.RunID, "echo"))
	b.fails("POST", "/v1/threads/e/runs/wait", alice, map[string]any{"input": map[string]any{"text": "y"}}, http.StatusNotFound,
		server.ErrorDetail{Code: server.CodeUnknownWorkflow, Message: `thread "e" belongs to workflow "echo", which this server does not serve`})

	// A run in progress: B refuses to roll it back, and cancels nothing.
	a.call("POST", "/threads", alice, map[string]any{"thread_id": "s", "metadata": map[string]any{"graph_id": "slow"}}, http.StatusOK, nil)
	var slow lgRun
	a.call("POST", "/threads/s/runs", alice, map[string]any{"assistant_id": "slow", "input": map[string]any{"text": "x"}}, http.StatusOK, &slow)
	b.fails("POST", "/threads/s/runs/"+slow.RunID+"/cancel?action=rollback", alice, nil, http.StatusNotFound, notServed(slow.RunID, "slow"))
	var got lgRun
	a.call("GET", "/threads/s/runs/"+slow.RunID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "running", got.Status, "the refused rollback cancelled nothing")
	a.call("POST", "/threads/s/runs/"+slow.RunID+"/cancel?wait=1", alice, nil, http.StatusNoContent, nil)
}

// cancelHook is a replica's Replicas that calls before(id) as a cancel of
// run id is asked for, before it lands.
type cancelHook struct {
	*replicas.Replicas
	before func(id string)
}

func (h *cancelHook) Cancel(ctx context.Context, id string) (bool, error) {
	h.before(id)
	return h.Replicas.Cancel(ctx, id)
}

// awaitEnd waits until run id has ended, on the replicas' events.
func awaitEnd(t *testing.T, reps *replicas.Replicas, id string) server.SharedRun {
	t.Helper()
	for {
		changed := reps.Changed(id)
		sr, err := reps.Run(t.Context(), id)
		require.NoError(t, err)
		if sr.Status != server.StatusQueued && sr.Status != server.StatusRunning {
			return sr
		}
		<-changed
	}
}

func TestARollbackStrategyKeepsARunThatEndedBeforeItsCancel(t *testing.T) {
	open := make(chan struct{})
	rs := newReplicaSet(t, 0, time.Minute, server.Config{})
	reps, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "r0", LeaseTTL: time.Minute, Schema: rs.schema})
	require.NoError(t, err)
	require.NoError(t, reps.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, reps.Close()) })
	var first string
	hook := &cancelHook{Replicas: reps, before: func(id string) {
		if id == first {
			close(open) // the run ends on its own just before the cancel lands
			awaitEnd(t, reps, id)
		}
	}}
	e := newEnv(t, server.Config{Workflows: workflows(gate(t, open)), Saver: rs.saver, Replicas: hook, LeaseTTL: time.Minute})
	th := e.platformThread(alice, map[string]any{"metadata": map[string]any{"graph_id": "gate"}})
	runs := "/threads/" + th + "/runs"

	var run lgRun
	e.call("POST", runs, alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "one"}}, http.StatusOK, &run)
	first = run.RunID
	var out map[string]any
	e.call("POST", runs+"/wait", alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "two"},
		"multitask_strategy": "rollback"}, http.StatusOK, &out)
	assert.Equal(t, map[string]any{"text": "TWO"}, out)

	var got lgRun
	e.call("GET", runs+"/"+first, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "success", got.Status, "a run that had ended is not the rollback's to undo")
	var history []map[string]any
	e.call("POST", "/threads/"+th+"/history", alice, map[string]any{"limit": 100}, http.StatusOK, &history)
	var texts []any
	for _, h := range history {
		texts = append(texts, h["values"].(map[string]any)["text"])
	}
	assert.Contains(t, texts, "ONE", "its values stay in the thread's history")
}

// runHook is a replica's Replicas whose second read of run id (set with
// hold) tells reached and waits for release: the first is the request's
// lookup of the run, the second its wait.
type runHook struct {
	*replicas.Replicas
	id               atomic.Pointer[string]
	calls            atomic.Int32
	reached, release chan struct{}
}

func (h *runHook) hold(id string) { h.id.Store(&id) }

func (h *runHook) Run(ctx context.Context, id string) (server.SharedRun, error) {
	if p := h.id.Load(); p != nil && *p == id && h.calls.Add(1) == 2 {
		close(h.reached)
		<-h.release
	}
	return h.Replicas.Run(ctx, id)
}

func TestAJoinOfARunRolledBackMeanwhileAnswersUnknownRun(t *testing.T) {
	rs := newReplicaSet(t, 1, time.Minute, server.Config{Workflows: workflows(gate(t, make(chan struct{})))})
	a := rs.envs[0]
	reps, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "r1", LeaseTTL: time.Minute, Schema: rs.schema})
	require.NoError(t, err)
	require.NoError(t, reps.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, reps.Close()) })
	hook := &runHook{Replicas: reps, reached: make(chan struct{}), release: make(chan struct{})}
	b := newEnv(t, server.Config{Workflows: workflows(gate(t, make(chan struct{}))), Saver: rs.saver, Replicas: hook, LeaseTTL: time.Minute})
	th := a.platformThread(alice, map[string]any{"metadata": map[string]any{"graph_id": "gate"}})
	runs := "/threads/" + th + "/runs"
	var run lgRun
	a.call("POST", runs, alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "x"}}, http.StatusOK, &run)
	hook.hold(run.RunID)

	// Once B has found the run and waits for its end, A rolls it back.
	rolledBack := make(chan int, 1)
	go func() {
		defer close(hook.release)
		<-hook.reached
		req, err := http.NewRequestWithContext(t.Context(), "POST", a.hs.URL+runs+"/"+run.RunID+"/cancel?action=rollback", nil)
		if err != nil {
			rolledBack <- 0
			return
		}
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := a.client.Do(req)
		if err != nil {
			rolledBack <- 0
			return
		}
		resp.Body.Close()
		rolledBack <- resp.StatusCode
	}()
	b.fails("GET", runs+"/"+run.RunID+"/join", alice, nil, http.StatusNotFound, server.ErrorDetail{Code: server.CodeUnknownRun,
		Message: `unknown run "` + run.RunID + `" on thread "` + th + `": it was deleted while awaited (a rollback deletes its run)`})
	assert.Equal(t, http.StatusNoContent, <-rolledBack)
}

// claimHook is a replica's Replicas that counts the claim loop's claims
// that have returned.
type claimHook struct {
	*replicas.Replicas
	mu      sync.Mutex
	claims  int
	claimed chan struct{} // closed and replaced at each claim
}

func (h *claimHook) Claim(ctx context.Context, id string, workflows []string) (*server.Claim, error) {
	c, err := h.Replicas.Claim(ctx, id, workflows)
	if id == "" {
		h.mu.Lock()
		h.claims++
		close(h.claimed)
		h.claimed = make(chan struct{})
		h.mu.Unlock()
	}
	return c, err
}

// next returns the number of claims so far and a channel closed at the
// next.
func (h *claimHook) next() (int, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.claims, h.claimed
}

func TestARunIsLeftToTheReplicasServingItsWorkflow(t *testing.T) {
	rs := newReplicaSet(t, 0, time.Minute, server.Config{})
	a := rs.add(t, time.Minute, server.Config{Workflows: workflows(echoGraph(t), gate(t, make(chan struct{}))), ReplicaRuns: 1})
	reps, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "r1", LeaseTTL: time.Minute, Schema: rs.schema})
	require.NoError(t, err)
	require.NoError(t, reps.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, reps.Close()) })
	hook := &claimHook{Replicas: reps, claimed: make(chan struct{})}
	newEnv(t, server.Config{Workflows: workflows(gate(t, make(chan struct{}))), Saver: rs.saver, Replicas: hook, LeaseTTL: time.Minute})

	// A is full: its one run waits at the gate.
	a.call("POST", "/threads", alice, map[string]any{"thread_id": "g", "metadata": map[string]any{"graph_id": "gate"}}, http.StatusOK, nil)
	var slow lgRun
	a.call("POST", "/threads/g/runs", alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "x"}}, http.StatusOK, &slow)
	// So A offers its echo run to any replica; B, which serves no echo,
	// looks at it and leaves it.
	a.call("POST", "/threads", alice, map[string]any{"thread_id": "e", "metadata": map[string]any{"graph_id": "echo"}}, http.StatusOK, nil)
	before, _ := hook.next()
	var run lgRun
	a.call("POST", "/threads/e/runs", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "hi"}}, http.StatusOK, &run)
	assert.Equal(t, "pending", run.Status)
	for n, claimed := hook.next(); n == before; n, claimed = hook.next() {
		<-claimed // B's claim after the offer
	}
	var got lgRun
	a.call("GET", "/threads/e/runs/"+run.RunID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "pending", got.Status, "B did not take a run of a workflow it does not serve")

	a.call("POST", "/threads/g/runs/"+slow.RunID+"/cancel?wait=1", alice, nil, http.StatusNoContent, nil)
	var out map[string]any
	a.call("GET", "/threads/e/runs/"+run.RunID+"/join", alice, nil, http.StatusOK, &out)
	assert.Equal(t, "HI", out["text"], "A ran it once it had room")
}

func TestACancelOfARunWhoseReplicaIsGoneSaysItDidNotStop(t *testing.T) {
	rs := newReplicaSet(t, 1, time.Minute, server.Config{Workflows: workflows(gate(t, make(chan struct{})))})
	live := rs.envs[0]
	th := live.platformThread(alice, map[string]any{"metadata": map[string]any{"graph_id": "gate"}})
	// A replica that claims the run and is gone: its lease holds for a
	// minute, and nothing notices the cancel meanwhile.
	gone, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "gone", LeaseTTL: time.Minute, Schema: rs.schema})
	require.NoError(t, err)
	defer gone.Close()
	sr := server.SharedRun{ID: "run-1", Thread: th, Key: "alice/" + th, Owner: "alice", Workflow: "gate",
		Request: json.RawMessage(`{"platform":{"assistant_id":"gate","input":{"text":"hi"}}}`), CreatedAt: time.Now()}
	require.NoError(t, gone.Enqueue(t.Context(), sr, runs.Refuse, runs.NoLimits))
	claim, err := gone.Claim(t.Context(), sr.ID, []string{"gate"})
	require.NoError(t, err)
	require.NotNil(t, claim)

	live.fails("POST", "/threads/"+th+"/runs/run-1/cancel?wait=1", alice, nil, http.StatusConflict,
		server.ErrorDetail{Code: server.CodeThreadBusy, Message: `run "run-1" did not stop within 10s of its cancellation`})
}

func TestAnOwnerWhoseBudgetIsSpentStartsNoSharedRun(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Response{Text: "draft", Usage: usage(1000, 0, 200)})
	t.Cleanup(srv.Close)
	tools := map[string]server.MCPTool{"costly": {Description: "Drafts.", Input: "text", Output: "text"}}
	rs := newReplicaSet(t, 1, time.Minute, server.Config{Workflows: workflows(costlyGraph(t, srv)), Recorder: recorder(t),
		OwnerBudgets: map[string]llm.Budget{"alice": {Tokens: 1000}}, MCPTools: tools})
	e := rs.envs[0]
	th := e.platformThread(alice, map[string]any{"metadata": map[string]any{"graph_id": "costly"}})
	var out map[string]any
	e.call("POST", "/threads/"+th+"/runs/wait", alice, map[string]any{"assistant_id": "costly", "input": map[string]any{"text": "x"}}, http.StatusOK, &out)
	require.Equal(t, server.CodeBudgetExceeded, out["__error__"].(map[string]any)["error"], "the first run spent the budget")

	spent := `owner "alice" has spent its budget of 1000 tokens (1200 tokens, $0.0003): ask the operator to raise it`
	e.fails("POST", "/threads/"+th+"/runs/wait", alice, map[string]any{"assistant_id": "costly", "input": map[string]any{"text": "y"}},
		http.StatusPaymentRequired, server.ErrorDetail{Code: server.CodeBudgetExceeded, Message: spent})
	e.thread(alice, "costly", "v1")
	e.fails("POST", "/v1/threads/v1/runs", alice, map[string]any{"input": map[string]any{"text": "y"}},
		http.StatusPaymentRequired, server.ErrorDetail{Code: server.CodeBudgetExceeded, Message: spent})
	res, err := e.mcpClient(alice, "", nil).CallTool(t.Context(), &mcp.CallToolParams{Name: "costly", Arguments: map[string]any{"text": "z"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, spent, callText(t, res))
	assert.Len(t, srv.Requests(), 1, "no model was called for a refused run")
}

func TestSharedRunsBeyondRetainRunsArePrunedWithTheirEvents(t *testing.T) {
	rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(echoGraph(t), gate(t, make(chan struct{}))), RetainRuns: 2})
	a, b := rs.envs[0], rs.envs[1]
	a.thread(alice, "gate", "g")
	var open server.Run
	a.call("POST", "/v1/threads/g/runs", alice, map[string]any{"input": map[string]any{"text": "x"}}, http.StatusAccepted, &open)
	a.thread(alice, "echo", "e")
	var ended []string
	for _, text := range []string{"one", "two", "three"} {
		ended = append(ended, a.wait(alice, "e", map[string]any{"input": map[string]any{"text": text}}).ID)
	}
	countEvents := func(run string) (n int) {
		require.NoError(t, rs.pool.QueryRow(t.Context(), `SELECT count(*) FROM `+rs.schema+`.event_frames WHERE stream = $1`, run).Scan(&n))
		return n
	}
	require.NotZero(t, countEvents(ended[0]))

	server.PruneRuns(b.srv)
	b.fails("GET", "/v1/threads/e/runs/"+ended[0], alice, nil, http.StatusNotFound,
		server.ErrorDetail{Code: server.CodeUnknownRun, Message: `unknown run "` + ended[0] + `" on thread "e"`})
	assert.Zero(t, countEvents(ended[0]), "the pruned run's events went with it")
	var list server.RunList
	b.call("GET", "/v1/threads/e/runs", alice, nil, http.StatusOK, &list)
	var kept []string
	for _, ru := range list.Runs {
		kept = append(kept, ru.ID)
	}
	assert.Equal(t, []string{ended[2], ended[1]}, kept, "the newest RetainRuns ended runs stay")
	var got server.Run
	b.call("GET", "/v1/threads/g/runs/"+open.ID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, server.StatusRunning, got.Status, "a run in progress is never pruned")
}

// heldRuns is a replica's Replicas whose reads of a run, once held, wait
// for release.
type heldRuns struct {
	*replicas.Replicas
	held    atomic.Bool
	release chan struct{}
}

func (h *heldRuns) Run(ctx context.Context, id string) (server.SharedRun, error) {
	if h.held.Load() {
		<-h.release
	}
	return h.Replicas.Run(ctx, id)
}

func TestAStreamOfASharedRunDeletedMeanwhileEndsSayingSo(t *testing.T) {
	deleted := func(th, run string) string {
		return `run "` + run + `" on thread "` + th + `" was deleted before it was seen to end (a rollback deletes its run)`
	}
	for _, tc := range []struct {
		name, path string
		check      func(t *testing.T, th, run string, last sse)
	}{
		{"v1", "/v1/threads/%s/runs/%s/stream", func(t *testing.T, th, run string, last sse) {
			require.Equal(t, "end", last.Event)
			var v server.Run
			require.NoError(t, json.Unmarshal([]byte(last.Data), &v))
			assert.Equal(t, run, v.ID)
			assert.Equal(t, server.StatusError, v.Status)
			assert.Equal(t, &server.ErrorDetail{Code: server.CodeUnknownRun, Message: deleted(th, run)}, v.Error)
		}},
		{"platform", "/threads/%s/runs/%s/stream", func(t *testing.T, th, run string, last sse) {
			want, _ := json.Marshal(map[string]string{"error": server.CodeUnknownRun, "message": deleted(th, run)})
			assert.Equal(t, sse{Event: "error", Data: string(want)}, sse{Event: last.Event, Data: last.Data})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newReplicaSet(t, 1, time.Minute, server.Config{Workflows: workflows(gate(t, make(chan struct{})))})
			a := rs.envs[0]
			reps, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "r1", LeaseTTL: time.Minute, Schema: rs.schema})
			require.NoError(t, err)
			require.NoError(t, reps.Start(t.Context()))
			t.Cleanup(func() { assert.NoError(t, reps.Close()) })
			hook := &heldRuns{Replicas: reps, release: make(chan struct{})}
			b := newEnv(t, server.Config{Workflows: workflows(gate(t, make(chan struct{}))), Saver: rs.saver, Replicas: hook, LeaseTTL: time.Minute})
			th := a.platformThread(alice, map[string]any{"metadata": map[string]any{"graph_id": "gate"}})
			var run lgRun
			a.call("POST", "/threads/"+th+"/runs", alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "x"}}, http.StatusOK, &run)

			// B streams the run; A rolls it back before B reads it again.
			stream := b.openStream("GET", fmt.Sprintf(tc.path, th, run.RunID), nil)
			_, ok := stream.next()
			require.True(t, ok, "the stream has begun")
			hook.held.Store(true)
			a.call("POST", "/threads/"+th+"/runs/"+run.RunID+"/cancel?action=rollback", alice, nil, http.StatusNoContent, nil)
			close(hook.release)

			rest := stream.rest()
			require.NotEmpty(t, rest, "the stream ends with an event")
			tc.check(t, th, run.RunID, rest[len(rest)-1])
		})
	}
}
