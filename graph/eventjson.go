package graph

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file carries a run's events across processes, for runners that
// drive the engine elsewhere (Step, RunTasks): which events a stream takes
// as plain data (EventSpec), where Step and RunTasks send them (StreamTo),
// and an event as JSON that reads back as the same Go values
// (EncodeEvent, DecodeEvent).

// EventSpec is the selection of events a stream takes (the Events,
// CustomEvents and SkipCustomEvents options) as plain data.
type EventSpec struct {
	// Kinds are the kinds taken.
	Kinds []EventKind `json:"kinds"`
	// Only, when not nil, names the only custom events taken; Skip those
	// left out.
	Only []string `json:"only"`
	Skip []string `json:"skip,omitempty"`
}

// spec returns f as data.
func (f eventFilter) spec() EventSpec {
	var s EventSpec
	for k := EventKind(1); k < maxEventKind; k++ {
		if f.kinds.has(k) {
			s.Kinds = append(s.Kinds, k)
		}
	}
	if f.names != nil {
		s.Only, s.Skip = slices.Clone(f.names.only), slices.Clone(f.names.skip)
	}
	return s
}

// Streams reports whether the selection takes any event.
func (s EventSpec) Streams() bool { return len(s.Kinds) > 0 }

// Takes reports whether the selection takes events of kind k, and for a
// custom event (EventCustom) whether it takes those named name.
func (s EventSpec) Takes(k EventKind, name string) bool {
	if !slices.Contains(s.Kinds, k) {
		return false
	}
	return k != EventCustom || (s.Only == nil || slices.Contains(s.Only, name)) && !slices.Contains(s.Skip, name)
}

// WithEvents selects the events a stream takes as s says: the option that
// gives a run the selection Spec reported for another.
func WithEvents(s EventSpec) Option {
	return func(c *config) {
		var f eventFilter
		for _, k := range s.Kinds {
			if k > 0 && k < maxEventKind {
				f.kinds |= k.mask()
			}
		}
		if s.Only != nil || len(s.Skip) > 0 {
			f.names = &nameFilter{only: slices.Clone(s.Only), skip: slices.Clone(s.Skip)}
		}
		c.events = f
	}
}

// StreamTo makes Step and RunTasks send the events of what they run to
// yield, selected as a Stream's are (all of them unless Events,
// CustomEvents, SkipCustomEvents or WithEvents narrow them): a runner
// that drives the engine elsewhere forwards them to its caller. yield
// returning false stops the step, as breaking out of Stream does. Invoke
// and Stream ignore it.
func StreamTo(yield func(Event) bool) Option { return func(c *config) { c.sink = yield } }

// EventRecord is an Event as JSON: Writes and State are encoded through
// their channels' types and decode as the same Go values; Data holds the
// kind's payload (for a custom event, the emitted value as JSON, which the
// reader decodes by the event's name); Err keeps only its message, which
// a runner may replace with a richer encoding of its own.
type EventRecord struct {
	Kind     EventKind       `json:"kind"`
	Name     string          `json:"name"`
	Path     string          `json:"path"`
	Node     string          `json:"node,omitempty"`
	Step     int             `json:"step"`
	Attempt  int             `json:"attempt,omitempty"`
	Duration time.Duration   `json:"duration,omitempty"`
	Time     time.Time       `json:"time"`
	Writes   json.RawMessage `json:"writes,omitempty"`
	State    json.RawMessage `json:"state,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Err      string          `json:"error,omitempty"`
}

// EncodeEvent turns an event of a run of r (or of one of its subgraphs)
// into a record. A value that does not encode as JSON is an error.
func (r *Runnable) EncodeEvent(ev Event) (EventRecord, error) {
	rec := EventRecord{Kind: ev.Kind, Name: ev.Name(), Path: ev.Path, Node: ev.Node, Step: ev.Step,
		Attempt: ev.Attempt, Duration: ev.Duration, Time: ev.Time}
	if ev.Err != nil {
		rec.Err = ev.Err.Error()
	}
	var err error
	if len(ev.Writes) > 0 {
		var recs []writeRecord
		if recs, err = encodeWriteValues(ev.Writes); err == nil {
			rec.Writes, err = json.Marshal(recs)
		}
		if err != nil {
			return rec, fmt.Errorf("graph: encode the writes of event %s at %s: %w", rec.Name, ev.Path, err)
		}
	}
	if ev.State.d != nil {
		if rec.State, err = encodeState(ev.State); err != nil {
			return rec, fmt.Errorf("graph: encode the state of event %s at %s: %w", rec.Name, ev.Path, err)
		}
	}
	if ev.Data != nil {
		if rec.Data, err = json.Marshal(ev.Data); err != nil {
			return rec, fmt.Errorf("graph: encode the data of event %s at %s (%T): %w", rec.Name, ev.Path, ev.Data, err)
		}
	}
	return rec, nil
}

// encodeWriteValues encodes writes through their own channels.
func encodeWriteValues(ws []Write) ([]writeRecord, error) {
	out := make([]writeRecord, len(ws))
	for i, w := range ws {
		data, err := w.ch.encode(w.value)
		if err != nil {
			return nil, err
		}
		out[i] = writeRecord{Channel: w.Channel(), Value: data}
	}
	return out, nil
}

func encodeState(s State) (json.RawMessage, error) {
	vals := make(map[string]json.RawMessage)
	for i, c := range s.d.layout.channels {
		if v := s.d.vals[i]; v != nil {
			data, err := c.encode(v)
			if err != nil {
				return nil, err
			}
			vals[c.Name()] = data
		}
	}
	return json.Marshal(vals)
}

// PayloadDecoder decodes the data of a custom event named name into the
// value its emitter passed to Emit; ok false leaves it to the default (the
// JSON value as encoding/json decodes it into an any).
type PayloadDecoder func(name string, data json.RawMessage) (v any, ok bool, err error)

// DecodeEvent reads back an event EncodeEvent encoded for r: writes and
// state through the channels of the graph (or subgraph) the event's path
// names, the kinds' payloads as the engine emits them ([]string for a
// step's nodes, []InterruptInfo, a checkpoint id, a Status), a custom
// event's data through payload. Err, if any, is an error with the
// message.
func (r *Runnable) DecodeEvent(rec EventRecord, payload PayloadDecoder) (Event, error) {
	ev := Event{Kind: rec.Kind, Path: rec.Path, Node: rec.Node, Step: rec.Step, Attempt: rec.Attempt,
		Duration: rec.Duration, Time: rec.Time}
	if rec.Err != "" {
		ev.Err = remoteError(rec.Err)
	}
	if len(rec.Writes) > 0 {
		owner := r.at(parentPath(rec.Path))
		if owner == nil {
			return ev, fmt.Errorf("graph: event %s: no graph runs at %q", rec.Name, parentPath(rec.Path))
		}
		var recs []writeRecord
		if err := json.Unmarshal(rec.Writes, &recs); err != nil {
			return ev, fmt.Errorf("graph: decode the writes of event %s at %s: %w", rec.Name, rec.Path, err)
		}
		ws, err := owner.layout.decodeWrites(recs)
		if err != nil {
			return ev, fmt.Errorf("graph: decode the writes of event %s at %s: %w", rec.Name, rec.Path, err)
		}
		ev.Writes = ws
	}
	if len(rec.State) > 0 {
		s, err := r.decodeState(rec.Path, rec.State)
		if err != nil {
			return ev, fmt.Errorf("graph: decode the state of event %s at %s: %w", rec.Name, rec.Path, err)
		}
		ev.State = s
	}
	if len(rec.Data) > 0 {
		v, err := decodeData(rec, payload)
		if err != nil {
			return ev, fmt.Errorf("graph: decode the data of event %s at %s: %w", rec.Name, rec.Path, err)
		}
		ev.Data = v
	}
	if rec.Kind == EventCustom && rec.Name != "" && nameOf(ev.Data) != rec.Name {
		ev.Data = NamedValue{Event: rec.Name, Value: ev.Data}
	}
	return ev, nil
}

// NamedValue is the payload DecodeEvent gives a custom event whose name
// the PayloadDecoder does not know (or whose payload travelled without
// its data): the value as encoding/json decodes it into an any, under the
// event's name. It encodes as Value.
type NamedValue struct {
	Event string
	Value any
}

// EventName is the event's name.
func (v NamedValue) EventName() string { return v.Event }

// MarshalJSON encodes Value, as the emitted value encoded.
func (v NamedValue) MarshalJSON() ([]byte, error) { return json.Marshal(v.Value) }

// remoteError is an error known by its message.
type remoteError string

func (e remoteError) Error() string { return string(e) }

func decodeData(rec EventRecord, payload PayloadDecoder) (any, error) {
	var err error
	switch rec.Kind {
	case EventStepStart:
		var v []string
		err = json.Unmarshal(rec.Data, &v)
		return v, err
	case EventInterrupt:
		var v []InterruptInfo
		err = json.Unmarshal(rec.Data, &v)
		return v, err
	case EventCheckpoint:
		var v string
		err = json.Unmarshal(rec.Data, &v)
		return v, err
	case EventRunEnd:
		var v Status
		err = json.Unmarshal(rec.Data, &v)
		return v, err
	case EventCustom:
		if payload != nil {
			if v, ok, err := payload(rec.Name, rec.Data); ok || err != nil {
				return v, err
			}
		}
	}
	var v any
	err = json.Unmarshal(rec.Data, &v)
	return v, err
}

// decodeState decodes the channel values of the graph whose run has path.
func (r *Runnable) decodeState(path string, data json.RawMessage) (State, error) {
	g := r.at(path)
	if g == nil {
		return State{}, fmt.Errorf("no graph runs at %q", path)
	}
	var vals map[string]json.RawMessage
	if err := json.Unmarshal(data, &vals); err != nil {
		return State{}, err
	}
	d := &stateData{layout: g.layout, vals: make([]any, len(g.layout.channels))}
	for name, raw := range vals {
		ch, slot, ok := g.layout.channel(name)
		if !ok {
			return State{}, fmt.Errorf("%w %q", ErrUnknownChannel, name)
		}
		v, err := ch.decode(raw)
		if err != nil {
			return State{}, err
		}
		d.vals[slot] = v
	}
	return State{d: d}, nil
}

// at returns the graph whose run has the event path path: r for its own
// name, a subgraph for the path of its node (node[i] for a packet's
// task), nil for any other.
func (r *Runnable) at(path string) *Runnable {
	rest, ok := strings.CutPrefix(path, r.name)
	if !ok || (rest != "" && rest[0] != '/') {
		return nil
	}
	g := r
	for seg := range strings.SplitSeq(strings.TrimPrefix(rest, "/"), "/") {
		if seg == "" {
			continue
		}
		if i := strings.IndexByte(seg, '['); i >= 0 {
			seg = seg[:i]
		}
		n, ok := g.nodes[seg]
		if !ok || n.sub == nil {
			return nil
		}
		g = n.sub
	}
	return g
}

// parentPath is path without its last segment.
func parentPath(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return ""
}
