package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// dying is the Replicas of a replica that can be made to die as a
// killed process does: after die, it reaches the database no more — its
// leases expire, its runs are taken over, nothing it awaits ever ends —
// though its goroutines go on until its Shutdown.
type dying struct {
	server.Replicas
	dead atomic.Bool
}

var errDead = errors.New("test: the replica died")

func (d *dying) die() { d.dead.Store(true) }

func (d *dying) err() error {
	if d.dead.Load() {
		return errDead
	}
	return nil
}

func (d *dying) Enqueue(ctx context.Context, r server.SharedRun, busy runs.Busy, l runs.Limits) error {
	if err := d.err(); err != nil {
		return err
	}
	return d.Replicas.Enqueue(ctx, r, busy, l)
}

func (d *dying) Offer(ctx context.Context, id string) error {
	if err := d.err(); err != nil {
		return err
	}
	return d.Replicas.Offer(ctx, id)
}

func (d *dying) Claim(ctx context.Context, id string, wfs []string) (*server.Claim, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Replicas.Claim(ctx, id, wfs)
}

func (d *dying) Renew(ctx context.Context, c *server.Claim) (bool, error) {
	if err := d.err(); err != nil {
		return false, err
	}
	return d.Replicas.Renew(ctx, c)
}

func (d *dying) Publish(ctx context.Context, c *server.Claim, ev server.SharedEvent) error {
	if err := d.err(); err != nil {
		return err
	}
	return d.Replicas.Publish(ctx, c, ev)
}

func (d *dying) Finish(ctx context.Context, c *server.Claim, r server.SharedRun) error {
	if err := d.err(); err != nil {
		return err
	}
	return d.Replicas.Finish(ctx, c, r)
}

func (d *dying) Release(ctx context.Context, c *server.Claim) error {
	if err := d.err(); err != nil {
		return err
	}
	return d.Replicas.Release(ctx, c)
}

func (d *dying) Run(ctx context.Context, id string) (server.SharedRun, error) {
	if err := d.err(); err != nil {
		return server.SharedRun{}, err
	}
	return d.Replicas.Run(ctx, id)
}

func (d *dying) Runs(ctx context.Context, key string) ([]server.SharedRun, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Replicas.Runs(ctx, key)
}

func (d *dying) Activity(ctx context.Context, key string) ([]server.SharedRun, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Replicas.Activity(ctx, key)
}

func (d *dying) Events(ctx context.Context, id string, after int64, limit int) ([]server.SharedEvent, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Replicas.Events(ctx, id, after, limit)
}

func (d *dying) Cancel(ctx context.Context, id string) (bool, error) {
	if err := d.err(); err != nil {
		return false, err
	}
	return d.Replicas.Cancel(ctx, id)
}

func (d *dying) Delete(ctx context.Context, id string) (bool, error) {
	if err := d.err(); err != nil {
		return false, err
	}
	return d.Replicas.Delete(ctx, id)
}

func (d *dying) Prune(ctx context.Context, keep, limit int) (int, error) {
	if err := d.err(); err != nil {
		return 0, err
	}
	return d.Replicas.Prune(ctx, keep, limit)
}

func (d *dying) NextDue(ctx context.Context, wfs []string) (time.Duration, bool, error) {
	if err := d.err(); err != nil {
		return 0, false, err
	}
	return d.Replicas.NextDue(ctx, wfs)
}

func (d *dying) NoticeDue(ctx context.Context, id string) (bool, error) {
	if err := d.err(); err != nil {
		return false, err
	}
	return d.Replicas.NoticeDue(ctx, id)
}

func (d *dying) ClaimNotice(ctx context.Context, id string, wfs []string) (server.SharedRun, bool, error) {
	if err := d.err(); err != nil {
		return server.SharedRun{}, false, err
	}
	return d.Replicas.ClaimNotice(ctx, id, wfs)
}

func (d *dying) NoticeSent(ctx context.Context, id string) error {
	if err := d.err(); err != nil {
		return err
	}
	return d.Replicas.NoticeSent(ctx, id)
}

// Changed announces nothing once the replica died.
func (d *dying) Changed(key string) <-chan struct{} {
	if d.dead.Load() {
		return nil
	}
	return d.Replicas.Changed(key)
}

// addDying starts one more replica, r<n>, whose Replicas can die; its
// Saver is cfg's when set (one over the set's).
func (rs *replicaSet) addDying(t *testing.T, ttl time.Duration, cfg server.Config) (*env, *dying) {
	t.Helper()
	reps, err := replicas.New(rs.pool, replicas.Config{Saver: rs.saver, Name: "r" + strconv.Itoa(len(rs.envs)), LeaseTTL: ttl, Schema: rs.schema})
	require.NoError(t, err)
	require.NoError(t, reps.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, reps.Close()) })
	d := &dying{Replicas: reps}
	if cfg.Saver == nil {
		cfg.Saver = rs.saver
	}
	cfg.Replicas, cfg.LeaseTTL = d, ttl
	e := newEnv(t, cfg)
	rs.envs = append(rs.envs, e)
	return e, d
}

// posts is a receiver of notices: the body of each POST, in order.
type posts struct {
	url string
	got chan []byte
	mu  sync.Mutex
	all []string
}

func newPosts(t *testing.T, capacity int) *posts {
	t.Helper()
	p := &posts{got: make(chan []byte, capacity)}
	p.url = httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		var body json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		p.all = append(p.all, string(body))
		p.mu.Unlock()
		p.got <- body
	})
	return p
}

// bodies are the bodies of the POSTs so far.
func (p *posts) bodies() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.all
}

// next waits for the next POST.
func (p *posts) next(t *testing.T) []byte {
	t.Helper()
	select {
	case b := <-p.got:
		return b
	case <-t.Context().Done():
		t.Fatal("no notice was posted")
		return nil
	}
}

// shutdownAll stops every replica of es: each has ended its runs, and
// delivered or given up each notice it claimed, when it returns.
func shutdownAll(t *testing.T, es []*env) {
	t.Helper()
	for _, e := range es {
		require.NoError(t, e.srv.Shutdown(t.Context()))
	}
}

// stops are the ways r0 stops in the takeover tests: killed (its
// Replicas die), or shut down (Shutdown releases its runs).
var stops = []struct {
	name string
	stop func(t *testing.T, e *env, d *dying)
}{
	{"killed", func(_ *testing.T, _ *env, d *dying) { d.die() }},
	{"shut down", func(t *testing.T, e *env, _ *dying) { require.NoError(t, e.srv.Shutdown(t.Context())) }},
}

// killedReplicaSet is three replicas on one PostgreSQL: r0, which can
// die, then r1 and r2. Their leases are short (2s, as the other
// takeover tests'), so that r0's run is taken over soon after it died.
func killedReplicaSet(t *testing.T, cfg server.Config) ([]*env, *dying) {
	t.Helper()
	const ttl = 2 * time.Second
	rs := newReplicaSet(t, 0, ttl, cfg)
	r0, d := rs.addDying(t, ttl, cfg)
	rs.add(t, ttl, cfg)
	rs.add(t, ttl, cfg)
	require.Equal(t, r0, rs.envs[0])
	return rs.envs, d
}

// TestA2APushOfATaskWhoseReplicaDiedIsSentByTheReplicaThatFinishedIt: a
// message with a push notification config is sent to r0, which runs
// the task's run and dies in its node (killed, or shut down); r1 or r2 takes the run over and
// finishes it, and sends the push notification, once, with the task
// completed, which any replica shows.
func TestA2APushOfATaskWhoseReplicaDiedIsSentByTheReplicaThatFinishedIt(t *testing.T) {
	for _, stop := range stops {
		t.Run(stop.name, func(t *testing.T) { testA2APushAfterTakeover(t, stop.stop) })
	}
}

func testA2APushAfterTakeover(t *testing.T, stop func(*testing.T, *env, *dying)) {
	hook := newPosts(t, 4)
	h := newHoldFlow(t, 4)
	es, r0 := killedReplicaSet(t, server.Config{Workflows: workflows(h.r), WebhookAllow: []string{hook.url + "/hooks"},
		MCPTools: map[string]server.MCPTool{"hold": {Input: "text", Output: "text"}}})

	var sent a2a.SendMessageResponse
	require.Nil(t, es[0].a2aCall("/a2a/hold", "SendMessage", a2a.SendMessageRequest{Message: a2a.UserText("x"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true,
			TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: hook.url + "/hooks/a2a", Token: "tok"}}}, &sent))
	require.NotNil(t, sent.Task)
	h.waitEntered(t, 1)
	assert.Equal(t, "r0", replicaOf(t, es[1], *sent.Task), "r0 runs the task's run")
	stop(t, es[0], r0)
	h.waitEntered(t, 1) // another replica took the run over
	h.open()
	// The run's end, followed on r1.
	es[1].stream("GET", fmt.Sprintf("/v1/threads/%s/runs/%s/stream", sent.Task.Metadata["thread_id"], sent.Task.Metadata["run_id"]), alice, nil)
	assert.NotEqual(t, "r0", replicaOf(t, es[2], *sent.Task), "the run was finished by the replica that took it over")
	for _, e := range es[1:] {
		got := e.a2aTask(sent.Task.ID)
		assert.Equal(t, a2a.StateCompleted, got.Status.State)
	}
	shutdownAll(t, es) // every notice claimed has been posted

	require.Len(t, hook.bodies(), 1, "the task's push notification was posted once")
	var ev a2a.StreamResponse
	require.NoError(t, json.Unmarshal([]byte(hook.bodies()[0]), &ev))
	require.NotNil(t, ev.Task)
	assert.Equal(t, sent.Task.ID, ev.Task.ID)
	assert.Equal(t, a2a.StateCompleted, ev.Task.Status.State)
	require.Len(t, ev.Task.Artifacts, 1)
	assert.Equal(t, "held", *ev.Task.Artifacts[0].Parts[0].Text)
}

// TestPlatformWebhookOfARunWhoseReplicaDiedIsCalledOnceByTheReplicaThatFinishedIt:
// a Platform run with a webhook is started on r0, which dies in its
// node (killed, or shut down); the replica that takes it over and finishes it calls the
// webhook, once, with the run's success and values.
func TestPlatformWebhookOfARunWhoseReplicaDiedIsCalledOnceByTheReplicaThatFinishedIt(t *testing.T) {
	for _, stop := range stops {
		t.Run(stop.name, func(t *testing.T) { testWebhookAfterTakeover(t, stop.stop) })
	}
}

func testWebhookAfterTakeover(t *testing.T, stop func(*testing.T, *env, *dying)) {
	hook := newPosts(t, 4)
	h := newHoldFlow(t, 4)
	es, r0 := killedReplicaSet(t, server.Config{Workflows: workflows(h.r), WebhookAllow: []string{hook.url + "/hooks"}})
	th := es[0].platformThread(alice, nil)
	var run lgRun
	es[0].call("POST", "/threads/"+th+"/runs", alice, map[string]any{"assistant_id": "hold", "input": map[string]any{"text": "x"},
		"webhook": hook.url + "/hooks/run"}, http.StatusOK, &run)
	h.waitEntered(t, 1)
	var ru server.Run
	es[1].call("GET", "/v1/threads/"+th+"/runs/"+run.RunID, alice, nil, http.StatusOK, &ru)
	assert.Equal(t, "r0", ru.Replica, "r0 runs it")
	stop(t, es[0], r0)
	h.waitEntered(t, 1) // another replica took the run over
	h.open()
	es[1].stream("GET", "/v1/threads/"+th+"/runs/"+run.RunID+"/stream", alice, nil) // to its end
	es[2].call("GET", "/v1/threads/"+th+"/runs/"+run.RunID, alice, nil, http.StatusOK, &ru)
	assert.NotEqual(t, "r0", ru.Replica, "the run was finished by the replica that took it over")
	assert.Equal(t, 1, ru.Takeovers)
	shutdownAll(t, es) // every notice claimed has been posted

	require.Len(t, hook.bodies(), 1, "the webhook was called once")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(hook.bodies()[0]), &got))
	assert.Equal(t, run.RunID, got["run_id"])
	assert.Equal(t, "success", got["status"])
	assert.Equal(t, map[string]any{"text": "held"}, got["values"])
}

// TestNoticesOf100ParallelRunsAcrossThreeReplicasArePostedOnceEach: 100
// A2A messages with a push notification config and 100 Platform runs
// with a webhook, sent at once through three replicas, get one POST
// each.
func TestNoticesOf100ParallelRunsAcrossThreeReplicasArePostedOnceEach(t *testing.T) {
	const n = 100
	hook := newPosts(t, 2*n)
	es := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools,
		WebhookAllow: []string{hook.url + "/hooks"}, MaxActiveRuns: 2 * n}).envs
	threads := make([]string, n)
	for i := range threads {
		threads[i] = es[i%3].platformThread(alice, nil)
	}
	tasks := make([]string, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		e := es[i%len(es)]
		wg.Go(func() {
			<-start
			// Half return at once, half when the run ended.
			_, res := e.rpc("/a2a/echo", alice, map[string]any{"method": "SendMessage", "params": a2a.SendMessageRequest{
				Message: a2a.UserText(fmt.Sprint("m", i)), Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: i%2 == 0,
					TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: hook.url + "/hooks/a2a"}}}})
			var out a2a.SendMessageResponse
			if assert.Nil(t, res.Error) && assert.NoError(t, json.Unmarshal(res.Result, &out)) && assert.NotNil(t, out.Task) {
				tasks[i] = out.Task.ID
			}
		})
		wg.Go(func() {
			<-start
			resp := e.request("POST", "/threads/"+threads[i]+"/runs", alice, map[string]any{"assistant_id": "echo",
				"input": map[string]any{"text": "x"}, "webhook": hook.url + "/hooks/run"})
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow() // a refused run has no notice to wait for
	}
	for range 2 * n {
		hook.next(t)
	}
	shutdownAll(t, es)

	perTask, perThread := map[string]int{}, map[string]int{}
	for _, body := range hook.bodies() {
		var ev struct {
			Task     *a2a.Task `json:"task"`
			ThreadID string    `json:"thread_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &ev))
		if ev.Task != nil {
			assert.Equal(t, a2a.StateCompleted, ev.Task.Status.State)
			perTask[ev.Task.ID]++
		} else {
			perThread[ev.ThreadID]++
		}
	}
	for _, id := range tasks {
		assert.Equal(t, 1, perTask[id], "POSTs of task %s", id)
	}
	for _, th := range threads {
		assert.Equal(t, 1, perThread[th], "POSTs of the run on thread %s", th)
	}
	assert.Len(t, hook.bodies(), 2*n, "POSTs in all")
	t.Logf("%d A2A tasks and %d Platform runs sent at once through 3 replicas: %d POSTs", n, n, len(hook.bodies()))
}

// TestA2APushWhoseSenderDiedMidPostIsSentAgainByAnotherReplica: the
// replica that finished a task's run dies while it posts the push
// notification; once its claim of the notice expired, another replica
// posts it again: delivery is at least once.
func TestA2APushWhoseSenderDiedMidPostIsSentAgainByAnotherReplica(t *testing.T) {
	posted := make(chan a2a.StreamResponse, 4)
	inFirst, endFirst := make(chan struct{}), make(chan struct{})
	var hits atomic.Int64
	url := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		var ev a2a.StreamResponse
		_ = json.NewDecoder(r.Body).Decode(&ev)
		if hits.Add(1) == 1 {
			close(inFirst)
			<-endFirst
		}
		posted <- ev
	})
	es, r0 := killedReplicaSet(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, WebhookAllow: []string{url + "/hooks"}})
	var sent a2a.SendMessageResponse
	require.Nil(t, es[0].a2aCall("/a2a/echo", "SendMessage", a2a.SendMessageRequest{Message: a2a.UserText("hi"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true,
			TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: url + "/hooks/a2a"}}}, &sent))
	require.NotNil(t, sent.Task)
	<-inFirst
	assert.Equal(t, "r0", replicaOf(t, es[1], *sent.Task), "r0 ran the task's run, and posts its notice")
	r0.die()
	close(endFirst)
	for range 2 {
		ev := <-posted
		require.NotNil(t, ev.Task)
		assert.Equal(t, sent.Task.ID, ev.Task.ID)
		assert.Equal(t, a2a.StateCompleted, ev.Task.Status.State)
	}
	shutdownAll(t, es)
	assert.Equal(t, int64(2), hits.Load(), "posted by r0, which died before it recorded it sent, and once again by another replica")
}

// heldTaskRecord is a Saver that holds the first A2A task record stored
// through it until release is closed, having sent it on saving.
type heldTaskRecord struct {
	graph.Saver
	held    atomic.Bool
	saving  chan graph.CheckpointRecord
	release chan struct{}
}

func (h *heldTaskRecord) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if cp.NS == "#coorflow-a2a" && h.held.CompareAndSwap(false, true) {
		h.saving <- cp
		<-h.release
	}
	return h.Saver.PutCheckpoint(ctx, cp, blobs)
}

// TestA2APushOfARunThatEndedBeforeItsTaskWasRecorded: a task's run that
// ends before the replica that took the message stored the task's record
// (which lists the run and its push config) has its notice posted once,
// by that replica once it stored it: the run's end and the record meet
// whichever comes second. On one server and among three replicas.
func TestA2APushOfARunThatEndedBeforeItsTaskWasRecorded(t *testing.T) {
	for _, replicated := range []bool{false, true} {
		t.Run(map[bool]string{false: "one server", true: "three replicas"}[replicated], func(t *testing.T) {
			hook := newPosts(t, 4)
			cfg := server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, WebhookAllow: []string{hook.url + "/hooks"}}
			saver := &heldTaskRecord{saving: make(chan graph.CheckpointRecord, 1), release: make(chan struct{})}
			var es []*env
			if replicated {
				rs := newReplicaSet(t, 0, time.Minute, cfg)
				saver.Saver = rs.saver
				held := cfg
				held.Saver = saver
				rs.addDying(t, time.Minute, held)
				rs.add(t, time.Minute, cfg)
				rs.add(t, time.Minute, cfg)
				es = rs.envs
			} else {
				saver.Saver = memory.New()
				cfg.Saver = saver
				es = []*env{newEnv(t, cfg)}
			}
			sent := make(chan a2a.SendMessageResponse, 1)
			go func() {
				var out a2a.SendMessageResponse
				assert.Nil(t, es[0].a2aCall("/a2a/echo", "SendMessage", a2a.SendMessageRequest{Message: a2a.UserText("hi"),
					Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true,
						TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: hook.url + "/hooks/a2a"}}}, &out))
				sent <- out
			}()
			var rec struct {
				Context string   `json:"context"`
				Runs    []string `json:"runs"`
			}
			require.NoError(t, json.Unmarshal((<-saver.saving).Meta, &rec))
			require.Len(t, rec.Runs, 1)
			// The run ends, followed on the last replica, before its
			// task's record is stored.
			last := es[len(es)-1]
			evs := last.stream("GET", "/v1/threads/"+rec.Context+"/runs/"+rec.Runs[0]+"/stream", alice, nil)
			require.NotEmpty(t, evs)
			assert.Equal(t, server.StatusDone, evs[len(evs)-1].run(t).Status)
			close(saver.release)
			task := (<-sent).Task
			require.NotNil(t, task)
			assert.Equal(t, a2a.StateCompleted, last.a2aTask(task.ID).Status.State)
			shutdownAll(t, es)

			require.Len(t, hook.bodies(), 1, "the task's push notification was posted once")
			var ev a2a.StreamResponse
			require.NoError(t, json.Unmarshal([]byte(hook.bodies()[0]), &ev))
			require.NotNil(t, ev.Task)
			assert.Equal(t, task.ID, ev.Task.ID)
			assert.Equal(t, a2a.StateCompleted, ev.Task.Status.State)
		})
	}
}
