package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/graph"
)

// send serves SendMessage and SendStreamingMessage: a message without a
// task starts one — a run of the workflow on the thread of the message's
// context (created when new) — and a message on a task that is
// input-required answers its questions with a new run on that thread.
// Runs start, are followed and are streamed through the server's one
// entry for runs (start, awaitStart, awaitEnd, serve: runentry.go), in
// this process or on any replica: the owner's quotas, budgets and the
// thread's multitask policy apply.
func (c *a2aCall) send(stream bool) (any, error) {
	var p a2a.SendMessageRequest
	if err := c.params(&p); err != nil {
		return nil, err
	}
	m := p.Message
	switch {
	case m == nil:
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "params.message is required")
	case m.Role != "" && m.Role != a2a.RoleUser:
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "the message's role must be %s", a2a.RoleUser)
	case len(m.Parts) == 0 || len(m.Parts) > maxParts:
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "a message has 1 to %d parts", maxParts)
	}
	var push *a2a.TaskPushNotificationConfig
	if cfg := p.Configuration; cfg != nil && cfg.TaskPushNotificationConfig != nil {
		if len(c.s.webhooks) == 0 {
			return nil, a2a.Errorf(a2a.CodePushNotificationNotSupported, "push notifications are off on this server: its operator allows URL prefixes with --webhook-allow")
		}
		push = cfg.TaskPushNotificationConfig
		if err := c.s.checkPushURL(push.URL); err != nil {
			return nil, err
		}
		if push.ID == "" {
			push.ID = newID()
		}
	}
	var (
		t   a2aTask
		ru  *run
		req RunRequest
		err error
	)
	create := m.TaskID == ""
	if !create {
		t, ru, req, err = c.answer(m)
	} else {
		t, ru, req, err = c.start(m, p.Metadata)
	}
	if err != nil {
		return nil, err
	}
	ctx := c.r.Context()
	if stream {
		ru.events.attach() // before it starts: the stream sees every event
		defer ru.events.detach()
	}
	// The run's end records the task's and notifies its push URLs, on
	// whichever replica finishes it (notices.go).
	ru.task = t.ID
	pl, err := c.s.start(ctx, ru, storedRequest{RunRequest: req, Task: t.ID})
	if err == nil {
		err = c.s.awaitStart(ctx, pl, false)
		var early *apiError
		if err != nil && ctx.Err() != nil && !errors.As(err, &early) {
			err = nil // the client left: the run goes on, and its task is kept
		}
	}
	if err != nil {
		if c.newThread != "" {
			// Refused, or failed before it started: the context made
			// for it goes too.
			c.s.dropEphemeral(context.WithoutCancel(ctx), c.owner, c.newThread)
		}
		return nil, err
	}
	t, err = c.s.saveTask(context.WithoutCancel(ctx), c.owner, t, create, func(cur *a2aTask) error {
		cur.Runs = append(cur.Runs, pl.id)
		cur.End, cur.Canceled = nil, false
		cur.History = append(cur.History, *m)
		if push != nil {
			push.TaskID = cur.ID
			cur.Push = append(deletePush(cur.Push, push.ID), *push)
			if len(cur.Push) > maxPushConfigs {
				cur.Push = cur.Push[len(cur.Push)-maxPushConfigs:]
			}
		}
		return nil
	})
	if err != nil {
		if _, cerr := c.s.cancel(context.WithoutCancel(ctx), pl); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	c.s.taskRecorded(context.WithoutCancel(ctx), pl)
	if stream {
		c.s.serve(c.w, c.r, pl, 0, c.taskFormat(t, pl.id))
		return nil, nil
	}
	var hl *int
	if p.Configuration != nil {
		hl = p.Configuration.HistoryLength
	}
	if p.Configuration != nil && p.Configuration.ReturnImmediately {
		v, err := c.s.taskView(ctx, c.owner, t, hl)
		if err != nil {
			return nil, err
		}
		return a2a.SendMessageResponse{Task: &v}, nil
	}
	last, err := c.s.awaitEnd(ctx, pl, 0)
	if err != nil {
		return nil, err // the client left (the task goes on), or the run is gone
	}
	v, err := c.s.taskAs(ctx, c.owner, t, runEnd(last), hl)
	if err != nil {
		return nil, err
	}
	return a2a.SendMessageResponse{Task: &v}, nil
}

// start makes the run of a new task: the workflow of the route, or the
// one the metadata's "skill" names (the only one when the server has one).
func (c *a2aCall) start(m *a2a.Message, meta map[string]any) (a2aTask, *run, RunRequest, error) {
	ctx := c.r.Context()
	name := c.workflow
	if name == "" {
		name, _ = m.Metadata["skill"].(string)
		if s, ok := meta["skill"].(string); ok && name == "" {
			name = s
		}
	}
	if name == "" && len(c.s.cfg.Workflows) == 1 {
		for n := range c.s.cfg.Workflows {
			name = n
		}
	}
	wf := c.s.cfg.Workflows[name]
	if wf == nil {
		return a2aTask{}, nil, RunRequest{}, a2a.Errorf(a2a.CodeInvalidParams, "name the workflow to run with the message's metadata \"skill\" (one of the agent card's skills), or send to /a2a/{workflow}; %q is none", name)
	}
	d := c.s.mcpTool(name)
	input, e := messageInput(wf, d.Input, m)
	if e != nil {
		return a2aTask{}, nil, RunRequest{}, e
	}
	th, err := c.context(ctx, m.ContextID, name)
	if err != nil {
		return a2aTask{}, nil, RunRequest{}, err
	}
	now := time.Now().UTC()
	t := a2aTask{ID: th.ID + taskSep + newID()[:16], Context: th.ID, Workflow: name, Created: now}
	m.ContextID, m.TaskID = t.Context, t.ID
	req := RunRequest{Input: input}
	ru := c.s.newRun(c.r, th, wf)
	if e := ru.setRequest(req); e != nil {
		ru.cancel(nil)
		return a2aTask{}, nil, req, e
	}
	return t, ru, req, nil
}

// messageInput is the run's input: the message's one data part, or its
// text (read as JSON when the channel takes no string).
func messageInput(wf *graph.Runnable, channel string, m *a2a.Message) (json.RawMessage, *a2a.Error) {
	var candidates []json.RawMessage
	if len(m.Parts) == 1 && len(m.Parts[0].Data) > 0 {
		candidates = append(candidates, m.Parts[0].Data)
	} else {
		text := m.Text()
		candidates = append(candidates, mustJSON(text))
		if json.Valid([]byte(text)) {
			candidates = append(candidates, json.RawMessage(text))
		}
	}
	var first *apiError
	for _, v := range candidates {
		in := mustJSON(map[string]json.RawMessage{channel: v})
		_, e := decodeInput(wf, in)
		if e == nil {
			return in, nil
		}
		if first == nil {
			first = e
		}
	}
	return nil, a2a.Errorf(a2a.CodeInvalidParams, "the message is not an input of the workflow: %s", first.Message)
}

// context is the owner's thread of the context id (a new one when empty
// or unknown), which must run workflow name.
func (c *a2aCall) context(ctx context.Context, id, name string) (Thread, error) {
	if id != "" {
		th, _, err := c.s.threadRecord(ctx, c.owner, id)
		var ae *apiError
		switch {
		case err == nil && th.Workflow != name:
			return Thread{}, a2a.Errorf(a2a.CodeInvalidParams, "context %q runs workflow %q, not %q", id, th.Workflow, name)
		case err == nil:
			return th, nil
		case !errors.As(err, &ae) || ae.Code != CodeUnknownThread:
			return Thread{}, err
		case !threadIDPattern.MatchString(id):
			return Thread{}, a2a.Errorf(a2a.CodeInvalidParams, "contextId must be 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit")
		}
	}
	if e := c.s.storageQuota(c.owner); e != nil {
		return Thread{}, e
	}
	th := Thread{ID: id, Workflow: name, CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Metadata: map[string]any{"source": "a2a"}}
	if th.ID == "" {
		th.ID = newID()
	}
	if err := c.s.storeThread(ctx, c.owner, th); err != nil {
		return th, err
	}
	c.newThread = th.ID
	return th, nil
}

// answer makes the run that answers the questions of an input-required
// task: one question takes the message (its one data part, or its text,
// read as JSON when it is JSON); several take a data part
// {"<interrupt id>": answer, ...}.
func (c *a2aCall) answer(m *a2a.Message) (a2aTask, *run, RunRequest, error) {
	ctx := c.r.Context()
	t, _, err := c.s.loadTask(ctx, c.owner, m.TaskID)
	if err != nil {
		return t, nil, RunRequest{}, err
	}
	if m.ContextID != "" && m.ContextID != t.Context {
		return t, nil, RunRequest{}, a2a.Errorf(a2a.CodeInvalidParams, "task %q is of context %q, not %q", t.ID, t.Context, m.ContextID)
	}
	v, err := c.s.taskView(ctx, c.owner, t, nil)
	if err != nil {
		return t, nil, RunRequest{}, err
	}
	if v.Status.State != a2a.StateInputRequired {
		return t, nil, RunRequest{}, a2a.Errorf(a2a.CodeUnsupportedOperation, "task %q is %s, not input-required: only its questions can be answered", t.ID, v.Status.State)
	}
	wf := c.s.cfg.Workflows[t.Workflow]
	th, _, err := c.s.threadRecord(ctx, c.owner, t.Context)
	if err != nil || wf == nil {
		return t, nil, RunRequest{}, errors.Join(err, fmt.Errorf("server: a2a: task %q: workflow %q is not served", t.ID, t.Workflow))
	}
	snap, err := wf.State(ctx, threadKey(c.owner, t.Context), graph.WithSaver(c.s.saver))
	if err != nil {
		return t, nil, RunRequest{}, err
	}
	req := RunRequest{}
	answer := messageAnswer(m)
	if len(snap.Interrupts) > 1 {
		var each map[string]json.RawMessage
		if json.Unmarshal(answer, &each) != nil || len(each) == 0 {
			return t, nil, RunRequest{}, a2a.Errorf(a2a.CodeInvalidParams, "task %q asks %d questions: answer with a data part {\"<interrupt id>\": answer, ...}", t.ID, len(snap.Interrupts))
		}
		req.ResumeEach = each
	} else {
		req.Resume = answer
	}
	m.ContextID = t.Context
	ru := c.s.newRun(c.r, th, wf)
	if e := ru.setRequest(req); e != nil {
		ru.cancel(nil)
		return t, nil, req, e
	}
	return t, ru, req, nil
}

// messageAnswer is the JSON of an answer message.
func messageAnswer(m *a2a.Message) json.RawMessage {
	if len(m.Parts) == 1 && len(m.Parts[0].Data) > 0 {
		return m.Parts[0].Data
	}
	text := m.Text()
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	return mustJSON(text)
}

// endTask records in the owner's task id how its run p ended, when p is
// still its newest run, and posts the task to its push notification
// URLs: the notice of the run's end (deliverNotice).
func (s *Server) endTask(ctx context.Context, owner, id string, p *placed) {
	v, err := s.view(ctx, p, false)
	if err != nil {
		s.log.WarnContext(ctx, "server: a2a: read a task's run", "task", id, "run", p.id, "err", err)
		return
	}
	end := runEnd(v)
	t, err := s.saveTask(ctx, owner, a2aTask{ID: id, Context: p.thread}, false, func(cur *a2aTask) error {
		if n := len(cur.Runs); n > 0 && cur.Runs[n-1] == p.id {
			cur.End = end
		}
		return nil
	})
	if err != nil {
		s.log.WarnContext(ctx, "server: a2a: record the end of a task", "task", id, "err", err)
		return
	}
	if len(t.Push) > 0 {
		s.pushTask(ctx, owner, t)
	}
}

// pushTask posts the task to each of its push notification URLs, within
// Config.WebhookTimeout each; a failure is logged.
func (s *Server) pushTask(ctx context.Context, owner string, t a2aTask) {
	view, err := s.taskView(ctx, owner, t, nil)
	if err != nil {
		s.log.WarnContext(ctx, "server: a2a: push notification", "task", t.ID, "err", err)
		return
	}
	data := mustJSON(a2a.StreamResponse{Task: &view})
	timeout := s.cfg.WebhookTimeout
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	for _, p := range t.Push {
		if s.checkPushURL(p.URL) != nil {
			continue // the policy changed since
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err := postPush(pctx, p, data)
		cancel()
		if err != nil {
			s.log.WarnContext(ctx, "server: a2a: push notification failed", "task", t.ID, "url", p.URL, "err", err)
		}
	}
}

func postPush(ctx context.Context, p a2a.TaskPushNotificationConfig, data []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, strings.NewReader(string(data)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/a2a+json")
	if p.Token != "" {
		req.Header.Set("X-A2A-Notification-Token", p.Token)
	}
	if a := p.Authentication; a != nil && a.Scheme != "" {
		req.Header.Set("Authorization", a.Scheme+" "+a.Credentials)
	}
	res, err := webhookClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		return fmt.Errorf("server: push notification answered %s", res.Status)
	}
	return nil
}
