package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/trace"
)

// A stream reads a run's recorded events a page at a time: at most
// replayPage events and replayPageBytes of them (but one larger event).
const (
	replayPage      = 256
	replayPageBytes = 1 << 20
)

// replayRecorded writes the recorded events of the ended run ru with ids
// in (after, until] that kinds selects, as the stream sent them live, but
// for the state of values events, which the Recorder does not keep. It
// returns the id it got to — until, unless reading the recording failed
// (logged) — and the error of a write to the client.
func (s *Server) replayRecorded(r *http.Request, out sseWriter, ru *run, after, until int64, format streamFormat) (int64, error) {
	store := s.cfg.Recorder.Store()
	info, err := store.Run(r.Context(), ru.id)
	if err != nil {
		if !errors.Is(err, trace.ErrNotFound) {
			s.log.ErrorContext(r.Context(), "server: read a run's recording", "request_id", requestID(r.Context()), "run", ru.id, "err", err)
		}
		return after, nil
	}
	if after >= until {
		return until, nil
	}
	q := trace.EventQuery{After: after, Until: until, Limit: replayPage, MaxBytes: replayPageBytes, Bodies: true}
	for k := range format.filter() {
		q.Kinds = append(q.Kinds, k)
	}
	slices.Sort(q.Kinds)
	sent := after
	for ev, err := range trace.AllEvents(r.Context(), store, ru.id, q) {
		if err != nil {
			s.log.ErrorContext(r.Context(), "server: read a run's recorded events", "request_id", requestID(r.Context()), "run", ru.id, "err", err)
			return sent, nil
		}
		b := format.event(frame{id: ev.Seq, name: ev.Kind, data: recordedFrame(ev, info)})
		if b != nil {
			if err := out.write(b); err != nil {
				return sent, err
			}
		}
		sent = ev.Seq
	}
	return until, nil
}

// recordedFrame renders a recorded event of run as the server-sent event
// the run's stream sent.
func recordedFrame(ev trace.Event, run trace.RunInfo) []byte {
	out := Event{
		ID: ev.Seq, RunID: ev.RunID, Kind: ev.Kind, Path: ev.Path, Node: ev.Node, Step: ev.Step,
		Attempt: ev.Attempt, Time: ev.Time, Error: ev.Error,
	}
	if ev.Duration > 0 {
		out.DurationMS = float64(ev.Duration) / float64(time.Millisecond)
	}
	var err error
	switch ev.Kind {
	case graph.EventUpdate.String():
		err = json.Unmarshal(ev.Payload, &out.Writes)
	case llm.EventModelCall:
		var mc llm.ModelCall
		err = json.Unmarshal(ev.Payload, &mc)
		mc.Request, mc.Response, mc.Hash = ev.Request, ev.Response, ev.Hash
		out.Data = mc
	case graph.EventRunEnd.String(), graph.EventInterrupt.String():
		if ev.Path == run.Graph {
			out.State = run.FinalState
		}
		fallthrough
	default:
		if len(ev.Payload) > 0 {
			out.Data = ev.Payload
		}
	}
	data, jerr := json.Marshal(out)
	if err == nil {
		err = jerr
	}
	if err != nil {
		out.Data, out.Writes, out.State = nil, nil, nil
		out.DataError = "the recorded event's payload cannot be decoded: " + err.Error()
		data, _ = json.Marshal(out)
	}
	return sseFrame(strconv.FormatInt(ev.Seq, 10), ev.Kind, data)
}
