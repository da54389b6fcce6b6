package openaitest

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Request is a request the Server received.
type Request struct {
	Method string      // HTTP method
	Path   string      // URL path, e.g. "/v1/chat/completions"
	Header http.Header // request headers, Authorization included
	Body   []byte      // raw body
	// Chat is Body decoded; zero if it was not a chat request.
	Chat ChatRequest
}

// ChatRequest is the part of a chat-completions request tests look at.
type ChatRequest struct {
	Model               string          `json:"model"`                 // model asked for
	Messages            []Message       `json:"messages"`              // conversation
	Tools               []Tool          `json:"tools"`                 // tools offered
	ToolChoice          json.RawMessage `json:"tool_choice"`           // tool choice, as sent
	Stream              bool            `json:"stream"`                // whether SSE was asked for
	StreamOptions       *StreamOptions  `json:"stream_options"`        // stream options, if any
	MaxTokens           int             `json:"max_tokens"`            // legacy output limit
	MaxCompletionTokens int             `json:"max_completion_tokens"` // output limit
	ResponseFormat      json.RawMessage `json:"response_format"`       // response format, as sent
}

// StreamOptions are the stream options of a request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"` // a usage chunk is wanted before [DONE]
}

// Message is a message of a request.
type Message struct {
	Role       string          `json:"role"`         // system, user, assistant or tool
	Content    json.RawMessage `json:"content"`      // a string or a list of parts; see Text
	Name       string          `json:"name"`         // author name, if any
	ToolCallID string          `json:"tool_call_id"` // the call a tool message answers
	// ToolCalls are the tool calls of an assistant message.
	ToolCalls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Text returns the message's text: its content when that is a string, or
// its text parts joined when it is a list of parts.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Tool is a tool offered in a request.
type Tool struct {
	Type string `json:"type"` // "function"
	// Function describes the tool.
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ToolNames returns the names of the tools offered.
func (r ChatRequest) ToolNames() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}
