package trace

import (
	"encoding/json"
	"fmt"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// DecodePayload decodes the data of a custom event named name, as JSON,
// into the Go value the packages trace knows emit: an llm.Token or
// llm.ModelCall, a tools.CallEvent or ResultEvent, an agent event
// (agentevent), whose Warning holds its value as JSON decodes it. ok is
// false for other names. It is a graph.PayloadDecoder, for events that
// crossed a process (temporalrun's streams).
func DecodePayload(name string, data json.RawMessage) (v any, ok bool, err error) {
	switch name {
	case llm.EventToken:
		return decodeAs[llm.Token](data)
	case llm.EventModelCall:
		return decodeAs[llm.ModelCall](data)
	case tools.EventToolCall:
		return decodeAs[tools.CallEvent](data)
	case tools.EventToolResult:
		return decodeAs[tools.ResultEvent](data)
	case agentevent.EventCreated:
		return decodeAs[agentevent.Created](data)
	case agentevent.EventReused:
		return decodeAs[agentevent.Reused](data)
	case agentevent.EventStart:
		return decodeAs[agentevent.Started](data)
	case agentevent.EventEnd:
		return decodeAs[agentevent.Ended](data)
	case agentevent.EventDirectory:
		return decodeAs[agentevent.Directory](data)
	case agentevent.EventWarning:
		var w agentevent.Warning
		if err := json.Unmarshal(data, &w.Value); err != nil {
			return nil, true, fmt.Errorf("trace: decode a %s event: %w", name, err)
		}
		return w, true, nil
	}
	return nil, false, nil
}

func decodeAs[T any](data json.RawMessage) (any, bool, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, true, fmt.Errorf("trace: decode a %T event: %w", v, err)
	}
	return v, true, nil
}
