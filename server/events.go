package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
)

// Event is the data of one server-sent event: a graph.Event as JSON. Which
// fields are set depends on Kind, as in graph.Event.
type Event struct {
	// ID numbers the run's events from 1; it is also the SSE id, which a
	// client sends back as Last-Event-ID to re-attach.
	ID    int64  `json:"id"`
	RunID string `json:"run_id"`
	// Kind is the event's name (graph.Event.Name): run_start, node_end,
	// update, values, token, tool_call, interrupt, error, ...
	Kind    string    `json:"kind"`
	Path    string    `json:"path"`
	Node    string    `json:"node,omitempty"`
	Step    int       `json:"step"`
	Attempt int       `json:"attempt,omitempty"`
	Time    time.Time `json:"time"`
	// DurationMS is a node's duration (node_end).
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Writes are a task's writes (update), in apply order.
	Writes []Write `json:"writes,omitempty"`
	// State holds the channel values (values, run_end, interrupt).
	State json.RawMessage `json:"state,omitempty"`
	// Data is the kind's payload: the node names of a step, a token's
	// text, an llm.ModelCall, a tools.CallEvent or ResultEvent, an agent
	// event (agentevent), the interrupts, a checkpoint id, the run's
	// status, the value of a custom event.
	Data any `json:"data,omitempty"`
	// Error is the failure (error, node_end).
	Error string `json:"error,omitempty"`
	// DataError says why Data could not be encoded, when it could not.
	DataError string `json:"data_error,omitempty"`
}

// Write is one write of a task to a channel.
type Write struct {
	Channel string `json:"channel"`
	Value   any    `json:"value"`
}

// The names of the events the server adds to a run's own.
const (
	// EventEnd is the last event of every stream; its data is the Run.
	EventEnd = "end"
	// EventTruncated tells a client that events it asked for were dropped
	// from the run's buffer; its data is {"dropped": n, "first_id": id}.
	EventTruncated = "truncated"
)

// encodeFrame renders ev, named name (ev.Name()), as a server-sent event
// with id.
func encodeFrame(id int64, runID, name string, ev graph.Event) []byte {
	out := Event{
		ID: id, RunID: runID, Kind: name, Path: ev.Path, Node: ev.Node, Step: ev.Step,
		Attempt: ev.Attempt, Time: ev.Time, Data: ev.Data,
	}
	for _, w := range ev.Writes {
		out.Writes = append(out.Writes, Write{Channel: w.Channel(), Value: w.Value()})
	}
	if ev.Duration > 0 {
		out.DurationMS = float64(ev.Duration) / float64(time.Millisecond)
	}
	var stateErr error
	switch ev.Kind {
	case graph.EventValues, graph.EventRunEnd, graph.EventInterrupt:
		out.State, stateErr = json.Marshal(ev.State)
	}
	if ev.Err != nil {
		out.Error = ev.Err.Error()
	}
	data, err := json.Marshal(out)
	if err == nil && stateErr != nil {
		err = stateErr
	}
	if err != nil {
		out.Data, out.Writes, out.State = nil, nil, nil
		out.DataError = fmt.Sprintf("the event's payload cannot be encoded as JSON: %v", err)
		data, _ = json.Marshal(out)
	}
	return sseFrame(strconv.FormatInt(id, 10), name, data)
}

// sseFrame renders one server-sent event. data is one line of JSON.
func sseFrame(id, event string, data []byte) []byte {
	b := make([]byte, 0, len(data)+len(event)+len(id)+24)
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// frame is one encoded event of a run.
type frame struct {
	id   int64
	name string // the event's name
	data []byte
}

// eventLog is a run's events (its runs.Handle's) as the server's streams
// read them.
type eventLog struct{ h *runs.Handle }

func (l eventLog) attach() { l.h.Attach() }
func (l eventLog) detach() { l.h.Detach() }

// since returns the held frames after id after (appended to buf), how
// many frames after it were dropped, whether the log is closed, and a
// channel closed when there is more to read (runs.EventBuffer.Since).
func (l eventLog) since(after int64, buf []frame) (frames []frame, dropped int64, closed bool, wake <-chan struct{}) {
	held, dropped, closed, wake := l.h.Events(after, nil)
	for _, f := range held {
		buf = append(buf, frame{id: f.ID, name: f.Name, data: f.Data})
	}
	return buf, dropped, closed, wake
}
