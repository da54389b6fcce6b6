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
	Tier  string `json:"tier,omitempty"`
	Model string `json:"model,omitempty"`
	// PromptTokens counts every input token, CachedTokens and
	// CacheWriteTokens included; CompletionTokens every output token,
	// ReasoningTokens included (see TokenUsage). Estimated is true when
	// the provider reported no usage and the counts are estimates.
	PromptTokens     int  `json:"prompt_tokens"`
	CachedTokens     int  `json:"cached_tokens,omitempty"`
	CacheWriteTokens int  `json:"cache_write_tokens,omitempty"`
	CompletionTokens int  `json:"completion_tokens"`
	ReasoningTokens  int  `json:"reasoning_tokens,omitempty"`
	Estimated        bool `json:"estimated,omitempty"`
	// CostUSD is what the call cost in US dollars at the model's price
	// (Price, LookupPrice); nil when the model has no price, so the cost
	// is unknown.
	CostUSD  *float64      `json:"cost_usd,omitempty"`
	Duration time.Duration `json:"duration"`
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

// Usage returns the call's token usage.
func (c ModelCall) Usage() TokenUsage {
	return TokenUsage{PromptTokens: c.PromptTokens, CachedTokens: c.CachedTokens, CacheWriteTokens: c.CacheWriteTokens,
		CompletionTokens: c.CompletionTokens, ReasoningTokens: c.ReasoningTokens, Estimated: c.Estimated}
}
