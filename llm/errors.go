package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error classes. Classify wraps every error it is given with exactly one of
// them, so callers decide what to do with errors.Is.
var (
	// ErrContextOverflow means the request had more input tokens than the
	// model accepts. Retrying the same request cannot succeed; the caller
	// must shrink the context (summarize, drop parts) first.
	ErrContextOverflow = errors.New("llm: context overflow")
	// ErrRateLimited means the provider asked the caller to slow down.
	// The request may succeed later; WithRetry waits and tries again.
	ErrRateLimited = errors.New("llm: rate limited")
	// ErrTransient means the call failed for a reason that may not recur:
	// a timeout, a dropped connection, a server error.
	ErrTransient = errors.New("llm: transient error")
	// ErrPermanent means the same request will fail again: bad credentials,
	// an invalid request, an unknown model, or a call cancelled by its caller.
	ErrPermanent = errors.New("llm: permanent error")
)

// Replies that cannot be used although the provider answered with success.
// Classify files both under ErrTransient: a new attempt usually gets a
// proper reply, so WithRetry retries them.
var (
	// ErrEmptyResponse means the model answered with nothing: no text and
	// no tool call, or no choice at all. The models New builds return it,
	// as an *EmptyResponseError, for every call: an answer is what a
	// model call is for. A reply with tool calls and no text is not empty.
	ErrEmptyResponse = errors.New("llm: empty response")
	// ErrMalformedResponse means the provider answered a call with a
	// success status but a body its client could not decode: invalid
	// JSON, or JSON of the wrong shape. The models New builds report it.
	ErrMalformedResponse = errors.New("llm: malformed response")
)

// ErrToolsUnsupported means a call offered tools, or carried tool calls,
// to a provider whose langchaingo client cannot send them. Classify files
// it under ErrPermanent.
var ErrToolsUnsupported = errors.New("llm: tools not supported")

// Configuration errors, wrapped by *ConfigError.
var (
	// ErrUnknownTier is returned for a tier name that is not one of Tiers.
	ErrUnknownTier = errors.New("llm: unknown tier")
	// ErrUnknownProvider is returned for a provider that is missing or not
	// one of Providers.
	ErrUnknownProvider = errors.New("llm: unknown provider")
	// ErrMissingModel is returned when a tier names no model, or when the
	// basic tier, which every configuration needs, is absent.
	ErrMissingModel = errors.New("llm: missing model")
	// ErrMissingAPIKey is returned when the environment variable that
	// should hold a tier's API key is unset or empty.
	ErrMissingAPIKey = errors.New("llm: missing API key")
	// ErrInvalidConfig is returned for any other malformed configuration:
	// YAML syntax, unknown fields, bad COORFLOW_MODEL values.
	ErrInvalidConfig = errors.New("llm: invalid config")
)

// ConfigError describes what is wrong in a model configuration and where.
// Err is one of the configuration sentinels (ErrUnknownTier, ...), so
// errors.Is works on it.
type ConfigError struct {
	File  string // file the config was loaded from, if known
	Line  int    // line in File of the offending entry, 0 if unknown
	Tier  Tier   // tier concerned, "" if none
	Field string // YAML field concerned, "" if none
	Msg   string // what is wrong, in words
	Err   error  // the sentinel
}

// Error returns "llm: file:line: models.tier.field: msg", leaving out the
// parts that are unknown.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Tier != "" {
		b.WriteString("models." + string(e.Tier))
		if e.Field != "" {
			b.WriteString("." + e.Field)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the sentinel.
func (e *ConfigError) Unwrap() error { return e.Err }

// APIError is an error response from a provider's HTTP API, captured by
// the models that New builds before the provider's client turns it into
// text. It carries what classification and retries need.
type APIError struct {
	Provider   Provider      // provider that answered
	StatusCode int           // HTTP status code
	Code       string        // provider error code, e.g. "context_length_exceeded"
	Type       string        // provider error type, e.g. "invalid_request_error"
	Message    string        // provider error message
	RetryAfter time.Duration // wait asked for by Retry-After or retry-after-ms; 0 if none
	Err        error         // the error the provider's client returned, if any
}

// Error returns "llm: provider: status N (code): message".
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm: %s: status %d", e.Provider, e.StatusCode)
	switch {
	case e.Code != "":
		fmt.Fprintf(&b, " (%s)", e.Code)
	case e.Type != "":
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Unwrap returns the provider client's error.
func (e *APIError) Unwrap() error { return e.Err }

// RetryAfter returns the wait a provider asked for before the next attempt
// (from the Retry-After or retry-after-ms header of an *APIError in err's
// chain), and whether there was one.
func RetryAfter(err error) (time.Duration, bool) {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		return apiErr.RetryAfter, true
	}
	return 0, false
}

// EmptyResponseError is the failure of a call whose model answered with
// nothing. It matches ErrEmptyResponse, and Err when there is one.
type EmptyResponseError struct {
	Provider Provider // provider that answered
	Model    string   // model that answered
	// Err is the client's error for a reply without any choice, such as
	// langchaingo's "no response"; nil when the reply had choices, all
	// empty.
	Err error
}

// Error returns "llm: provider model "name" returned nothing (...)".
func (e *EmptyResponseError) Error() string {
	what := "no text and no tool call"
	if e.Err != nil {
		what = "no choices: " + e.Err.Error()
	}
	return fmt.Sprintf("llm: %s model %q returned nothing (%s)", e.Provider, e.Model, what)
}

// Unwrap returns ErrEmptyResponse and the client's error, if any.
func (e *EmptyResponseError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrEmptyResponse}
	}
	return []error{ErrEmptyResponse, e.Err}
}
