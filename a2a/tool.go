package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// EventUpdate names the custom event of an update of a remote agent's
// task (Update).
const EventUpdate = "a2a_update"

// Update is the event a Tool emits (graph.Emit) for each update of the
// remote task it follows: its state, and the text of the status message
// or artifact that came with it.
type Update struct {
	Agent     string    `json:"agent"`
	TaskID    string    `json:"task_id"`
	ContextID string    `json:"context_id,omitempty"`
	State     TaskState `json:"state,omitempty"`
	Text      string    `json:"text,omitempty"`
	// Artifact is set when the update carries an artifact.
	Artifact bool `json:"artifact,omitempty"`
}

// EventName names the event.
func (Update) EventName() string { return EventUpdate }

// ToolConfig describes a remote agent used as a tool.
type ToolConfig struct {
	// Name is the tool's name (default: the card's name, with the
	// characters tool names cannot have replaced by '_').
	Name string
	// URL is the agent's card: a URL ending in .json, or its base URL.
	URL string
	// Bearer, when set, is sent as Authorization: Bearer with every
	// request.
	Bearer string
	// HTTPClient makes the requests (default http.DefaultClient).
	HTTPClient *http.Client
	// Timeout bounds one call, following the task included (default 10
	// minutes).
	Timeout time.Duration
}

// DefaultToolTimeout bounds a call when ToolConfig.Timeout is zero.
const DefaultToolTimeout = 10 * time.Minute

// Tool is a remote A2A agent as a coorflow tool (it implements
// tools.Tool and tools.TimeoutTool): a call sends the model's message to
// the agent and returns the task's answer. Its description is the card's,
// with the agent's skills.
//
// A call is journaled in two steps (graph.Do): the message's id, then the
// task the agent made of it. A node that runs again — a retry, a resume
// after an interrupt, a restart after the process died — follows the
// recorded task (SubscribeToTask, GetTask) instead of sending the message
// again; were the process to die between the send and its record, the
// message is sent again with the same message id, for the agent to see
// it is the same. Updates of the task are emitted as Update events. A
// task that asks for input interrupts the run (Question); the answer
// given on resume continues the same task.
type Tool struct {
	name, desc string
	client     *Client
	timeout    time.Duration
}

var toolNameBad = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// NewTool reads the agent's card and returns the tool.
func NewTool(ctx context.Context, cfg ToolConfig) (*Tool, error) {
	opts := []Option{WithBearer(cfg.Bearer)}
	if cfg.HTTPClient != nil {
		opts = append(opts, WithHTTPClient(cfg.HTTPClient))
	}
	c, err := Dial(ctx, cfg.URL, opts...)
	if err != nil {
		return nil, err
	}
	card := c.Card()
	name := cfg.Name
	if name == "" {
		name = strings.Trim(toolNameBad.ReplaceAllString(card.Name, "_"), "_")
	}
	if name == "" || len(name) > 64 || toolNameBad.MatchString(name) {
		return nil, fmt.Errorf("a2a: tool name %q must be 1 to 64 letters, digits, '_' or '-'", name)
	}
	t := &Tool{name: name, client: c, timeout: cfg.Timeout}
	if t.timeout <= 0 {
		t.timeout = DefaultToolTimeout
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Asks the remote agent %q (A2A): %s", card.Name, card.Description)
	if len(card.Skills) > 0 {
		b.WriteString(" Its skills:")
		for _, s := range card.Skills {
			fmt.Fprintf(&b, "\n- %s: %s", s.Name, s.Description)
		}
	}
	t.desc = b.String()
	return t, nil
}

// Name is the tool's name.
func (t *Tool) Name() string { return t.name }

// Description is the card's description and skills.
func (t *Tool) Description() string { return t.desc }

// Timeout bounds one call.
func (t *Tool) Timeout() time.Duration { return t.timeout }

// Schema takes the message, and optionally the context of an earlier
// call to continue.
func (t *Tool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"message":{"type":"string","description":"What to ask or tell the agent."},` +
		`"context_id":{"type":"string","description":"Optional: the context_id an earlier answer gave, to continue that conversation."}},` +
		`"required":["message"],"additionalProperties":false}`)
}

// sent is the journaled outcome of the send: the task, or the agent's
// direct answer.
type sent struct {
	TaskID    string    `json:"task_id,omitempty"`
	ContextID string    `json:"context_id,omitempty"`
	State     TaskState `json:"state,omitempty"`
	Reply     string    `json:"reply,omitempty"`
}

// KindQuestion is the Kind of a Question.
const KindQuestion = "a2a_input_required"

// Question is the payload of the interrupt (graph.Interrupt) a call
// raises when the remote agent's task is input-required: the run pauses,
// and the answer given on resume is sent to the agent as the next message
// of the same task — a string as a text part, any other JSON value as a
// data part — whose task the call then follows on. An agent that asks
// again interrupts the run again.
type Question struct {
	Kind      string `json:"kind"`  // KindQuestion
	Agent     string `json:"agent"` // the tool's name
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id,omitempty"`
	// Question is the text of the task's status message.
	Question string `json:"question"`
	// Data are the status message's data parts (a coorflow agent's are
	// {"interrupts": [{"id", "payload"}]}).
	Data []json.RawMessage `json:"data,omitempty"`
}

// question is the Question of the input-required task.
func (t *Tool) question(task Task) Question {
	q := Question{Kind: KindQuestion, Agent: t.name, TaskID: task.ID, ContextID: task.ContextID, Question: task.Status.Message.Text()}
	if m := task.Status.Message; m != nil {
		for _, p := range m.Parts {
			if len(p.Data) > 0 {
				q.Data = append(q.Data, p.Data)
			}
		}
	}
	return q
}

// answerPart is an answer given on resume as a message part.
func answerPart(answer any) Part {
	if text, ok := answer.(string); ok {
		return TextPart(text)
	}
	return DataPart(answer)
}

// Call sends the message and follows the task until it ends; a task that
// asks for input interrupts the run (Question), and the answer continues
// the same task. It returns the task's answer.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Message   string `json:"message"`
		ContextID string `json:"context_id"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Message) == "" {
		return "", errors.New("a2a: the arguments must be {\"message\": \"...\"}")
	}
	msgID, err := graph.Do(ctx, "a2a_message_id:"+t.name, func(context.Context) (string, error) { return NewID(), nil })
	if err != nil {
		return "", err
	}
	m := &Message{MessageID: msgID, ContextID: in.ContextID, Role: RoleUser, Parts: []Part{TextPart(in.Message)}}
	s, task, err := t.exchange(ctx, "a2a_send:"+t.name, m)
	if err != nil || s.TaskID == "" {
		return s.Reply, err
	}
	// Each question and its answer are journaled in turn: a node that
	// runs again replays the answers given, and asks the next question.
	for task.Status.State == StateInputRequired {
		answer, err := graph.Interrupt(ctx, t.question(task))
		var ie *graph.InterruptError
		if errors.As(err, &ie) {
			return "", err // the run pauses until the question is answered
		}
		if err != nil {
			break // no run to pause (a call outside a graph): the model reads the question
		}
		id, err := graph.Do(ctx, "a2a_answer_id:"+t.name, func(context.Context) (string, error) { return NewID(), nil })
		if err != nil {
			return "", err
		}
		reply := &Message{MessageID: id, TaskID: task.ID, ContextID: task.ContextID, Role: RoleUser, Parts: []Part{answerPart(answer)}}
		if _, task, err = t.exchange(ctx, "a2a_answer:"+t.name, reply); err != nil {
			return "", err
		}
	}
	return answerText(t.name, task), nil
}

// exchange sends m, journaled as name, and follows the task the agent
// made of it (or that it continues) until it ends or waits for input. A
// direct answer, without a task, is the sent's Reply.
func (t *Tool) exchange(ctx context.Context, name string, m *Message) (sent, Task, error) {
	// A streaming agent is sent the message on a stream: its first event
	// (the task) is journaled, and the rest of the stream followed after.
	// A node that runs again finds the task in the journal and follows it
	// with SubscribeToTask instead.
	var next func() (StreamResponse, error, bool)
	stopStream := func() {}
	defer func() { stopStream() }()
	streaming := t.client.card.Capabilities.Streaming != nil && *t.client.card.Capabilities.Streaming
	s, err := graph.Do(ctx, name, func(ctx context.Context) (sent, error) {
		if !streaming {
			return t.send(ctx, m)
		}
		pull, stop := iter.Pull2(t.client.SendStreamingMessage(ctx, SendMessageRequest{Message: m}))
		ev, err, ok := pull()
		if !ok || err != nil {
			stop()
			return sent{}, errors.Join(err, errors.New("a2a: the agent's stream ended before it named a task"))
		}
		next, stopStream = pull, stop
		switch {
		case ev.Task != nil:
			return sent{TaskID: ev.Task.ID, ContextID: ev.Task.ContextID, State: ev.Task.Status.State}, nil
		case ev.Message != nil:
			return sent{ContextID: ev.Message.ContextID, Reply: ev.Message.Text()}, nil
		case ev.StatusUpdate != nil:
			return sent{TaskID: ev.StatusUpdate.TaskID, ContextID: ev.StatusUpdate.ContextID, State: ev.StatusUpdate.Status.State}, nil
		}
		return sent{}, errors.New("a2a: the agent's stream did not start with a task")
	})
	if err != nil || s.TaskID == "" {
		return s, Task{}, err
	}
	graph.Emit(ctx, Update{Agent: t.name, TaskID: s.TaskID, ContextID: s.ContextID, State: s.State})
	var events iter.Seq2[StreamResponse, error]
	if next != nil {
		n := next
		next = nil
		events = func(yield func(StreamResponse, error) bool) {
			for {
				ev, err, ok := n()
				if !ok || !yield(ev, err) {
					return
				}
			}
		}
	} else if !s.State.Final() {
		events = t.client.SubscribeToTask(ctx, s.TaskID)
	}
	task, err := t.follow(ctx, s, events)
	return s, task, err
}

// send sends m to an agent that does not stream, for it to answer at
// once with the task.
func (t *Tool) send(ctx context.Context, m *Message) (sent, error) {
	res, err := t.client.SendMessage(ctx, SendMessageRequest{Message: m, Configuration: &SendMessageConfiguration{ReturnImmediately: true}})
	if err != nil {
		return sent{}, err
	}
	if res.Message != nil {
		return sent{ContextID: res.Message.ContextID, Reply: res.Message.Text()}, nil
	}
	return sent{TaskID: res.Task.ID, ContextID: res.Task.ContextID, State: res.Task.Status.State}, nil
}

// follow follows the task until it ends or waits for input: its stream
// (events; nil when the task is final), then, should the stream end
// before the task does, the task read again and subscribed to again,
// waiting a little longer each time (up to maxFollowWait), until the
// call's context ends. It returns the task (with the final status the
// stream gave, should the agent not have stored it yet).
func (t *Tool) follow(ctx context.Context, s sent, events iter.Seq2[StreamResponse, error]) (Task, error) {
	wait := 50 * time.Millisecond
	for {
		final := t.stream(ctx, s, events)
		task, err := t.client.GetTask(ctx, s.TaskID)
		if err != nil {
			return task, err
		}
		if !task.Status.State.Final() && final != nil {
			task.Status = *final
		}
		if task.Status.State.Final() {
			return task, nil
		}
		select {
		case <-ctx.Done():
			return task, fmt.Errorf("a2a: task %s of agent %s: %w", s.TaskID, t.name, context.Cause(ctx))
		case <-time.After(wait):
		}
		wait = min(2*wait, maxFollowWait)
		events = t.client.SubscribeToTask(ctx, s.TaskID)
	}
}

// maxFollowWait bounds the wait between two reads of a task whose stream
// ended before it did.
const maxFollowWait = 2 * time.Second

// stream emits the task's events as Updates and returns the final status
// it gave, if any.
func (t *Tool) stream(ctx context.Context, s sent, events iter.Seq2[StreamResponse, error]) *TaskStatus {
	var final *TaskStatus
	if events == nil {
		return nil
	}
	for ev, err := range events {
		if err != nil {
			// An agent may refuse to subscribe to a task that has just
			// ended: reading it says how it ended.
			return final
		}
		u := Update{Agent: t.name, TaskID: s.TaskID, ContextID: s.ContextID}
		switch {
		case ev.Task != nil:
			u.State = ev.Task.Status.State
		case ev.StatusUpdate != nil:
			u.State, u.Text = ev.StatusUpdate.Status.State, ev.StatusUpdate.Status.Message.Text()
			if u.State.Final() {
				final = &ev.StatusUpdate.Status
			}
		case ev.ArtifactUpdate != nil && ev.ArtifactUpdate.Artifact != nil:
			u.Text, u.Artifact = PartsText(ev.ArtifactUpdate.Artifact.Parts), true
		case ev.Message != nil:
			u.Text = ev.Message.Text()
		}
		graph.Emit(ctx, u)
	}
	return final
}

// answerText is what the model reads of a task: its artifacts when it
// completed; its state and message otherwise.
func answerText(agent string, task Task) string {
	var b strings.Builder
	for _, a := range task.Artifacts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(PartsText(a.Parts))
	}
	if task.Status.State == StateCompleted && b.Len() > 0 {
		return b.String()
	}
	msg := task.Status.Message.Text()
	switch task.Status.State {
	case StateInputRequired:
		return fmt.Sprintf("Agent %s needs more input (task %s, context_id %s): %s", agent, task.ID, task.ContextID, msg)
	case StateCompleted:
		return msg
	}
	return fmt.Sprintf("Agent %s's task %s ended %s. %s %s", agent, task.ID, strings.ToLower(strings.TrimPrefix(string(task.Status.State), "TASK_STATE_")), msg, b.String())
}
