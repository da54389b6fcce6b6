package llm

import "strings"

// contextOverflowCodes are provider error codes that mean "too many input
// tokens". OpenAI documents context_length_exceeded for chat completions;
// OpenAI-compatible servers (vLLM, DeepSeek, DashScope) reuse it.
var contextOverflowCodes = []string{"context_length_exceeded"}

// contextOverflowPhrases are the only message texts matched (lower-cased,
// as substrings) to recognise a context overflow, for providers and clients
// that report it without a usable code:
//   - "context_length_exceeded": the OpenAI code, which some proxies put in
//     the message only;
//   - "maximum context length": OpenAI's message for that code ("This
//     model's maximum context length is N tokens..."), reproduced word for
//     word by vLLM, DeepSeek and DashScope; langchaingo's OpenAI client keeps
//     only this message and drops the code;
//   - "prompt is too long": Anthropic's invalid_request_error message for an
//     over-long prompt ("prompt is too long: N tokens > M maximum");
//   - "exceeds the maximum number of tokens": Gemini's INVALID_ARGUMENT
//     message ("The input token count (N) exceeds the maximum number of
//     tokens allowed (M)");
//   - "exceeds the context length": Ollama's 400 message when it does not
//     truncate the input ("the input length exceeds the context length").
//
// They are consulted only for 4xx responses (or gRPC InvalidArgument), so a
// message cannot turn a server error or a success into an overflow.
var contextOverflowPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"prompt is too long",
	"exceeds the maximum number of tokens",
	"exceeds the context length",
}

// isContextOverflow reports whether a provider error code or message means
// the request had too many input tokens.
func isContextOverflow(code, msg string) bool {
	for _, c := range contextOverflowCodes {
		if code == c {
			return true
		}
	}
	lower := strings.ToLower(msg)
	for _, p := range contextOverflowPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}
