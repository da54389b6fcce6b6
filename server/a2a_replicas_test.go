package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/server"
)

// a2aCall sends one JSON-RPC request of method with params to path and
// decodes its result into out; it returns the JSON-RPC error, if any.
func (e *env) a2aCall(path, method string, params, out any) *a2a.Error {
	e.t.Helper()
	_, res := e.rpc(path, alice, map[string]any{"method": method, "params": params})
	if res.Error == nil && out != nil {
		require.NoError(e.t, json.Unmarshal(res.Result, out))
	}
	return res.Error
}

// a2aTask gets the task id through e.
func (e *env) a2aTask(id string) a2a.Task {
	e.t.Helper()
	var got a2a.Task
	require.Nil(e.t, e.a2aCall("/a2a", "GetTask", a2a.TaskRequest{ID: id}, &got))
	return got
}

// a2aStream opens a stream of method (SendStreamingMessage,
// SubscribeToTask) with params through e.
func (e *env) a2aStream(path, method string, params any) *eventReader {
	e.t.Helper()
	return e.openStream("POST", path, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
		a2a.VersionHeader, a2a.ProtocolVersion)
}

// nextUpdate reads the next update of an A2A stream, or false at its end.
func nextUpdate(t *testing.T, r *eventReader) (a2a.StreamResponse, bool) {
	t.Helper()
	ev, ok := r.next()
	if !ok {
		return a2a.StreamResponse{}, false
	}
	var res a2a.Response
	require.NoError(t, json.Unmarshal([]byte(ev.Data), &res), ev.Data)
	require.Nil(t, res.Error)
	var up a2a.StreamResponse
	require.NoError(t, json.Unmarshal(res.Result, &up))
	return up, true
}

// restOf reads an A2A stream to its end: the kinds of its updates, and
// its last status.
func restOf(t *testing.T, r *eventReader) (kinds []string, final a2a.TaskStatus, answer string) {
	t.Helper()
	for {
		up, ok := nextUpdate(t, r)
		switch {
		case !ok:
			return kinds, final, answer
		case up.Task != nil:
			kinds = append(kinds, "task")
		case up.StatusUpdate != nil:
			kinds = append(kinds, "statusUpdate")
			final = up.StatusUpdate.Status
		case up.ArtifactUpdate != nil:
			kinds = append(kinds, "artifactUpdate")
			answer = *up.ArtifactUpdate.Artifact.Parts[0].Text
		}
	}
}

// replicaOf is the replica that executes (or executed) the task's run.
func replicaOf(t *testing.T, e *env, task a2a.Task) string {
	t.Helper()
	var ru server.Run
	e.call("GET", fmt.Sprintf("/v1/threads/%s/runs/%s", task.Metadata["thread_id"], task.Metadata["run_id"]), alice, nil, http.StatusOK, &ru)
	require.NotEmpty(t, ru.Replica)
	return ru.Replica
}

// TestA2ATasksAreServedThroughThreeReplicas: an A2A task is one run among
// replicas sharing runs on one PostgreSQL; every method finds it on any
// replica. A task sent on r0 is got on r1; a task streamed on r2; a task
// that runs on one replica is followed (SubscribeToTask) on another and
// cancelled through a third; a question asked by a run on one replica is
// answered by a message sent to another, and the same task goes on.
func TestA2ATasksAreServedThroughThreeReplicas(t *testing.T) {
	b := newBlocker(t)
	es := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(echoGraph(t), askGraph(t, false), b.r), MCPTools: a2aTools}).envs

	// Sent on r0, got on r1.
	sent := es[0].a2aSend(alice, "echo", "hi")
	assert.Equal(t, a2a.StateCompleted, sent.Status.State)
	got := es[1].a2aTask(sent.ID)
	assert.Equal(t, a2a.StateCompleted, got.Status.State)
	require.Len(t, got.Artifacts, 1)
	assert.Equal(t, "HI", *got.Artifacts[0].Parts[0].Text)

	// Streamed on r2, on the context of the first task.
	m := a2a.UserText("again")
	m.ContextID = sent.ContextID
	kinds, final, answer := restOf(t, es[2].a2aStream("/a2a/echo", "SendStreamingMessage", a2a.SendMessageRequest{Message: m}))
	assert.Equal(t, "task", kinds[0], "a stream starts with the task")
	assert.Contains(t, kinds, "statusUpdate")
	assert.Equal(t, "artifactUpdate", kinds[len(kinds)-2])
	assert.Equal(t, a2a.StateCompleted, final.State)
	assert.Equal(t, "AGAIN", answer)
	var list a2a.ListTasksResponse
	require.Nil(t, es[1].a2aCall("/a2a", "ListTasks", a2a.ListTasksRequest{ContextID: sent.ContextID}, &list))
	assert.Len(t, list.Tasks, 2, "both tasks of the context, on another replica")

	// A task running on one replica: followed on another, cancelled
	// through the third.
	var started a2a.SendMessageResponse
	require.Nil(t, es[0].a2aCall("/a2a/block", "SendMessage", a2a.SendMessageRequest{Message: a2a.UserText(`["go"]`),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}}, &started))
	require.NotNil(t, started.Task)
	b.waitEntered(t)
	runner := replicaOf(t, es[0], *started.Task)
	others := []*env{}
	for i, e := range es {
		if fmt.Sprintf("r%d", i) != runner {
			others = append(others, e)
		}
	}
	require.Len(t, others, 2)
	assert.Equal(t, a2a.StateWorking, others[0].a2aTask(started.Task.ID).Status.State)
	sub := others[0].a2aStream("/a2a", "SubscribeToTask", a2a.TaskRequest{ID: started.Task.ID})
	first, ok := nextUpdate(t, sub)
	require.True(t, ok)
	require.NotNil(t, first.Task, "a subscription starts with the task")
	assert.Equal(t, started.Task.ID, first.Task.ID)
	var canceled a2a.Task
	require.Nil(t, others[1].a2aCall("/a2a", "CancelTask", a2a.TaskRequest{ID: started.Task.ID}, &canceled))
	assert.Equal(t, a2a.StateCanceled, canceled.Status.State)
	_, final, _ = restOf(t, sub)
	assert.Equal(t, a2a.StateCanceled, final.State, "the subscription on another replica ends with the cancellation")
	assert.Equal(t, int32(0), b.counts()["c"], "the run stopped on its replica before its last node")
	for _, e := range es {
		assert.Equal(t, a2a.StateCanceled, e.a2aTask(started.Task.ID).Status.State)
	}
	assert.Equal(t, a2a.CodeTaskNotCancelable, es[2].a2aCall("/a2a", "CancelTask", a2a.TaskRequest{ID: started.Task.ID}, nil).Code)

	// A question asked on r0, answered through r1, the answer's end read
	// on r2.
	asked := es[0].a2aSend(alice, "ask", "draft")
	require.Equal(t, a2a.StateInputRequired, asked.Status.State)
	require.NotNil(t, asked.Status.Message)
	assert.Contains(t, asked.Status.Message.Text(), "approve draft?")
	assert.Equal(t, a2a.StateInputRequired, es[2].a2aTask(asked.ID).Status.State, "the question, on another replica")
	reply := &a2a.Message{MessageID: a2a.NewID(), Role: a2a.RoleUser, TaskID: asked.ID, Parts: []a2a.Part{a2a.DataPart(map[string]any{"ok": true})}}
	var answered a2a.SendMessageResponse
	require.Nil(t, es[1].a2aCall("/a2a", "SendMessage", a2a.SendMessageRequest{Message: reply}, &answered))
	require.NotNil(t, answered.Task)
	assert.Equal(t, asked.ID, answered.Task.ID, "the answer continues the task")
	assert.Equal(t, a2a.StateCompleted, answered.Task.Status.State)
	done := es[2].a2aTask(asked.ID)
	assert.Equal(t, a2a.StateCompleted, done.Status.State)
	require.Len(t, done.Artifacts, 1)
	var log []string
	require.NoError(t, json.Unmarshal(done.Artifacts[0].Parts[0].Data, &log))
	assert.Equal(t, []string{"draft ok=true", "after"}, log)
	assert.Len(t, done.History, 2, "the question's message and its answer")
}

// TestA2AParallelSendsGetExactlyTheActiveRunQuotaAcrossThreeReplicas: 120
// SendMessage requests of one owner at once, spread over three replicas,
// get exactly the owner's quota of active runs; the others are refused
// with the quota's message and leave no task or context behind.
func TestA2AParallelSendsGetExactlyTheActiveRunQuotaAcrossThreeReplicas(t *testing.T) {
	const n, quota = 120, 16
	h := newHoldFlow(t, n)
	es := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(h.r), MaxActiveRuns: quota,
		MCPTools: map[string]server.MCPTool{"hold": {Input: "text", Output: "text"}}}).envs
	type result struct {
		task *a2a.Task
		err  *a2a.Error
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		e := es[i%len(es)]
		wg.Go(func() {
			<-start
			_, res := e.rpc("/a2a/hold", alice, map[string]any{"method": "SendMessage", "params": a2a.SendMessageRequest{
				Message: a2a.UserText("x"), Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}}})
			results[i].err = res.Error
			if res.Error == nil {
				var out a2a.SendMessageResponse
				if json.Unmarshal(res.Result, &out) == nil {
					results[i].task = out.Task
				}
			}
		})
	}
	close(start)
	wg.Wait()
	want := fmt.Sprintf(`owner "alice" has %d runs in progress, the most allowed: wait for one to end, or cancel one, then try again`, quota)
	var accepted []a2a.Task
	for i, r := range results {
		switch {
		case r.err == nil:
			require.NotNil(t, r.task, "request %d", i)
			accepted = append(accepted, *r.task)
		case r.err.Code == a2a.CodeUnsupportedOperation:
			assert.Equal(t, want, r.err.Message)
		default:
			t.Errorf("request %d: unexpected error %d: %s", i, r.err.Code, r.err.Message)
		}
	}
	t.Logf("%d of %d A2A tasks sent at once through 3 replicas accepted; active run quota %d", len(accepted), n, quota)
	require.Len(t, accepted, quota, "tasks accepted")
	h.waitEntered(t, quota)
	var list a2a.ListTasksResponse
	require.Nil(t, es[1].a2aCall("/a2a", "ListTasks", map[string]any{}, &list))
	assert.Len(t, list.Tasks, quota, "a refused task leaves no record")
	assert.Equal(t, quota, es[2].threadCount(alice), "nor a context")

	h.open()
	for i, task := range accepted {
		// Each task, followed on the next replica to its end.
		sub := es[(i+1)%len(es)].a2aStream("/a2a", "SubscribeToTask", a2a.TaskRequest{ID: task.ID})
		kinds, final, answer := restOf(t, sub)
		if len(kinds) == 0 { // it had ended before the subscription: nothing to follow
			got := es[(i+1)%len(es)].a2aTask(task.ID)
			final, answer = got.Status, *got.Artifacts[0].Parts[0].Text
		}
		assert.Equal(t, a2a.StateCompleted, final.State, "task %s", task.ID)
		assert.Equal(t, "held", answer, "task %s", task.ID)
	}
	assert.LessOrEqual(t, h.max.Load(), int64(quota), "runs in progress at once")
}

// TestA2APushNotificationsAmongReplicas: the task of a message taken by
// one replica is posted to its push notification URL when its run ends,
// by the replica that finished the run or the one that took the message
// (whichever saw both the run's end and the task's record).
func TestA2APushNotificationsAmongReplicas(t *testing.T) {
	got := make(chan a2a.StreamResponse, 1)
	hook := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		var ev a2a.StreamResponse
		_ = json.NewDecoder(r.Body).Decode(&ev)
		got <- ev
	})
	es := newReplicaSet(t, 3, time.Minute, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, WebhookAllow: []string{hook + "/hooks"}}).envs
	var sent a2a.SendMessageResponse
	require.Nil(t, es[1].a2aCall("/a2a/echo", "SendMessage", a2a.SendMessageRequest{Message: a2a.UserText("hi"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true, TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: hook + "/hooks/a2a"}}}, &sent))
	ev := <-got
	require.NotNil(t, ev.Task)
	assert.Equal(t, sent.Task.ID, ev.Task.ID)
	assert.Equal(t, a2a.StateCompleted, ev.Task.Status.State)
	require.Len(t, ev.Task.Artifacts, 1)
	assert.Equal(t, "HI", *ev.Task.Artifacts[0].Parts[0].Text)
}
