package ollamatest

import (
	"net/http"
	"time"
)

// Response is one scripted answer of the Server.
type Response struct {
	// Text is the assistant message's content.
	Text string
	// ToolCalls are the tool calls of the message.
	ToolCalls []ToolCall
	// DoneReason defaults to "stop".
	DoneReason string
	// PromptEvalCount and EvalCount are the token counts reported with
	// the last line; they default to estimates (see llm.EstimateTokens).
	PromptEvalCount, EvalCount int
	// Chunks are the content pieces of a streamed reply; they default to
	// the words of Text (scripted.Chunks).
	Chunks []string
	// StreamError, in a streamed reply, is sent as an {"error": ...} line
	// after the chunks, with status 200, the way Ollama reports a failure
	// it meets while generating.
	StreamError string
	// Lines, when set, are sent as they are, one per line, with status
	// 200, instead of the reply built from the fields above: lines that
	// are not JSON, say.
	Lines []string
	// Status, when 400 or more, makes this an error response with Error as
	// its message.
	Status int
	// Error is the message of an error response: {"error": Error}.
	Error string
	// Header holds extra response headers.
	Header http.Header
	// Delay holds the response back; the wait ends early if the client
	// goes away or the Server is closed.
	Delay time.Duration
}

// ToolCall is a tool call, which Ollama sends with its arguments as a
// JSON object and without an id.
type ToolCall struct {
	Name      string // the tool's name
	Arguments string // JSON object; "" means "{}"
}

// Text returns a plain text reply.
func Text(s string) Response { return Response{Text: s} }

// ToolCalls returns a reply that calls tools.
func ToolCalls(calls ...ToolCall) Response { return Response{ToolCalls: calls} }

// Empty returns a reply with no text and no tool call.
func Empty() Response { return Response{} }

// ModelNotFound returns Ollama's 404 answer for a model not pulled.
func ModelNotFound(model string) Response {
	return Response{Status: http.StatusNotFound, Error: `model "` + model + `" not found, try pulling it first`}
}

// ServerBusy returns Ollama's 503 answer when its queue is full.
func ServerBusy() Response {
	return Response{Status: http.StatusServiceUnavailable,
		Error: "server busy, please try again.  maximum pending requests exceeded"}
}

// RateLimited returns a 429 answer, as Ollama's hosted API and proxies in
// front of Ollama give.
func RateLimited() Response {
	return Response{Status: http.StatusTooManyRequests, Error: "too many requests, please slow down"}
}

// ContextExceeded returns Ollama's 400 answer to an input longer than the
// context when it is told not to truncate.
func ContextExceeded() Response {
	return Response{Status: http.StatusBadRequest, Error: "the input length exceeds the context length"}
}

// ServerError returns Ollama's 500 answer when its model runner fails.
func ServerError() Response {
	return Response{Status: http.StatusInternalServerError,
		Error: "llama runner process has terminated: exit status 2"}
}

// Malformed returns a streamed reply whose lines are not JSON.
func Malformed() Response {
	return Response{Lines: []string{`{"model":"llama3.1","message":{"role":"assistant","content":"Hel`, `lo"}}`}}
}
