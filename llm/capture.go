package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// The langchaingo clients turn an error response into a string and a
// transport error into a sanitized one, losing the status, the provider's
// error code, Retry-After and the typed cause. The models New builds give
// their client an HTTP transport that keeps those in a capture carried by
// the request's context, and join them to the client's error.

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 1 << 20

type captureKey struct{}

// capture holds the outcome of the last HTTP exchange of one model call.
type capture struct {
	mu       sync.Mutex
	last     error // *APIError, a transport error, or nil after a success
	answered bool  // the last exchange got a response with a success status
}

func (c *capture) set(err error, answered bool) {
	c.mu.Lock()
	c.last, c.answered = err, answered
	c.mu.Unlock()
}

// get reports whether the last exchange got a response with a success
// status, and returns its error.
func (c *capture) get() (answered bool, last error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered, c.last
}

// captureTransport records failed exchanges in the capture of the
// request's context, if there is one, and otherwise passes through.
type captureTransport struct {
	base     http.RoundTripper
	provider Provider
}

// RoundTrip implements http.RoundTripper.
func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, _ := req.Context().Value(captureKey{}).(*capture)
	resp, err := t.base.RoundTrip(req)
	if c == nil {
		return resp, err
	}
	if err != nil {
		c.set(err, false)
		return nil, err
	}
	if resp.StatusCode < http.StatusBadRequest {
		c.set(nil, true)
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	c.set(parseAPIError(t.provider, resp.StatusCode, resp.Header, body), false)
	return resp, nil
}

// newHTTPClient returns an HTTP client whose transport captures errors
// and, for Anthropic, sets the prompt-cache breakpoints.
func newHTTPClient(p Provider) *http.Client {
	base := http.DefaultTransport
	if p == ProviderAnthropic {
		base = &cacheBreakpoints{base: base}
	}
	return &http.Client{Transport: &captureTransport{base: base, provider: p}}
}

// parseAPIError reads an error body in the formats of OpenAI
// ({"error":{"message","type","code"}}), Anthropic
// ({"type":"error","error":{"type","message"}}), Ollama ({"error":"..."})
// and Google ({"error":{"code","message","status"}}, which Gemini's
// OpenAI-compatible endpoint sends as the one element of a list; its
// status is the Type).
func parseAPIError(p Provider, status int, h http.Header, body []byte) *APIError {
	e := &APIError{Provider: p, StatusCode: status, RetryAfter: retryAfter(h, time.Now())}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	var list []json.RawMessage
	if json.Unmarshal(body, &list) == nil && len(list) == 1 {
		body = list[0]
	}
	if json.Unmarshal(body, &env) != nil || len(env.Error) == 0 {
		e.Message = strings.TrimSpace(string(body))
		return e
	}
	var msg string
	if json.Unmarshal(env.Error, &msg) == nil {
		e.Message = msg
		return e
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Status  string          `json:"status"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(env.Error, &obj) == nil {
		e.Message, e.Type, e.Code = obj.Message, cmp.Or(obj.Type, obj.Status), rawCode(obj.Code)
	}
	return e
}

// rawCode renders a JSON error code that may be a string or a number.
func rawCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// retryAfter reads retry-after-ms (milliseconds, sent by OpenAI and Azure)
// or Retry-After (seconds or an HTTP date), and returns 0 when neither is
// usable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// captureModel installs a capture for every call to its inner model and
// joins what was captured to the error the client returns; a JSON decoding
// error after a success status becomes ErrMalformedResponse. It is where
// provider errors enter: it takes the configured API keys and anything
// shaped like a credential out of them (RedactError), so that what is
// retried, logged, recorded and returned holds no secret.
type captureModel struct {
	inner    llms.Model
	provider Provider
	// keys are the API keys of every configured tier.
	keys []string
}

// Call implements llms.Model.
func (m *captureModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// GenerateContent implements llms.Model.
func (m *captureModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent,
	opts ...llms.CallOption,
) (*llms.ContentResponse, error) {
	c := &capture{}
	resp, err := m.inner.GenerateContent(context.WithValue(ctx, captureKey{}, c), msgs, opts...)
	if err == nil {
		return resp, nil
	}
	answered, last := c.get()
	err = joinCaptured(err, last)
	if answered && isUndecodable(err) {
		err = fmt.Errorf("%w from %s: %w", ErrMalformedResponse, m.provider, err)
	}
	return nil, RedactError(err, m.keys...)
}

// joinCaptured joins to the client's error what the transport captured of
// the failed exchange.
func joinCaptured(err, last error) error {
	switch last := last.(type) {
	case nil:
		return err
	case *APIError:
		withCause := *last
		withCause.Err = err
		return &withCause
	default:
		if errors.Is(err, last) {
			return err
		}
		return fmt.Errorf("%w: %w", err, last)
	}
}
