package openaitest

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Response is one scripted answer of the Server.
type Response struct {
	// Text is the assistant message's content.
	Text string
	// Reasoning is sent as reasoning_content, as DeepSeek and vLLM do.
	Reasoning string
	// ToolCalls are the tool calls of the message.
	ToolCalls []ToolCall
	// FinishReason defaults to "tool_calls" with tool calls, else "stop".
	FinishReason string
	// Usage defaults to an estimate of the request and reply (see
	// llm.EstimateTokens).
	Usage *Usage
	// Chunks are the content pieces of a streamed reply; they default to
	// the words of Text (scripted.Chunks). Ignored when not streaming.
	Chunks []string
	// Status, when 400 or more, makes this an error response with Error as
	// its body.
	Status int
	// Error is the body of an error response.
	Error *ErrorBody
	// Header holds extra response headers, such as Retry-After.
	Header http.Header
	// Delay holds the response back; the wait ends early if the client
	// goes away or the Server is closed.
	Delay time.Duration
	// Body, when set, is the body of a non-streamed reply, sent as it is
	// with status 200 instead of the completion built from the fields
	// above: a body no client can decode, or one of an unusual shape.
	Body string
	// Events, when set, are the data of the server-sent events of a
	// streamed reply, sent as they are and followed by [DONE] instead of
	// the chunks built from the fields above.
	//
	// A Response with Body but no Events answers a streamed request with
	// an error, and one with Events but no Body a non-streamed request, so
	// that a script that does not fit its client fails loudly.
	Events []string
}

// ToolCall is a tool call in a Response.
type ToolCall struct {
	// ID defaults to "call_<response>_<n>", both counted from 1.
	ID        string
	Name      string // the tool's name
	Arguments string // JSON; "" means "{}"
}

// Usage is the token usage reported with a Response.
type Usage struct {
	PromptTokens     int // prompt_tokens
	CompletionTokens int // completion_tokens; total_tokens is the sum
	ReasoningTokens  int // completion_tokens_details.reasoning_tokens
	CachedTokens     int // prompt_tokens_details.cached_tokens: the part of PromptTokens read from the prompt cache
}

// ErrorBody is an error in OpenAI's format:
// {"error":{"message","type","param","code"}}.
type ErrorBody struct {
	Message string // human-readable message
	Type    string // e.g. "invalid_request_error"
	Param   string // offending parameter, if any
	Code    string // e.g. "context_length_exceeded"; "" sends null
}

// Text returns a plain text reply.
func Text(s string) Response { return Response{Text: s} }

// ToolCalls returns a reply that calls tools, in parallel when there are
// several.
func ToolCalls(calls ...ToolCall) Response { return Response{ToolCalls: calls} }

// Delayed returns r held back by d.
func Delayed(d time.Duration, r Response) Response {
	r.Delay = d
	return r
}

// RateLimited returns OpenAI's 429 answer, asking the client to wait d:
// retry-after-ms gives d exactly, Retry-After in whole seconds, rounded up.
func RateLimited(d time.Duration) Response {
	h := http.Header{}
	h.Set("retry-after-ms", strconv.FormatInt(d.Milliseconds(), 10))
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	return Response{Status: http.StatusTooManyRequests, Header: h, Error: &ErrorBody{
		Message: "Rate limit reached for requests. Please try again later.",
		Type:    "requests", Code: "rate_limit_exceeded",
	}}
}

// ContextLengthExceeded returns OpenAI's 400 answer to a prompt longer
// than the model's window of maxTokens.
func ContextLengthExceeded(maxTokens int) Response {
	return Response{Status: http.StatusBadRequest, Error: &ErrorBody{
		Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages "+
			"resulted in %d tokens. Please reduce the length of the messages.", maxTokens, maxTokens+1000),
		Type: "invalid_request_error", Param: "messages", Code: "context_length_exceeded",
	}}
}

// ServerError returns OpenAI's 500 answer.
func ServerError() Response {
	return Response{Status: http.StatusInternalServerError, Error: &ErrorBody{
		Message: "The server had an error while processing your request. Sorry about that!",
		Type:    "server_error",
	}}
}

// Unauthorized returns OpenAI's 401 answer to a wrong API key.
func Unauthorized() Response {
	return Response{Status: http.StatusUnauthorized, Error: &ErrorBody{
		Message: "Incorrect API key provided. You can find your API key at " +
			"https://platform.openai.com/account/api-keys.",
		Type: "invalid_request_error", Code: "invalid_api_key",
	}}
}

// Empty returns a reply with no text and no tool call.
func Empty() Response { return Response{} }

// NoChoices returns a reply whose "choices" list is empty, streamed or
// not.
func NoChoices() Response {
	const body = `{"id":"chatcmpl-empty","object":"chat.completion","created":1700000000,` +
		`"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}`
	const chunk = `{"id":"chatcmpl-empty","object":"chat.completion.chunk","created":1700000000,` +
		`"model":"gpt-4o","choices":[]}`
	return Response{Body: body, Events: []string{chunk}}
}

// InvalidJSON returns a reply whose body is complete but not valid JSON (a
// comma before a closing brace), which a client cannot decode; streamed,
// it is the one event of the stream, which langchaingo's client drops.
func InvalidJSON() Response {
	const body = `{"id":"chatcmpl-bad","object":"chat.completion","created":1700000000,"model":"gpt-4o",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop",}]}`
	return Response{Body: body, Events: []string{body}}
}

// MalformedStream returns a streamed reply whose content chunks are
// malformed JSON, between a well-formed role chunk and finish chunk:
// langchaingo's client drops the malformed chunks without an error, so the
// reply it returns is empty. A non-streamed request gets an error.
func MalformedStream() Response {
	const head = `{"id":"chatcmpl-m","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":`
	return Response{Events: []string{
		head + `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"content":"The answer"},"finish_reason":null}]`,
		head + `[{"index":0,"delta":{"content":" is 42."}},"finish_reason":null}]}`,
		`{"choices":[{"delta":{"content":"`,
		head + `[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	}}
}
