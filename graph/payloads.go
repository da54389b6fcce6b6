package graph

import (
	"encoding/json"
	"time"
)

// The payloads below are the Data of the events that packages above graph
// publish (model calls, tools, agents). They live here so that every
// consumer of a stream — the CLI, the HTTP server, the tracer, the run
// viewer — reads one contract.

// ModelCall is the Data of EventModelCall: one model call ended.
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
	// Request holds the messages sent and Response the choices received,
	// as JSON, when the stream takes model calls (for recorders and
	// replay). Hash identifies the request: the same messages and tools
	// give the same hash.
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	Hash     string          `json:"hash,omitempty"`
}

// ToolCall is the Data of EventToolCall: a tool call started.
type ToolCall struct {
	Agent string          `json:"agent,omitempty"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Args  json.RawMessage `json:"args,omitempty"`
}

// ToolResult is the Data of EventToolResult: a tool call ended.
type ToolResult struct {
	Agent string `json:"agent,omitempty"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	// Status is "ok", "degraded" (it timed out; the model was told to go
	// on) or "failed".
	Status   string        `json:"status"`
	Output   string        `json:"output"`
	Duration time.Duration `json:"duration"`
}

// AgentEvent is the Data of EventAgentCreated, EventAgentStart and
// EventAgentEnd.
type AgentEvent struct {
	Agent string `json:"agent"`
	// Run is the id of this run of the agent (a plan step, a node run).
	Run  string `json:"run,omitempty"`
	Role string `json:"role,omitempty"`
	Tier string `json:"tier,omitempty"`
	// Task is what the agent was asked (start), Output what it answered
	// (end), Summary a short form of it.
	Task    string   `json:"task,omitempty"`
	Output  string   `json:"output,omitempty"`
	Summary string   `json:"summary,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	// Confidence is the agent's own estimate, 0 to 1, when it gives one.
	Confidence float64 `json:"confidence,omitempty"`
	Err        string  `json:"error,omitempty"`
}
