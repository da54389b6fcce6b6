package tools

import (
	"encoding/json"
	"time"
)

// The names of the events a Caller publishes in a run's stream
// (graph.Event.Name): what streams, recorders and clients show.
const (
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
)

// CallEvent is the payload of a tool_call event: a tool call started.
type CallEvent struct {
	Agent string          `json:"agent,omitempty"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Args  json.RawMessage `json:"args,omitempty"`
}

// EventName names the event: "tool_call".
func (CallEvent) EventName() string { return EventToolCall }

// ResultEvent is the payload of a tool_result event: a tool call ended.
type ResultEvent struct {
	Agent string `json:"agent,omitempty"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	// Status is "ok", "degraded" (it timed out; the model was told to go
	// on) or "failed" (Status.String).
	Status   string        `json:"status"`
	Output   string        `json:"output"`
	Duration time.Duration `json:"duration"`
}

// EventName names the event: "tool_result".
func (ResultEvent) EventName() string { return EventToolResult }
