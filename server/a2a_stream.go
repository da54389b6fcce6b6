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
	pl, err := c.s.taskRun(ctx, c.owner, t)
	if err != nil {
		return err
	}
	if pl == nil || v.Status.State.Interrupted() {
		out, ok := c.openA2AStream()
		if ok {
			_ = out.event(c.req.ID, a2a.StreamResponse{Task: &v})
		}
		return nil
	}
	c.s.serve(c.w, c.r, pl, 0, c.taskFormat(t, pl.id))
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
	if err := out.write(a2aEvent(id, out.rest, ev)); err != nil {
		return err
	}
	return out.flush()
}

// a2aEvent is the server-sent event of one update of a stream: a
// JSON-RPC response of the request id, or (rest) the update itself.
func a2aEvent(id json.RawMessage, rest bool, ev a2a.StreamResponse) []byte {
	var v any = a2a.Result(id, ev)
	if rest {
		v = ev
	}
	data, _ := json.Marshal(v) // of the a2a package's types
	return []byte("data: " + string(data) + "\n\n")
}

// taskFormat streams the task t of its run id (a streamFormat, served by
// the run entry wherever the run executes): the task first, a working
// status as each of the workflow's nodes ends, then the answer as an
// artifact and the final status; the stream closes when the run ends
// (completed, failed, canceled) or waits for input. A client that
// leaves does not stop the run.
func (c *a2aCall) taskFormat(t a2aTask, run string) *a2aFormat {
	return &a2aFormat{c: c, t: t, run: run}
}

type a2aFormat struct {
	c   *a2aCall
	t   a2aTask
	run string
}

func (f *a2aFormat) filter() kindFilter {
	return kindFilter{graph.EventRunStart.String(): true, graph.EventNodeEnd.String(): true}
}

func (f *a2aFormat) send(ev a2a.StreamResponse) []byte { return a2aEvent(f.c.req.ID, f.c.rest, ev) }

func (f *a2aFormat) head() []byte {
	t := f.t
	first := a2a.Task{ID: t.ID, ContextID: t.Context, History: t.History, Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: now()},
		Metadata: map[string]any{"workflow": t.Workflow, "thread_id": t.Context, "run_id": f.run}}
	return f.send(a2a.StreamResponse{Task: &first})
}

func (f *a2aFormat) event(fr frame) []byte {
	if up, ok := frameUpdate(f.t, fr); ok {
		return f.send(up)
	}
	return nil
}

// truncated sends nothing: the updates lost are statuses of nodes, and
// the end says how the task ended.
func (f *a2aFormat) truncated(int64, int64) []byte { return nil }

func (f *a2aFormat) end(v Run, _ int64) []byte {
	t := f.t
	ctx := context.WithoutCancel(f.c.r.Context())
	tv, err := f.c.s.taskAs(ctx, f.c.owner, t, runEnd(v), nil)
	if err != nil {
		tv.Status = a2a.TaskStatus{State: a2a.StateFailed, Message: agentText(t, f.c.rpcError(err).Message)}
	}
	tv.Status.Timestamp = now()
	var out []byte
	for _, art := range tv.Artifacts {
		out = append(out, f.send(a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.Context, Artifact: &art, LastChunk: true}})...)
	}
	return append(out, f.send(a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.Context, Status: tv.Status}})...)
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
