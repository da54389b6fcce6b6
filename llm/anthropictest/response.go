package anthropictest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Response is one scripted answer of the Server: the content blocks of an
// assistant message — thinking, then text, then tool uses — or an error.
type Response struct {
	// Thinking is the text of a thinking block, sent first when set.
	Thinking string
	// Text is the text of a text block, sent when set.
	Text string
	// ToolUses are tool_use blocks, after the text.
	ToolUses []ToolUse
	// StopReason defaults to "tool_use" with tool uses, else "end_turn".
	StopReason string
	// Usage defaults to an estimate of the request and reply (see
	// llm.EstimateTokens).
	Usage *Usage
	// Chunks are the text deltas of a streamed reply; they default to the
	// words of Text (scripted.Chunks). Ignored when not streaming.
	Chunks []string
	// StreamError, in a streamed reply, is sent as an error event after
	// the message_start event and the text deltas, ending the stream the
	// way Anthropic ends one it cannot finish (an overloaded_error).
	StreamError *ErrorBody
	// Status, when 400 or more, makes this an error response with Error as
	// its body.
	Status int
	// Error is the body of an error response.
	Error *ErrorBody
	// Header holds extra response headers, such as retry-after.
	Header http.Header
	// Delay holds the response back; the wait ends early if the client
	// goes away or the Server is closed.
	Delay time.Duration
	// Body, when set, is the body of a non-streamed reply, sent as it is
	// with status 200 instead of the message built from the fields above.
	Body string
}

// ToolUse is a tool_use block of a Response.
type ToolUse struct {
	// ID defaults to "toolu_<response>_<n>", both counted from 1.
	ID    string
	Name  string // the tool's name
	Input string // JSON object; "" means "{}"
}

// Usage is the token usage reported with a Response.
type Usage struct {
	InputTokens  int // input_tokens
	OutputTokens int // output_tokens
	// CacheReadInputTokens and CacheCreationInputTokens are the prompt
	// tokens read from and written to the prompt cache
	// (cache_read_input_tokens, cache_creation_input_tokens).
	CacheReadInputTokens     int
	CacheCreationInputTokens int
}

// json returns the usage as the API sends it, output tokens as given.
func (u Usage) json(output int) map[string]any {
	return map[string]any{"input_tokens": u.InputTokens, "output_tokens": output,
		"cache_read_input_tokens": u.CacheReadInputTokens, "cache_creation_input_tokens": u.CacheCreationInputTokens}
}

// ErrorBody is an error in Anthropic's format:
// {"type":"error","error":{"type","message"}}.
type ErrorBody struct {
	Type    string // e.g. "overloaded_error"
	Message string // human-readable message
}

// Text returns a plain text reply.
func Text(s string) Response { return Response{Text: s} }

// ToolUses returns a reply that uses tools, after an optional text.
func ToolUses(text string, uses ...ToolUse) Response { return Response{Text: text, ToolUses: uses} }

// Empty returns a reply with no content block at all.
func Empty() Response { return Response{} }

// Overloaded returns Anthropic's 529 answer when its servers are
// overloaded.
func Overloaded() Response {
	return Response{Status: 529, Error: &ErrorBody{Type: "overloaded_error", Message: "Overloaded"}}
}

// OverloadedMidStream returns a streamed reply that Anthropic cuts with an
// overloaded_error event after the text deltas of text, if any.
func OverloadedMidStream(text string) Response {
	return Response{Text: text, StreamError: &ErrorBody{Type: "overloaded_error", Message: "Overloaded"}}
}

// RateLimited returns Anthropic's 429 answer, asking the client to wait d
// with retry-after, in seconds (fractions kept).
func RateLimited(d time.Duration) Response {
	h := http.Header{}
	h.Set("retry-after", strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	return Response{Status: http.StatusTooManyRequests, Header: h, Error: &ErrorBody{
		Type:    "rate_limit_error",
		Message: "This request would exceed the rate limit for your organization of 50 requests per minute.",
	}}
}

// PromptTooLong returns Anthropic's 400 answer to a prompt longer than the
// model's window of maxTokens.
func PromptTooLong(maxTokens int) Response {
	return Response{Status: http.StatusBadRequest, Error: &ErrorBody{Type: "invalid_request_error",
		Message: fmt.Sprintf("prompt is too long: %d tokens > %d maximum", maxTokens+1234, maxTokens)}}
}

// ServerError returns Anthropic's 500 answer.
func ServerError() Response {
	return Response{Status: http.StatusInternalServerError, Error: &ErrorBody{Type: "api_error",
		Message: "Internal server error"}}
}

// Unauthorized returns Anthropic's 401 answer to a wrong API key.
func Unauthorized() Response {
	return Response{Status: http.StatusUnauthorized, Error: &ErrorBody{Type: "authentication_error",
		Message: "invalid x-api-key"}}
}

// InvalidRequest returns a 400 answer with Anthropic's
// invalid_request_error and message.
func InvalidRequest(message string) Response {
	return Response{Status: http.StatusBadRequest, Error: &ErrorBody{Type: "invalid_request_error", Message: message}}
}
