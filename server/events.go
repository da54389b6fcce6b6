package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/coorflow/coorflow/graph"
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

// eventLog keeps the most recent events of a run, within a count and a
// size, for streams that attach at any time. One goroutine appends; any
// number read. Once the run has ended and no stream reads them, the
// frames are dropped: a finished run's events are read back from the
// Recorder, if any.
type eventLog struct {
	mu sync.Mutex
	// frames[head:] are held, oldest first.
	frames    []frame
	head      int
	bytes     int
	maxFrames int
	maxBytes  int
	next      int64 // id of the next frame
	closed    bool
	readers   int // streams attached
	// wake is closed at the next append or at close, when a reader is
	// waiting on it.
	wake    chan struct{}
	waiting bool
}

func (l *eventLog) init(maxFrames, maxBytes int) {
	l.maxFrames, l.maxBytes = maxFrames, maxBytes
	l.next = 1
	l.wake = make(chan struct{})
}

// nextID is the id the next appended frame gets; only the appender calls it.
func (l *eventLog) nextID() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// append adds a frame and drops the oldest ones beyond the limits; the
// newest frame is always kept.
func (l *eventLog) append(name string, data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frames = append(l.frames, frame{id: l.next, name: name, data: data})
	l.next++
	l.bytes += len(data)
	for held := len(l.frames) - l.head; held > 1 && (held > l.maxFrames || l.bytes > l.maxBytes); held-- {
		l.bytes -= len(l.frames[l.head].data)
		l.frames[l.head] = frame{}
		l.head++
	}
	if l.head >= 32 && l.head*2 >= len(l.frames) {
		n := copy(l.frames, l.frames[l.head:])
		clear(l.frames[n:])
		l.frames, l.head = l.frames[:n], 0
	}
	l.signal()
}

func (l *eventLog) signal() {
	if l.waiting {
		close(l.wake)
		l.wake = make(chan struct{})
		l.waiting = false
	}
}

// close marks the end of the run's events.
func (l *eventLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.signal()
	l.releaseLocked()
}

// attach keeps the frames, even after close, until the matching detach: a
// stream attaches before it reads.
func (l *eventLog) attach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.readers++
}

func (l *eventLog) detach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.readers--
	l.releaseLocked()
}

// releaseLocked drops the frames of a closed log no stream reads; since
// reports them as dropped. l.mu is held.
func (l *eventLog) releaseLocked() {
	if l.closed && l.readers == 0 {
		l.frames, l.head, l.bytes = nil, 0, 0
	}
}

func (l *eventLog) count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

// since returns the held frames after id after (appended to buf), how
// many frames after it were dropped, whether the log is closed, and a
// channel closed when there is more to read.
func (l *eventLog) since(after int64, buf []frame) (frames []frame, dropped int64, closed bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.frames[l.head:]
	first := l.next - int64(len(held)) // id of the oldest held frame
	if after < first-1 {
		dropped = first - 1 - after
		after = first - 1
	}
	if skip := after - (first - 1); skip < int64(len(held)) {
		buf = append(buf, held[skip:]...)
	}
	if len(buf) == 0 && !l.closed {
		l.waiting = true
	}
	return buf, dropped, l.closed, l.wake
}
