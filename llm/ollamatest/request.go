package ollamatest

import (
	"encoding/json"
	"net/http"
)

// Request is a request the Server received.
type Request struct {
	Method string      // HTTP method
	Path   string      // URL path, e.g. "/api/chat"
	Header http.Header // request headers
	Body   []byte      // raw body
	// Chat is Body decoded; zero if it was not a chat request.
	Chat ChatRequest
}

// ChatRequest is the part of an /api/chat request tests look at.
type ChatRequest struct {
	Model    string          `json:"model"`    // model asked for
	Messages []Message       `json:"messages"` // conversation
	Tools    []Tool          `json:"tools"`    // tools offered
	Stream   *bool           `json:"stream"`   // nil when absent, which means true
	Format   json.RawMessage `json:"format"`   // "json", a schema, or absent
	Options  map[string]any  `json:"options"`  // model options (num_predict, temperature, ...)
}

// Streams reports whether the request asks for a stream: Ollama streams
// unless told "stream": false.
func (r ChatRequest) Streams() bool { return r.Stream == nil || *r.Stream }

// Message is a message of a request.
type Message struct {
	Role      string     `json:"role"`       // system, user, assistant or tool
	Content   string     `json:"content"`    // text
	Images    []string   `json:"images"`     // base64 images
	ToolCalls []ToolCall `json:"tool_calls"` // of an assistant message
}

// Tool is a tool offered in a request.
type Tool struct {
	Type     string `json:"type"` // "function"
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}
