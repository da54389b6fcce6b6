package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Request is a request the Server received.
type Request struct {
	Method string      // HTTP method
	Path   string      // URL path, e.g. "/v1/messages"
	Header http.Header // request headers, x-api-key included
	Body   []byte      // raw body
	// Messages is Body decoded; zero if it was not a messages request.
	Messages MessagesRequest
}

// MessagesRequest is the part of a Messages API request tests look at.
type MessagesRequest struct {
	Model     string          `json:"model"`      // model asked for
	System    json.RawMessage `json:"system"`     // a string or a list of text blocks
	Messages  []Message       `json:"messages"`   // conversation, without the system prompt
	MaxTokens int             `json:"max_tokens"` // output limit; required by the API
	Tools     []Tool          `json:"tools"`      // tools offered
	Stream    bool            `json:"stream"`     // whether server-sent events were asked for
}

// SystemText returns the system prompt's text.
func (r MessagesRequest) SystemText() string { return text(r.System) }

// ToolNames returns the names of the tools offered.
func (r MessagesRequest) ToolNames() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names
}

// Message is a message of a request.
type Message struct {
	Role    string          `json:"role"`    // user or assistant
	Content json.RawMessage `json:"content"` // a string or a list of content blocks
}

// Blocks returns the message's content blocks; a string content is one
// text block.
func (m Message) Blocks() []Block {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []Block{{Type: "text", Text: s}}
	}
	var blocks []Block
	_ = json.Unmarshal(m.Content, &blocks)
	return blocks
}

// Text returns the text of the message's text blocks, joined.
func (m Message) Text() string { return text(m.Content) }

// Block is a content block of a request message.
type Block struct {
	Type      string          `json:"type"`        // text, image, tool_use or tool_result
	Text      string          `json:"text"`        // of a text block
	ID        string          `json:"id"`          // of a tool_use block
	Name      string          `json:"name"`        // of a tool_use block
	Input     json.RawMessage `json:"input"`       // of a tool_use block
	ToolUseID string          `json:"tool_use_id"` // of a tool_result block: the call it answers
	Content   json.RawMessage `json:"content"`     // of a tool_result block: a string or blocks
	// CacheControl is the block's prompt-cache breakpoint, as sent.
	CacheControl json.RawMessage `json:"cache_control"`
}

// ResultText returns the text of a tool_result block.
func (b Block) ResultText() string { return text(b.Content) }

// Tool is a tool offered in a request.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	// CacheControl is the tool's prompt-cache breakpoint, as sent.
	CacheControl json.RawMessage `json:"cache_control"`
}

// CacheBreakpoints lists where the request set prompt-cache breakpoints
// (cache_control), in prompt order: "tools[i]", "system[i]" and
// "messages[i].content[j]", each with the cache_control as sent.
func (r MessagesRequest) CacheBreakpoints() map[string]string {
	out := map[string]string{}
	for i, t := range r.Tools {
		if len(t.CacheControl) > 0 {
			out[fmt.Sprintf("tools[%d]", i)] = string(t.CacheControl)
		}
	}
	var sys []Block
	if json.Unmarshal(r.System, &sys) == nil {
		for i, b := range sys {
			if len(b.CacheControl) > 0 {
				out[fmt.Sprintf("system[%d]", i)] = string(b.CacheControl)
			}
		}
	}
	for i, m := range r.Messages {
		for j, b := range m.Blocks() {
			if len(b.CacheControl) > 0 {
				out[fmt.Sprintf("messages[%d].content[%d]", i, j)] = string(b.CacheControl)
			}
		}
	}
	return out
}

// text reads content that is a string or a list of blocks.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []Block
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}
