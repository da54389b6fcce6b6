package server

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/trace"
)

// recordedAfter is the sequence number after which the recording of ru,
// taken over, goes on: after the last event the replica that died shared,
// or after the last one it recorded if its recording got further than its
// stream. (Continuing after the shared one, this replica's first events
// would be numbered as the dead one's last recorded ones, and a store
// keeps the event it has: the new replica's, its model calls' usage among
// them, would be lost.)
func (s *Server) recordedAfter(ru *run, shared int64) int64 {
	last := shared
	for e, err := range trace.AllEvents(ru.ctx, s.cfg.Recorder.Store(), ru.id, trace.EventQuery{After: shared}) {
		if err != nil {
			s.log.ErrorContext(ru.ctx, "server: read the recording of a run taken over", "run", ru.id, "err", err)
			return shared
		}
		last = e.Seq
	}
	return last
}

// recordingFailed logs why ru is not recorded, or not whole.
func (s *Server) recordingFailed(ru *run, err error) {
	if errors.Is(err, trace.ErrLimit) {
		s.log.WarnContext(ru.ctx, "server: the run's recording stopped at its owner's storage quota (Config.MaxStoredBytes)", "run", ru.id, "owner", ru.owner, "err", err)
		return
	}
	s.log.ErrorContext(ru.ctx, "server: recording the run failed", "run", ru.id, "err", err)
}

// recordedAnswers is what a resume run records as its input
// (RunInfo.Input of a StartResume run): the request's answers, as
// {"resume": answer} or {"resume_each": {"<interrupt id>": answer}}. Nil
// when they do not encode.
func recordedAnswers(one json.RawMessage, each map[string]json.RawMessage) json.RawMessage {
	v := struct {
		Resume     json.RawMessage            `json:"resume,omitempty"`
		ResumeEach map[string]json.RawMessage `json:"resume_each,omitempty"`
	}{one, each}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return raw
}

// describeAnswers says a resume run's recorded answers in one line, as
// trace.DescribeInput says an input: "answered: feedback: …".
func describeAnswers(raw json.RawMessage) string {
	var v struct {
		Resume     json.RawMessage            `json:"resume"`
		ResumeEach map[string]json.RawMessage `json:"resume_each"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var parts []string
	if len(v.Resume) > 0 {
		parts = append(parts, describeValue(v.Resume, 0))
	}
	for _, id := range slices.Sorted(maps.Keys(v.ResumeEach)) {
		parts = append(parts, id+": "+describeValue(v.ResumeEach[id], 0))
	}
	if len(parts) == 0 {
		return ""
	}
	s := "answered: " + strings.Join(parts, "; ")
	if r := []rune(s); len(r) > 160 {
		s = string(r[:159]) + "…"
	}
	return s
}

// describeValue says a JSON answer in one line: a string as it is, an
// object's fields as "name: value, …" (to depth 2), anything else as JSON.
func describeValue(raw json.RawMessage, depth int) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.Join(strings.Fields(s), " ")
	}
	var obj map[string]json.RawMessage
	if depth < 2 && json.Unmarshal(raw, &obj) == nil && len(obj) > 0 {
		fields := make([]string, 0, len(obj))
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			fields = append(fields, k+": "+describeValue(obj[k], depth+1))
		}
		return strings.Join(fields, ", ")
	}
	return strings.Join(strings.Fields(string(raw)), " ")
}
