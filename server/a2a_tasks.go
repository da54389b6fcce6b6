package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/graph"
)

// a2aNS is the Saver namespace of the A2A tasks of a thread (a context):
// each checkpoint is a task's record after a change, the newest first.
const a2aNS = "#coorflow-a2a"

// Bounds of A2A tasks.
const (
	// maxTaskRecords is how many records of a thread's tasks are read to
	// find one.
	maxTaskRecords = 1000
	// maxTaskHistory is how many messages a task keeps.
	maxTaskHistory = 32
	// maxParts caps the parts of a message.
	maxParts = 64
	// maxPushConfigs caps the push notification configs of a task.
	maxPushConfigs = 4
	// taskSep separates a task id's context (its thread) from its own
	// part: thread ids never contain it.
	taskSep = "~"
)

// a2aTask is the record of an A2A task: the runs it made on its context's
// thread, and what the server saw of their ends.
type a2aTask struct {
	ID       string `json:"id"`
	Context  string `json:"context"`
	Workflow string `json:"workflow"`
	// Runs are the task's runs, the newest last: the first ran the
	// message that started it, each next one answered a question.
	Runs    []string      `json:"runs"`
	History []a2a.Message `json:"history,omitempty"`
	Created time.Time     `json:"created"`
	Updated time.Time     `json:"updated"`
	// End is what the newest run ended with, once the server saw it.
	End *taskEnd `json:"end,omitempty"`
	// Canceled: a client cancelled the task.
	Canceled bool                             `json:"canceled,omitempty"`
	Push     []a2a.TaskPushNotificationConfig `json:"push,omitempty"`
}

// taskEnd is how a task's run ended.
type taskEnd struct {
	Run        string        `json:"run"`
	State      a2a.TaskState `json:"state"`
	Checkpoint string        `json:"checkpoint,omitempty"`
	Error      string        `json:"error,omitempty"`
}

// splitTaskID returns the context of a task id, or false for an id that
// no task of this server has.
func splitTaskID(id string) (string, bool) {
	ctx, _, ok := strings.Cut(id, taskSep)
	return ctx, ok && threadIDPattern.MatchString(ctx)
}

// loadTask reads the owner's task id; a2a.ErrTaskNotFound when the owner
// has none of that id (another owner's task included).
func (s *Server) loadTask(ctx context.Context, owner, id string) (a2aTask, string, error) {
	thread, ok := splitTaskID(id)
	if !ok {
		return a2aTask{}, "", a2a.Errorf(a2a.CodeTaskNotFound, "task %q not found", id)
	}
	recs, err := s.saver.ListCheckpoints(ctx, threadKey(owner, thread), a2aNS, graph.ListOptions{Limit: maxTaskRecords})
	if err != nil {
		return a2aTask{}, "", fmt.Errorf("server: a2a: read task %q: %w", id, err)
	}
	for _, rec := range recs {
		var t a2aTask
		if json.Unmarshal(rec.Meta, &t) == nil && t.ID == id {
			return t, recs[0].ID, nil
		}
	}
	return a2aTask{}, "", a2a.Errorf(a2a.CodeTaskNotFound, "task %q not found", id)
}

// threadTasks lists the newest record of each task of the owner's thread.
func (s *Server) threadTasks(ctx context.Context, owner, thread string) ([]a2aTask, error) {
	recs, err := s.saver.ListCheckpoints(ctx, threadKey(owner, thread), a2aNS, graph.ListOptions{Limit: maxTaskRecords})
	if err != nil {
		return nil, fmt.Errorf("server: a2a: list the tasks of %q: %w", thread, err)
	}
	seen := map[string]bool{}
	var out []a2aTask
	for _, rec := range recs {
		var t a2aTask
		if json.Unmarshal(rec.Meta, &t) != nil || seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		out = append(out, t)
	}
	return out, nil
}

// saveTask stores a new record of the task, after change has been applied
// to its newest record (create: t is new). Records of one thread are
// written one at a time: a write that lost the race reads again.
func (s *Server) saveTask(ctx context.Context, owner string, t a2aTask, create bool, change func(*a2aTask) error) (a2aTask, error) {
	key := threadKey(owner, t.Context)
	for range 8 {
		head := ""
		if recs, err := s.saver.ListCheckpoints(ctx, key, a2aNS, graph.ListOptions{Limit: 1}); err != nil {
			return t, fmt.Errorf("server: a2a: store task %q: %w", t.ID, err)
		} else if len(recs) > 0 {
			head = recs[0].ID
		}
		cur := t
		if !create {
			var err error
			if cur, _, err = s.loadTask(ctx, owner, t.ID); err != nil {
				return t, err
			}
		}
		if change != nil {
			if err := change(&cur); err != nil {
				return cur, err
			}
		}
		cur.Updated = time.Now().UTC()
		if len(cur.History) > maxTaskHistory {
			cur.History = slices.Clone(cur.History[len(cur.History)-maxTaskHistory:])
		}
		meta, err := json.Marshal(cur)
		if err != nil {
			return cur, fmt.Errorf("server: a2a: encode task %q: %w", t.ID, err)
		}
		rec := graph.CheckpointRecord{Thread: key, NS: a2aNS, ID: newID(), ParentID: head, Source: "server", Created: cur.Updated, Meta: meta}
		err = s.saver.PutCheckpoint(ctx, rec, nil)
		var conflict *graph.CheckpointConflictError
		if errors.As(err, &conflict) {
			continue
		}
		if err != nil {
			return cur, fmt.Errorf("server: a2a: store task %q: %w", t.ID, err)
		}
		return cur, nil
	}
	return t, fmt.Errorf("server: a2a: store task %q: too many concurrent changes", t.ID)
}

// a2aState is the task state of a run's status.
func a2aState(status string) a2a.TaskState {
	switch status {
	case StatusQueued:
		return a2a.StateSubmitted
	case StatusRunning:
		return a2a.StateWorking
	case StatusDone:
		return a2a.StateCompleted
	case StatusInterrupted:
		return a2a.StateInputRequired
	case StatusCancelled:
		return a2a.StateCanceled
	default:
		return a2a.StateFailed
	}
}

// taskRun finds the task's newest run, in this process or among the
// replicas (runAt); nil when it has none, or its run is no longer known.
func (s *Server) taskRun(ctx context.Context, owner string, t a2aTask) (*placed, error) {
	n := len(t.Runs)
	if n == 0 {
		return nil, nil
	}
	p, err := s.runAt(ctx, owner, t.Context, t.Runs[n-1])
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == CodeUnknownRun {
		return nil, nil
	}
	return p, err
}

// runEnd is how the task's run v stands: its end once it has ended.
func runEnd(v Run) *taskEnd {
	end := &taskEnd{Run: v.ID, State: a2aState(v.Status), Checkpoint: v.Checkpoint}
	if v.Error != nil {
		end.Error = v.Error.Message
	}
	return end
}

// taskView is the task as A2A shows it: its state from its newest run
// (as the server saw it end, or as the run is now, on whichever replica
// it runs), with the run's answer as an artifact or its questions as the
// status's message.
func (s *Server) taskView(ctx context.Context, owner string, t a2aTask, historyLength *int) (a2a.Task, error) {
	end := t.End
	if n := len(t.Runs); !t.Canceled && n > 0 && (end == nil || end.Run != t.Runs[n-1]) {
		end = nil
		p, err := s.taskRun(ctx, owner, t)
		if err != nil {
			return a2a.Task{}, err
		}
		if p != nil {
			v, err := s.view(ctx, p, false)
			if err != nil {
				return a2a.Task{}, err
			}
			end = runEnd(v)
		}
	}
	return s.taskAs(ctx, owner, t, end, historyLength)
}

// taskAs is the task t as A2A shows it when its newest run stands at end
// (nil: a run no server knows).
func (s *Server) taskAs(ctx context.Context, owner string, t a2aTask, end *taskEnd, historyLength *int) (a2a.Task, error) {
	out := a2a.Task{ID: t.ID, ContextID: t.Context, History: t.History,
		Metadata: map[string]any{"workflow": t.Workflow, "thread_id": t.Context}}
	if n := len(t.Runs); n > 0 {
		out.Metadata["run_id"] = t.Runs[n-1]
	}
	if historyLength != nil {
		n := max(*historyLength, 0)
		if len(out.History) > n {
			out.History = out.History[len(out.History)-n:]
		}
	}
	switch {
	case t.Canceled:
		out.Status = a2a.TaskStatus{State: a2a.StateCanceled}
	case end == nil:
		// A run no server holds, which none saw end: it went with a
		// server that stopped.
		out.Status = a2a.TaskStatus{State: a2a.StateFailed, Message: agentText(t, "the task's run was lost: the server that ran it stopped")}
	default:
		out.Status = a2a.TaskStatus{State: end.State}
		if err := s.endDetails(ctx, owner, t, end, &out); err != nil {
			return out, err
		}
	}
	out.Status.Timestamp = t.Updated.Format(time.RFC3339Nano)
	return out, nil
}

// endDetails adds to a task whose run ended its answer (completed), its
// questions (input-required) or its error (failed).
func (s *Server) endDetails(ctx context.Context, owner string, t a2aTask, end *taskEnd, out *a2a.Task) error {
	switch end.State {
	case a2a.StateFailed:
		if end.Error != "" {
			out.Status.Message = agentText(t, end.Error)
		}
		return nil
	case a2a.StateCompleted, a2a.StateInputRequired:
	default:
		return nil
	}
	wf := s.cfg.Workflows[t.Workflow]
	if wf == nil || end.Checkpoint == "" {
		return nil
	}
	snap, err := wf.State(ctx, threadKey(owner, t.Context), graph.WithSaver(s.saver), graph.FromCheckpoint(end.Checkpoint))
	if err != nil {
		return fmt.Errorf("server: a2a: read the state of task %q: %w", t.ID, err)
	}
	if end.State == a2a.StateInputRequired {
		out.Status.Message = questionsMessage(t, snap.Interrupts)
		return nil
	}
	output := s.mcpTool(t.Workflow).Output
	v, ok := snap.State.Value(output)
	if !ok || v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	out.Artifacts = []a2a.Artifact{{ArtifactID: "answer", Name: output, Parts: []a2a.Part{valuePart(raw)}}}
	return nil
}

// valuePart is a text part for a JSON string, a data part for any other
// value.
func valuePart(raw json.RawMessage) a2a.Part {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return a2a.TextPart(text)
	}
	return a2a.Part{Data: raw}
}

// agentText is a message of the agent on the task.
func agentText(t a2aTask, text string) *a2a.Message {
	return &a2a.Message{MessageID: a2a.NewID(), ContextID: t.Context, TaskID: t.ID, Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
}

// questionsMessage asks the interrupts' questions: their text, and the
// interrupts as data (answer several by id with a data part
// {"<id>": answer}).
func questionsMessage(t a2aTask, ins []graph.InterruptInfo) *a2a.Message {
	m := &a2a.Message{MessageID: a2a.NewID(), ContextID: t.Context, TaskID: t.ID, Role: a2a.RoleAgent}
	var texts []string
	items := make([]map[string]any, 0, len(ins))
	for _, in := range ins {
		texts = append(texts, questionText(in.Payload))
		items = append(items, map[string]any{"id": in.ID, "payload": in.Payload})
	}
	m.Parts = []a2a.Part{a2a.TextPart(strings.Join(texts, "\n\n")), a2a.DataPart(map[string]any{"interrupts": items})}
	return m
}
