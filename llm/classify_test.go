package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/coorflow/coorflow/llm"
)

// httpCodeError mimics the Google API client's *apierror.APIError.
type httpCodeError struct{ code int }

func (e httpCodeError) Error() string { return fmt.Sprintf("googleapi: Error %d", e.code) }
func (e httpCodeError) HTTPCode() int { return e.code }

func TestClassify(t *testing.T) {
	api := func(status int, code, msg string) error {
		return &llm.APIError{Provider: "openai", StatusCode: status, Code: code, Message: msg}
	}
	tests := []struct {
		name string
		err  error
		want error
	}{
		// Typed: captured API errors.
		{"api 429", api(429, "rate_limit_exceeded", "slow down"), llm.ErrRateLimited},
		{"api 429 insufficient quota", api(429, "insufficient_quota", "You exceeded your current quota"),
			llm.ErrPermanent},
		{"api 408", api(408, "", ""), llm.ErrTransient},
		{"api 409", api(409, "", ""), llm.ErrTransient},
		{"api 500", api(500, "", "boom"), llm.ErrTransient},
		{"api 503", api(503, "", ""), llm.ErrTransient},
		{"api 529 overloaded", api(529, "", "Overloaded"), llm.ErrTransient},
		{"api 400 context code", api(400, "context_length_exceeded", "too many"), llm.ErrContextOverflow},
		{"api 400 anthropic prompt too long", api(400, "", "prompt is too long: 210000 tokens > 200000 maximum"),
			llm.ErrContextOverflow},
		{"api 413", api(413, "", ""), llm.ErrContextOverflow},
		{"api 400 other", api(400, "invalid_value", "bad temperature"), llm.ErrPermanent},
		{"api 401", api(401, "invalid_api_key", "Incorrect API key"), llm.ErrPermanent},
		{"api 404", api(404, "model_not_found", ""), llm.ErrPermanent},
		// Typed: langchaingo standardized errors.
		{"llms token limit", llms.NewError(llms.ErrCodeTokenLimit, "x", "too long"), llm.ErrContextOverflow},
		{"llms rate limit", llms.NewError(llms.ErrCodeRateLimit, "x", ""), llm.ErrRateLimited},
		{"llms unavailable", llms.NewError(llms.ErrCodeProviderUnavailable, "x", ""), llm.ErrTransient},
		{"llms auth", llms.NewError(llms.ErrCodeAuthentication, "x", ""), llm.ErrPermanent},
		// Typed: HTTPCode() errors.
		{"http code 429", httpCodeError{429}, llm.ErrRateLimited},
		{"http code 403", httpCodeError{403}, llm.ErrPermanent},
		// Context and network.
		{"deadline", context.DeadlineExceeded, llm.ErrTransient},
		{"wrapped deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), llm.ErrTransient},
		{"canceled", context.Canceled, llm.ErrPermanent},
		{"conn reset", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read",
			Err: syscall.ECONNRESET}}, llm.ErrTransient},
		{"conn refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), llm.ErrTransient},
		{"unexpected eof", fmt.Errorf("error reading streaming response: %w", io.ErrUnexpectedEOF),
			llm.ErrTransient},
		{"dns not found", &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, llm.ErrPermanent},
		{"dns temporary", &net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}, llm.ErrTransient},
		// langchaingo's untyped texts.
		{"text 429", errors.New("API returned unexpected status code: 429: Rate limit reached"), llm.ErrRateLimited},
		{"text 500", errors.New("API returned unexpected status code: 500"), llm.ErrTransient},
		{"text 400 context", errors.New("API returned unexpected status code: 400: This model's maximum " +
			"context length is 8192 tokens. However, your messages resulted in 9000 tokens."), llm.ErrContextOverflow},
		{"text 400 other", errors.New("API returned unexpected status code: 400: Invalid 'messages'"),
			llm.ErrPermanent},
		{"text 401", errors.New("API returned unexpected status code: 401: Incorrect API key provided"),
			llm.ErrPermanent},
		{"text timeout", errors.New("request timeout: API call exceeded deadline"), llm.ErrTransient},
		{"text network", errors.New("network error: failed to reach API server"), llm.ErrTransient},
		{"text cancelled", errors.New("request cancelled"), llm.ErrPermanent},
		{"grpc exhausted", errors.New("rpc error: code = ResourceExhausted desc = Resource has been exhausted"),
			llm.ErrRateLimited},
		{"grpc unavailable", errors.New("rpc error: code = Unavailable desc = try later"), llm.ErrTransient},
		{"grpc context", errors.New("rpc error: code = InvalidArgument desc = The input token count (2000000) " +
			"exceeds the maximum number of tokens allowed (1048576)."), llm.ErrContextOverflow},
		{"grpc denied", errors.New("rpc error: code = PermissionDenied desc = no"), llm.ErrPermanent},
		// Replies that are no answer.
		{"empty response", &llm.EmptyResponseError{Provider: "openai", Model: "m"}, llm.ErrTransient},
		{"malformed response", fmt.Errorf("%w from openai: %w", llm.ErrMalformedResponse,
			&json.SyntaxError{Offset: 3}), llm.ErrTransient},
		{"langchaingo openai no response", openai.ErrEmptyResponse, llm.ErrTransient},
		{"langchaingo anthropic no response", fmt.Errorf("anthropic: %w", anthropic.ErrEmptyResponse),
			llm.ErrTransient},
		{"langchaingo openaiclient empty response", errors.New("empty response"), llm.ErrTransient},
		{"text merely ending in empty response", errors.New("tool said: empty response"), llm.ErrPermanent},
		// A JSON error alone may be the request's (tool arguments in the
		// history): without the capture's word that a reply came, permanent.
		{"bare syntax error", &json.SyntaxError{Offset: 1}, llm.ErrPermanent},
		// Ollama's 400 when it does not truncate.
		{"ollama context", api(400, "", "the input length exceeds the context length"), llm.ErrContextOverflow},
		// Anthropic's error events in a stream, as langchaingo prints them.
		{"anthropic stream overloaded", errors.New("anthropic: failed to create message: received error event: " +
			"map[error:map[message:Overloaded type:overloaded_error] type:error]"), llm.ErrTransient},
		{"anthropic stream rate limit", errors.New("received error event: " +
			"map[error:map[message:Number of requests has exceeded your rate limit type:rate_limit_error] type:error]"),
			llm.ErrRateLimited},
		{"anthropic stream invalid request", errors.New("received error event: " +
			"map[error:map[message:bad type:invalid_request_error] type:error]"), llm.ErrPermanent},
		// A 5xx message that mentions context length is still transient.
		{"500 mentioning context", api(500, "", "maximum context length"), llm.ErrTransient},
		// Unknown errors are permanent.
		{"unknown", errors.New("something odd"), llm.ErrPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := llm.Classify(tt.err)
			assert.ErrorIs(t, got, tt.want)
			assert.ErrorIs(t, got, tt.err, "the original stays in the chain")
			for _, other := range []error{llm.ErrContextOverflow, llm.ErrRateLimited, llm.ErrTransient,
				llm.ErrPermanent} {
				if other != tt.want {
					assert.NotErrorIs(t, got, other, "exactly one class")
				}
			}
		})
	}
}

func TestClassifyKeepsTypedErrors(t *testing.T) {
	orig := &llm.APIError{Provider: "openai", StatusCode: 429, RetryAfter: 2 * time.Second}
	got := llm.Classify(fmt.Errorf("call: %w", orig))
	var apiErr *llm.APIError
	assert.ErrorAs(t, got, &apiErr)
	assert.Same(t, orig, apiErr)
	after, ok := llm.RetryAfter(got)
	assert.True(t, ok)
	assert.Equal(t, 2*time.Second, after)
	assert.Contains(t, got.Error(), "llm: rate limited")
}

func TestClassifyIdempotent(t *testing.T) {
	assert.NoError(t, llm.Classify(nil))
	once := llm.Classify(errors.New("API returned unexpected status code: 503"))
	assert.Same(t, once, llm.Classify(once))
	already := fmt.Errorf("scripted failure: %w", llm.ErrContextOverflow)
	assert.Same(t, already, llm.Classify(already))
}

func TestIsRetryable(t *testing.T) {
	assert.True(t, llm.IsRetryable(context.DeadlineExceeded))
	assert.True(t, llm.IsRetryable(&llm.APIError{StatusCode: 429}))
	assert.False(t, llm.IsRetryable(&llm.APIError{StatusCode: 400, Code: "context_length_exceeded"}))
	assert.False(t, llm.IsRetryable(context.Canceled))
	assert.False(t, llm.IsRetryable(nil))
}

func TestAPIErrorMessage(t *testing.T) {
	err := &llm.APIError{Provider: "openai", StatusCode: 400, Code: "context_length_exceeded", Message: "too long"}
	assert.Equal(t, "llm: openai: status 400 (context_length_exceeded): too long", err.Error())
	err = &llm.APIError{Provider: "anthropic", StatusCode: 529, Type: "overloaded_error"}
	assert.Equal(t, "llm: anthropic: status 529 (overloaded_error)", err.Error())
}
