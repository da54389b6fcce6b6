package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// encodeEvent turns ev into a recorded event. It runs when the event is
// emitted, so values that change later are encoded as they were.
func encodeEvent(runID string, seq int64, ev graph.Event) Event {
	out := Event{
		RunID: runID, Seq: seq, Kind: ev.Name(), Path: ev.Path, Node: ev.Node, Step: ev.Step,
		Attempt: ev.Attempt, Time: ev.Time, Duration: ev.Duration,
	}
	if ev.Err != nil {
		out.Error = ev.Err.Error()
	}
	var data any
	switch ev.Kind {
	case graph.EventUpdate:
		data = ev.Writes
	case graph.EventValues:
		// The state after every step would make a recording grow with
		// the square of the run; the final state is in the RunInfo.
	default:
		data = ev.Data
	}
	if p, ok := data.(*llm.ModelCall); ok && p != nil {
		data = *p
	}
	switch d := data.(type) {
	case nil:
		return out
	case llm.ModelCall:
		out.Agent, out.Hash, out.Request, out.Response = d.Agent, d.Hash, d.Request, d.Response
		d.Request, d.Response, d.Hash = nil, nil, ""
		data = d
	case tools.CallEvent:
		out.Agent = d.Agent
	case tools.ResultEvent:
		out.Agent = d.Agent
	case agentevent.Created:
		out.Agent = d.Agent
	case agentevent.Started:
		out.Agent = d.Agent
	case agentevent.Ended:
		out.Agent = d.Agent
	case error:
		data = d.Error()
	}
	raw, err := json.Marshal(data)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"encode_error": fmt.Sprintf("the event's payload (%T) cannot be encoded as JSON: %v", data, err)})
	}
	out.Payload = raw
	if out.Agent == "" && len(raw) > 0 && raw[0] == '{' {
		// Payloads of packages trace does not know, such as window
		// snapshots, may name their agent too.
		var named struct {
			Agent string `json:"agent"`
		}
		if json.Unmarshal(raw, &named) == nil {
			out.Agent = named.Agent
		}
	}
	return out
}

// EncodeInput renders a run's input as JSON — a list of
// {"channel", "value"} writes — for RunInfo.Input.
func EncodeInput(input []graph.Write) (json.RawMessage, error) {
	if input == nil {
		return nil, nil
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("trace: encode input: %w", err)
	}
	return raw, nil
}

// DecodeInput turns an input encoded by EncodeInput back into writes for
// r, each value decoded through its channel's type.
func DecodeInput(r *graph.Runnable, raw json.RawMessage) ([]graph.Write, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("trace: the run has no recorded input")
	}
	var writes []struct {
		Channel string          `json:"channel"`
		Value   json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &writes); err != nil {
		return nil, fmt.Errorf("trace: decode input: %w", err)
	}
	out := graph.Input()
	for i, w := range writes {
		ws, err := r.DecodeInput(map[string]json.RawMessage{w.Channel: w.Value})
		if err != nil {
			return nil, fmt.Errorf("trace: decode input write %d (channel %q): %w", i, w.Channel, err)
		}
		out = append(out, ws...)
	}
	return out, nil
}

// DescribeInput renders an input encoded by EncodeInput in one line for
// people — "channel: value" for each write, strings as they are, other
// values as JSON, each value cut to 120 characters — or "" when raw holds
// no input.
func DescribeInput(raw json.RawMessage) string {
	var writes []struct {
		Channel string          `json:"channel"`
		Value   json.RawMessage `json:"value"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &writes) != nil {
		return ""
	}
	parts := make([]string, 0, len(writes))
	for _, w := range writes {
		var s string
		if json.Unmarshal(w.Value, &s) != nil {
			s = string(w.Value)
		}
		s = strings.Join(strings.Fields(s), " ")
		if r := []rune(s); len(r) > 120 {
			s = string(r[:119]) + "…"
		}
		parts = append(parts, w.Channel+": "+s)
	}
	return strings.Join(parts, "; ")
}
