package llm

import (
	"regexp"
	"strconv"
	"strings"
)

// langchainStatus matches the status line that langchaingo v0.1.14's
// OpenAI client (openaiclient.createChat) and Anthropic client
// (anthropicclient.decodeError) put in the plain errors they return for a
// non-200 response: "API returned unexpected status code: 429: <message>".
// These clients keep neither the status nor the error code in a typed
// value, so for models built outside New (which captures the response
// itself, see APIError) this line is the only source of the status.
var langchainStatus = regexp.MustCompile(`API returned unexpected status code: (\d{3})(?:: (.*))?`)

// grpcStatus matches the text of a gRPC status error, which grpc-go formats
// as "rpc error: code = <Code> desc = <message>". The Google AI client
// returns such errors; they are read from their text because typed access
// (google.golang.org/grpc/status) is a module this package does not
// require directly.
var grpcStatus = regexp.MustCompile(`rpc error: code = (\w+) desc = (.*)`)

// anthropicStreamError matches the error that langchaingo v0.1.14's
// Anthropic client (anthropicclient.processStreamEvent) makes of an error
// event in a stream, by printing the event as a Go map: "received error
// event: map[error:map[message:Overloaded type:overloaded_error]
// type:error]". The error type is Anthropic's: overloaded_error and
// api_error are transient, rate_limit_error is rate limited.
var anthropicStreamError = regexp.MustCompile(`received error event: map\[error:map\[.*type:([a-z_]+_error)\] type:error\]`)

// anthropicErrorTypes are the classes of Anthropic's error types that can
// pass; the others are permanent.
var anthropicErrorTypes = map[string]error{
	"overloaded_error": ErrTransient,
	"api_error":        ErrTransient,
	"rate_limit_error": ErrRateLimited,
}

// langchainTransportTexts are the fixed messages that langchaingo v0.1.14's
// openaiclient.sanitizeHTTPError substitutes for transport errors, dropping
// the typed original (context.DeadlineExceeded, net.Error).
var langchainTransportTexts = []struct {
	text  string
	class error
}{
	{"request timeout: API call exceeded deadline", ErrTransient},
	{"request timeout: network operation exceeded timeout", ErrTransient},
	{"network error: failed to reach API server", ErrTransient},
	{"request cancelled", ErrPermanent},
}

// classOfText decides from the fixed texts above, or returns nil.
func classOfText(msg string) error {
	if m := langchainStatus.FindStringSubmatch(msg); m != nil {
		code, _ := strconv.Atoi(m[1])
		if c := classOfStatus(code, "", m[2]); c != nil {
			return c
		}
	}
	if m := grpcStatus.FindStringSubmatch(msg); m != nil {
		if c := classOfGRPC(m[1], m[2]); c != nil {
			return c
		}
	}
	if m := anthropicStreamError.FindStringSubmatch(msg); m != nil {
		if c, ok := anthropicErrorTypes[m[1]]; ok {
			return c
		}
	}
	for _, t := range langchainTransportTexts {
		if strings.Contains(msg, t.text) {
			return t.class
		}
	}
	return nil
}
