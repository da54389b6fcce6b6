package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/graph"
)

// subscribe serves SubscribeToTask: the task, then its updates until it
// ends or waits for input. A task that has ended cannot be subscribed to.
func (c *a2aCall) subscribe() error {
	var p a2a.TaskRequest
	if err := c.params(&p); err != nil {
		return err
	}
	ctx := c.r.Context()
	t, _, err := c.s.loadTask(ctx, c.owner, p.ID)
	if err != nil {
		return err
	}
	v, err := c.s.taskView(ctx, c.owner, t, nil)
	if err != nil {
		return err
	}
	if v.Status.State.Terminal() {
		return a2a.Errorf(a2a.CodeUnsupportedOperation, "task %q has ended (%s): there is nothing to subscribe to", t.ID, v.Status.State)
	}
	var ru *run
	if n := len(t.Runs); n > 0 {
		ru = c.s.localRun(t.Runs[n-1], threadKey(c.owner, t.Context))
	}
	if ru == nil || v.Status.State.Interrupted() {
		out, ok := c.openA2AStream()
		if ok {
			_ = out.event(c.req.ID, a2a.StreamResponse{Task: &v})
		}
		return nil
	}
	ru.events.attach()
	defer ru.events.detach()
	c.streamTask(t, ru)
	return nil
}

// a2aStream writes the events of a stream as server-sent events: each a
// JSON-RPC response, or (REST) the StreamResponse itself.
type a2aStream struct {
	sseWriter
	rest bool
}

func (c *a2aCall) openA2AStream() (a2aStream, bool) {
	rc := http.NewResponseController(c.w)
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.w.WriteHeader(http.StatusOK)
	out := a2aStream{sseWriter: sseWriter{s: c.s, w: c.w, rc: rc}, rest: c.rest}
	return out, out.flush() == nil
}

func (out a2aStream) event(id json.RawMessage, ev a2a.StreamResponse) error {
	var v any = a2a.Result(id, ev)
	if out.rest {
		v = ev
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := out.write([]byte("data: " + string(data) + "\n\n")); err != nil {
		return err
	}
	return out.flush()
}

// streamTask streams the task of the run ru, which the caller attached
// to: the task first, a working status as each of the workflow's nodes
// ends, then the answer as an artifact and the final status; the stream
// closes when the run ends (completed, failed, canceled) or waits for
// input. A client that leaves does not stop the run.
func (c *a2aCall) streamTask(t a2aTask, ru *run) {
	ctx := c.r.Context()
	out, ok := c.openA2AStream()
	if !ok {
		return
	}
	id := c.req.ID
	first := a2a.Task{ID: t.ID, ContextID: t.Context, History: t.History, Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: now()},
		Metadata: map[string]any{"workflow": t.Workflow, "thread_id": t.Context, "run_id": ru.id}}
	if out.event(id, a2a.StreamResponse{Task: &first}) != nil {
		return
	}
	var after int64
	var buf []frame
	for {
		frames, _, closed, wake := ru.events.since(after, buf[:0])
		buf = frames
		for _, f := range frames {
			after = f.id
			if up, ok := frameUpdate(t, f); ok && out.event(id, up) != nil {
				return
			}
		}
		if closed && len(frames) == 0 {
			break
		}
		if len(frames) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
	<-ru.done
	v, err := c.s.taskView(context.WithoutCancel(ctx), c.owner, t, nil)
	if err != nil {
		v.Status = a2a.TaskStatus{State: a2a.StateFailed, Message: agentText(t, c.rpcError(err).Message), Timestamp: now()}
	}
	for _, art := range v.Artifacts {
		if out.event(id, a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.Context, Artifact: &art, LastChunk: true}}) != nil {
			return
		}
	}
	_ = out.event(id, a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.Context, Status: v.Status}})
}

// frameUpdate is the status update of a run's event the stream shows: the
// run's start (working) and each of the workflow's own nodes that ends.
func frameUpdate(t a2aTask, f frame) (a2a.StreamResponse, bool) {
	var text string
	switch f.name {
	case graph.EventRunStart.String():
		text = "started"
	case graph.EventNodeEnd.String():
		ev, ok := frameEvent(f)
		if !ok || strings.Count(ev.Path, "/") != 1 {
			return a2a.StreamResponse{}, false
		}
		text = fmt.Sprintf("node %s finished", ev.Node)
		if ev.Error != "" {
			text = fmt.Sprintf("node %s failed: %s", ev.Node, ev.Error)
		}
	default:
		return a2a.StreamResponse{}, false
	}
	m := agentText(t, text)
	m.Metadata = map[string]any{"coorflow_event": f.name}
	return a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.Context,
		Status: a2a.TaskStatus{State: a2a.StateWorking, Message: m, Timestamp: now()}}}, true
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }
