package postgres

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coorflow/coorflow/runs/eventlog"
	"github.com/coorflow/coorflow/trace"
)

// streamPrefix starts the key of a recording's stream in the event log:
// "trace/" and the run's id (the replicas' streams are keyed by the run's
// id alone, Temporal's "temporal/" and the thread).
const streamPrefix = "trace/"

// streamOf is the key of the stream of run id's events.
func streamOf(id string) string { return streamPrefix + id }

// meta is what a frame's Meta holds of its event: what the views do not
// filter on (they filter on the kind, the frame's name, and the path).
// Zero values are left out; at is in microseconds since the epoch, as
// the index of runs keeps its times.
type meta struct {
	Node     string `json:"node,omitempty"`
	Step     int    `json:"step,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	At       int64  `json:"at"`
	Duration int64  `json:"duration,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Error    string `json:"error,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// toFrame is e as a described frame of its run's stream: the payload is
// its bytes, the request and response its body (see joinBodies).
func toFrame(e trace.Event) (eventlog.Frame, error) {
	m, err := json.Marshal(meta{Node: e.Node, Step: e.Step, Attempt: e.Attempt, At: e.Time.UnixMicro(),
		Duration: int64(e.Duration), Agent: e.Agent, Error: e.Error, Hash: e.Hash})
	if err != nil {
		return eventlog.Frame{}, fmt.Errorf("postgres: encode event %d of run %q: %w", e.Seq, e.RunID, err)
	}
	return eventlog.Frame{ID: e.Seq, Name: e.Kind, Path: e.Path, Data: e.Payload, Meta: m,
		Body: joinBodies(e.Request, e.Response)}, nil
}

// fromFrame is the event of run id that f holds.
func fromFrame(id string, f eventlog.Frame) (trace.Event, error) {
	var m meta
	if err := json.Unmarshal(f.Meta, &m); err != nil {
		return trace.Event{}, fmt.Errorf("postgres: corrupt event %d of run %q: %w", f.ID, id, err)
	}
	req, resp, err := splitBodies(f.Body)
	if err != nil {
		return trace.Event{}, fmt.Errorf("postgres: corrupt event %d of run %q: %w", f.ID, id, err)
	}
	return trace.Event{RunID: id, Seq: f.ID, Kind: f.Name, Path: f.Path, Node: m.Node, Step: m.Step, Attempt: m.Attempt,
		Time: time.UnixMicro(m.At).UTC(), Duration: time.Duration(m.Duration), Agent: m.Agent,
		Payload: orNil(f.Data), Error: m.Error, Hash: m.Hash, Request: orNil(req), Response: orNil(resp)}, nil
}

// orNil is b as JSON, nil when empty: what an event has not.
func orNil(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

// joinBodies is a model call's request and response as one body: the
// request's length (4 bytes, big-endian), the request, the response; nil
// when both are empty. Migration 2 writes the same in SQL.
func joinBodies(request, response []byte) []byte {
	if len(request) == 0 && len(response) == 0 {
		return nil
	}
	b := make([]byte, 0, 4+len(request)+len(response))
	b = binary.BigEndian.AppendUint32(b, uint32(len(request)))
	return append(append(b, request...), response...)
}

// splitBodies undoes joinBodies.
func splitBodies(b []byte) (request, response []byte, err error) {
	if len(b) == 0 {
		return nil, nil, nil
	}
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("a body of %d bytes", len(b))
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, fmt.Errorf("a request of %d bytes in a body of %d", n, len(b))
	}
	return b[4 : 4+n], b[4+n:], nil
}
