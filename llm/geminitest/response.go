package geminitest

import (
	"fmt"
	"net/http"
	"time"
)

// Response is one scripted answer of the Server.
type Response struct {
	// Text is the reply's text.
	Text string
	// Chunks are the pieces of Text, one per element of the streamed
	// array; they default to the words of Text (scripted.Chunks).
	Chunks []string
	// FunctionCalls are function calls, sent after the text.
	FunctionCalls []FunctionCall
	// FinishReason is the candidate's finish reason, by name; it defaults
	// to "STOP".
	FinishReason string
	// NoCandidates sends a reply without any candidate.
	NoCandidates bool
	// PromptTokens and ReplyTokens are the usage reported; they default
	// to estimates (see llm.EstimateTokens).
	PromptTokens, ReplyTokens int
	// Status, when 400 or more, makes this an error response with Error as
	// its body.
	Status int
	// Error is the body of an error response.
	Error *ErrorBody
	// Header holds extra response headers.
	Header http.Header
	// Delay holds the response back; the wait ends early if the client
	// goes away or the Server is closed.
	Delay time.Duration
	// Body, when set, is sent as it is with status 200 instead of the
	// reply built from the fields above.
	Body string
}

// FunctionCall is a function call of a Response; Gemini gives it no id.
type FunctionCall struct {
	Name string // the function's name
	Args string // JSON object; "" means "{}"
}

// ErrorBody is an error in Google's format: {"error": {"code", "message",
// "status"}}; code is the HTTP status.
type ErrorBody struct {
	Message string // human-readable message
	Status  string // canonical code, e.g. "RESOURCE_EXHAUSTED"
}

// Text returns a plain text reply.
func Text(s string) Response { return Response{Text: s} }

// FunctionCalls returns a reply that calls functions, after an optional
// text.
func FunctionCalls(text string, calls ...FunctionCall) Response {
	return Response{Text: text, FunctionCalls: calls}
}

// Empty returns a reply whose one candidate has no text and no call.
func Empty() Response { return Response{} }

// ResourceExhausted returns Gemini's 429 answer to a quota or rate
// exceeded.
func ResourceExhausted() Response {
	return Response{Status: http.StatusTooManyRequests, Error: &ErrorBody{Status: "RESOURCE_EXHAUSTED",
		Message: "Resource has been exhausted (e.g. check quota)."}}
}

// TokenLimit returns Gemini's 400 answer to a prompt longer than the
// model's window of maxTokens.
func TokenLimit(maxTokens int) Response {
	return Response{Status: http.StatusBadRequest, Error: &ErrorBody{Status: "INVALID_ARGUMENT",
		Message: fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).",
			maxTokens+5000, maxTokens)}}
}

// Internal returns Gemini's 500 answer.
func Internal() Response {
	return Response{Status: http.StatusInternalServerError, Error: &ErrorBody{Status: "INTERNAL",
		Message: "An internal error has occurred. Please retry or report in " +
			"https://developers.generativeai.google/guide/troubleshooting"}}
}

// Unavailable returns Gemini's 503 answer when the model is overloaded.
func Unavailable() Response {
	return Response{Status: http.StatusServiceUnavailable, Error: &ErrorBody{Status: "UNAVAILABLE",
		Message: "The model is overloaded. Please try again later."}}
}

// InvalidAPIKey returns Gemini's 400 answer to a wrong API key.
func InvalidAPIKey() Response {
	return Response{Status: http.StatusBadRequest, Error: &ErrorBody{Status: "INVALID_ARGUMENT",
		Message: "API key not valid. Please pass a valid API key."}}
}
