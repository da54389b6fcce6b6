package llm

import (
	"encoding/json"
	"time"
)

// The names of the events Observe publishes in a run's stream
// (graph.Event.Name): what streams, recorders and clients show.
const (
	EventToken     = "token"
	EventModelCall = "model_call"
)

// Token is the payload of a token event: a chunk of a model's text, as it
// streams.
type Token string

// EventName names the event: "token".
func (Token) EventName() string { return EventToken }

// ModelCall is the payload of a model_call event: one model call ended.
type ModelCall struct {
	Agent string `json:"agent,omitempty"`
	// Tier is the model tier asked for (basic, reasoning, vision, code);
	// Model the model that answered.
	Tier             string        `json:"tier,omitempty"`
	Model            string        `json:"model,omitempty"`
	PromptTokens     int           `json:"prompt_tokens"`
	CompletionTokens int           `json:"completion_tokens"`
	Duration         time.Duration `json:"duration"`
	// Replayed is true when the result came from the journal.
	Replayed bool   `json:"replayed,omitempty"`
	Err      string `json:"error,omitempty"`
	// Request holds the messages sent (EncodeRequest) and Response the
	// choices received (DecodeResponse), as JSON, when the stream takes
	// model calls (for recorders and replay). Hash identifies the
	// request: the same messages and tools give the same hash.
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	Hash     string          `json:"hash,omitempty"`
}

// EventName names the event: "model_call".
func (ModelCall) EventName() string { return EventModelCall }
