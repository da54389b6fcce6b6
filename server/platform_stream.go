package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// platformFormat renders a run's events as the LangGraph Platform streams
// them: a metadata event with the run id first, then for each requested
// mode its events — values (the state), updates ({node: writes}, and
// {"__interrupt__": [...]}), messages (messages/metadata, messages/partial
// with the text so far, messages/complete at the end of a model call) or
// messages-tuple ([chunk, metadata]), custom (what the graph emits:
// custom), events (LangChain's on_* stream events), debug, tasks
// and checkpoints. Events of nested graphs and agents are sent as
// "mode|namespace" when stream_subgraphs is set; model tokens are always
// sent. A run that fails or is cancelled ends with an error event.
//
// Each event carries the id of the run's event it comes from, so a client
// resumes with Last-Event-ID; a message resumed mid-way restarts, under a
// new id, from the tokens after that id.
type platformFormat struct {
	root, runID, threadID string
	modes                 map[string]bool
	subgraphs             bool
	open                  map[string]*lgMessage // the message streaming at each path
	// stateless: a values event came without its state, as a recording
	// keeps them (only the run's final state): the run's end emits that.
	stateless bool
}

// lgMessage is a model's message as it streams.
type lgMessage struct {
	id, content string
}

// newPlatformFormat renders the events of run runID of workflow wf on
// thread, in modes.
func newPlatformFormat(wf *graph.Runnable, runID, thread string, modes []string, subgraphs bool) *platformFormat {
	f := &platformFormat{root: wf.Name(), runID: runID, threadID: thread, modes: map[string]bool{}, subgraphs: subgraphs,
		open: map[string]*lgMessage{}}
	for _, m := range modes {
		f.modes[m] = true
	}
	return f
}

func (f *platformFormat) filter() kindFilter { return nil }

func (f *platformFormat) head() []byte {
	data, _ := json.Marshal(map[string]any{"run_id": f.runID, "attempt": 1})
	return sseFrame("", "metadata", data)
}

func (f *platformFormat) truncated(dropped, firstID int64) []byte {
	data, _ := json.Marshal(map[string]int64{"dropped": dropped, "first_id": firstID})
	return sseFrame("", EventTruncated, data)
}

func (f *platformFormat) end(v Run, _ int64) []byte {
	if v.Error == nil {
		return nil
	}
	data, _ := json.Marshal(map[string]string{"error": v.Error.Code, "message": v.Error.Message})
	return sseFrame("", "error", data)
}

// recordedEvent is a frame's data, decoded.
type recordedEvent struct {
	Kind   string          `json:"kind"`
	Path   string          `json:"path"`
	Node   string          `json:"node"`
	Step   int             `json:"step"`
	Time   time.Time       `json:"time"`
	Writes []Write         `json:"writes"`
	State  json.RawMessage `json:"state"`
	Data   json.RawMessage `json:"data"`
	Error  string          `json:"error"`
}

// frameData is the JSON of an encoded frame (its data line).
func frameData(b []byte) []byte {
	_, data, ok := bytes.Cut(b, []byte("\ndata: "))
	if !ok {
		return nil
	}
	return bytes.TrimRight(data, "\n")
}

// engineKinds are the names of the engine's own events; the others are
// named custom events.
var engineKinds = func() map[string]bool {
	m := map[string]bool{}
	for k := graph.EventKind(1); k.String() != "unknown"; k++ {
		m[k.String()] = true
	}
	return m
}()

func (f *platformFormat) event(fr frame) []byte {
	var ev recordedEvent
	if err := json.Unmarshal(frameData(fr.data), &ev); err != nil {
		return nil
	}
	id := strconv.FormatInt(fr.id, 10)
	var out []byte
	emit := func(mode, ns string, data any) {
		name := mode
		if ns != "" {
			if !f.subgraphs && !strings.HasPrefix(mode, "messages") {
				return
			}
			if f.subgraphs {
				name += "|" + ns
			}
		}
		b, err := json.Marshal(data)
		if err != nil {
			return
		}
		out = append(out, sseFrame(id, name, b)...)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(ev.Path, f.root), "/")
	graphNS := strings.ReplaceAll(rel, "/", "|") // for the state of a graph at Path
	taskNS := ""                                 // for a task at Path: its graph's
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		taskNS = strings.ReplaceAll(rel[:i], "/", "|")
	}
	switch ev.Kind {
	case graph.EventValues.String():
		switch {
		case !f.modes["values"]:
		case len(ev.State) == 0 || string(ev.State) == "null":
			f.stateless = true // replayed from a recording: not null
		default:
			emit("values", graphNS, ev.State)
		}
	case graph.EventRunEnd.String():
		if f.stateless && graphNS == "" && len(ev.State) > 0 && string(ev.State) != "null" {
			emit("values", graphNS, ev.State) // the recording's final state
		}
	case graph.EventInterrupt.String():
		var ins []graph.InterruptInfo
		_ = json.Unmarshal(ev.Data, &ins)
		li := make([]lgInterrupt, len(ins))
		for i, in := range ins {
			li[i] = lgInterrupt{ID: in.ID, Value: in.Payload}
		}
		if f.modes["updates"] {
			emit("updates", graphNS, map[string]any{"__interrupt__": li})
		}
		if f.modes["values"] && len(ev.State) > 0 {
			var st map[string]any
			if json.Unmarshal(ev.State, &st) == nil {
				st["__interrupt__"] = li
				emit("values", graphNS, st)
			}
		}
	case graph.EventUpdate.String():
		if f.modes["updates"] {
			upd := map[string]any{}
			for _, w := range ev.Writes {
				upd[w.Channel] = w.Value
			}
			emit("updates", taskNS, map[string]any{ev.Node: upd})
		}
	case llm.EventToken:
		f.token(ev, taskNS, id, emit)
	case llm.EventModelCall:
		f.modelCall(ev, taskNS, emit)
	}
	f.debug(ev, taskNS, emit)
	f.streamEvents(ev, taskNS, emit)
	if f.modes["custom"] {
		f.custom(ev, taskNS, emit)
	}
	return out
}

// custom renders the custom mode: what the graph emits. A plain value
// (graph.Emit of a value without an event name) is sent as it was
// emitted, as LangGraph sends what a node's stream writer wrote; an event
// of the graph's own under a name, as {name, path, data}. coorflow's own
// events (model calls, tokens, tool calls, agents) are not the graph's:
// they stream in the messages, events and debug modes.
func (f *platformFormat) custom(ev recordedEvent, ns string, emit func(string, string, any)) {
	switch {
	case ev.Kind == graph.EventCustom.String():
		emit("custom", ns, ev.Data)
	case engineKinds[ev.Kind] || slices.Contains(coorflowEvents, ev.Kind):
	default:
		emit("custom", ns, map[string]any{"name": ev.Kind, "path": ev.Path, "data": ev.Data})
	}
}

// metadata is the metadata of a message streamed at the event's path.
func (f *platformFormat) metadata(ev recordedEvent, ns string) map[string]any {
	return map[string]any{
		"langgraph_node": ev.Node, "langgraph_step": ev.Step, "langgraph_path": ev.Path,
		"langgraph_checkpoint_ns": ns, "run_id": f.runID, "thread_id": f.threadID,
	}
}

// token renders a model's token, eventID the run's event it is. Each
// model call is a message of its own (a ReAct agent calls its model
// again at the same path after a tool call), as in LangGraph: its id
// names the run, the path and the event of its first token.
func (f *platformFormat) token(ev recordedEvent, ns, eventID string, emit func(string, string, any)) {
	var chunk string
	if json.Unmarshal(ev.Data, &chunk) != nil {
		return
	}
	m := f.open[ev.Path]
	first := m == nil
	if first {
		m = &lgMessage{id: fmt.Sprintf("run-%s-%s-%s", f.runID, strings.ReplaceAll(strings.TrimPrefix(ev.Path, f.root+"/"), "/", "."), eventID)}
		f.open[ev.Path] = m
	}
	m.content += chunk
	meta := f.metadata(ev, ns)
	if f.modes["messages"] {
		if first {
			emit("messages/metadata", ns, map[string]any{m.id: map[string]any{"metadata": meta}})
		}
		emit("messages/partial", ns, []any{aiMessage(m.id, m.content, nil)})
	}
	if f.modes["messages-tuple"] {
		emit("messages", ns, []any{map[string]any{"type": "AIMessageChunk", "id": m.id, "content": chunk}, meta})
	}
	if f.modes["events"] {
		emit("events", ns, map[string]any{"event": "on_chat_model_stream", "name": ev.Node, "run_id": m.id, "metadata": meta,
			"data": map[string]any{"chunk": map[string]any{"type": "AIMessageChunk", "id": m.id, "content": chunk}}})
	}
}

func (f *platformFormat) modelCall(ev recordedEvent, ns string, emit func(string, string, any)) {
	m := f.open[ev.Path]
	if m == nil {
		return
	}
	delete(f.open, ev.Path)
	var mc llm.ModelCall
	_ = json.Unmarshal(ev.Data, &mc)
	if f.modes["messages"] {
		emit("messages/complete", ns, []any{aiMessage(m.id, m.content, &mc)})
	}
}

// aiMessage is a model's message as LangChain serializes it.
func aiMessage(id, content string, mc *llm.ModelCall) map[string]any {
	msg := map[string]any{"type": "ai", "id": id, "content": content, "tool_calls": []any{}, "invalid_tool_calls": []any{},
		"additional_kwargs": map[string]any{}, "response_metadata": map[string]any{}}
	if mc != nil {
		msg["response_metadata"] = map[string]any{"model_name": mc.Model, "tier": mc.Tier}
		msg["usage_metadata"] = map[string]int{"input_tokens": mc.PromptTokens, "output_tokens": mc.CompletionTokens,
			"total_tokens": mc.PromptTokens + mc.CompletionTokens}
	}
	return msg
}

// debug renders the debug, tasks and checkpoints modes.
func (f *platformFormat) debug(ev recordedEvent, ns string, emit func(string, string, any)) {
	if !f.modes["debug"] && !f.modes["tasks"] && !f.modes["checkpoints"] {
		return
	}
	var typ string
	var payload map[string]any
	switch ev.Kind {
	case graph.EventNodeStart.String():
		typ, payload = "task", map[string]any{"id": ev.Path, "name": ev.Node, "input": nil, "triggers": []string{}}
	case graph.EventNodeEnd.String():
		var errv any
		if ev.Error != "" {
			errv = ev.Error
		}
		typ, payload = "task_result", map[string]any{"id": ev.Path, "name": ev.Node, "error": errv, "result": []any{}, "interrupts": []any{}}
	case graph.EventCheckpoint.String():
		var cp string
		_ = json.Unmarshal(ev.Data, &cp)
		typ, payload = "checkpoint", map[string]any{
			"config":   map[string]any{"configurable": map[string]string{"thread_id": f.threadID, "checkpoint_ns": strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(ev.Path, f.root), "/"), "/", "|"), "checkpoint_id": cp}},
			"metadata": map[string]any{"step": ev.Step},
		}
		ns = strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(ev.Path, f.root), "/"), "/", "|")
	default:
		return
	}
	if f.modes["debug"] {
		emit("debug", ns, map[string]any{"type": typ, "timestamp": ev.Time, "step": ev.Step, "payload": payload})
	}
	if typ == "checkpoint" && f.modes["checkpoints"] {
		emit("checkpoints", ns, payload)
	}
	if typ != "checkpoint" && f.modes["tasks"] {
		emit("tasks", ns, payload)
	}
}

// streamEvents renders the events mode: LangChain's stream events.
func (f *platformFormat) streamEvents(ev recordedEvent, ns string, emit func(string, string, any)) {
	if !f.modes["events"] {
		return
	}
	var name string
	data := map[string]any{}
	switch ev.Kind {
	case graph.EventNodeStart.String():
		name = "on_chain_start"
	case graph.EventNodeEnd.String():
		name = "on_chain_end"
	case llm.EventModelCall:
		name, data["output"] = "on_chat_model_end", ev.Data
	case tools.EventToolCall:
		name, data["input"] = "on_tool_start", ev.Data
	case tools.EventToolResult:
		name, data["output"] = "on_tool_end", ev.Data
	case agentevent.EventStart, agentevent.EventEnd, agentevent.EventCreated, agentevent.EventSnapshot, agentevent.EventWarning:
		name, data = "on_custom_event", map[string]any{"name": ev.Kind, "data": ev.Data}
	default:
		return
	}
	emit("events", ns, map[string]any{"event": name, "name": ev.Node, "run_id": f.runID, "tags": []string{}, "metadata": f.metadata(ev, ns), "data": data})
}
