package geminitest

import (
	"fmt"
	"net/http"

	"github.com/coorflow/coorflow/llm/openaitest"
)

// Response is one scripted answer of the Server (see openaitest.Response).
// The Type of an error's ErrorBody is Google's status, e.g.
// "RESOURCE_EXHAUSTED".
type Response = openaitest.Response

// FunctionCall is a function call of a Response.
type FunctionCall = openaitest.ToolCall

// Text returns a plain text reply.
func Text(s string) Response { return Response{Text: s} }

// FunctionCalls returns a reply that calls functions, after an optional
// text.
func FunctionCalls(text string, calls ...FunctionCall) Response {
	return Response{Text: text, ToolCalls: calls}
}

// Empty returns a reply whose one choice has no text and no call.
func Empty() Response { return Response{} }

// NoChoices returns a reply without any choice.
func NoChoices() Response {
	const body = `{"object":"chat.completion","created":1700000000,"model":"gemini-2.0-flash","choices":[],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}`
	const chunk = `{"object":"chat.completion.chunk","created":1700000000,"model":"gemini-2.0-flash","choices":[]}`
	return Response{Body: body, Events: []string{chunk}}
}

func googleError(status int, code, msg string) Response {
	return Response{Status: status, Error: &openaitest.ErrorBody{Type: code, Message: msg}}
}

// ResourceExhausted returns Gemini's 429 answer to a quota or rate
// exceeded.
func ResourceExhausted() Response {
	return googleError(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).")
}

// TokenLimit returns Gemini's 400 answer to a prompt longer than the
// model's window of maxTokens.
func TokenLimit(maxTokens int) Response {
	return googleError(http.StatusBadRequest, "INVALID_ARGUMENT",
		fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).",
			maxTokens+5000, maxTokens))
}

// Internal returns Gemini's 500 answer.
func Internal() Response {
	return googleError(http.StatusInternalServerError, "INTERNAL", "An internal error has occurred. Please retry or report in "+
		"https://developers.generativeai.google/guide/troubleshooting")
}

// Unavailable returns Gemini's 503 answer when the model is overloaded.
func Unavailable() Response {
	return googleError(http.StatusServiceUnavailable, "UNAVAILABLE", "The model is overloaded. Please try again later.")
}

// InvalidAPIKey returns Gemini's 400 answer to a wrong API key.
func InvalidAPIKey() Response {
	return googleError(http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
}
