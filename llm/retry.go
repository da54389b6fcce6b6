package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Retry defaults, used for zero fields of a RetryPolicy.
const (
	DefaultBaseDelay     = 500 * time.Millisecond
	DefaultMaxDelay      = 30 * time.Second
	DefaultMaxRetryAfter = time.Minute
)

// RetryPolicy says how WithRetry retries. Zero durations take the defaults
// above; MaxRetries is taken as given (0 means no retry).
type RetryPolicy struct {
	// MaxRetries is the number of attempts after the first one.
	MaxRetries int
	// BaseDelay is the backoff before the first retry; it doubles with every
	// retry up to MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps the exponential backoff.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After that is honoured; when a
	// provider asks for a longer wait, WithRetry returns the error at once
	// rather than block the caller that long.
	MaxRetryAfter time.Duration
	// OnRetry, if set, is called before each wait with the number of the
	// retry about to be made (1 for the first), the wait and the classified
	// error that caused it. It must not block.
	OnRetry func(retry int, wait time.Duration, err error)
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return p
}

// backoff returns the wait before retry n (1-based): BaseDelay·2^(n-1)
// capped at MaxDelay, then drawn uniformly from its upper half ("equal
// jitter"), so concurrent callers spread out but never retry early.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	half := d / 2
	return half + rand.N(half+1)
}

// WithRetry returns a model that retries calls to m failing with a
// rate-limited or transient error (see Classify), waiting between attempts
// with exponential backoff and jitter, or exactly as long as the provider's
// Retry-After says when the error carries one. Context-overflow and
// permanent errors are returned at once, and so is any error after a
// streaming callback has received output (a retry would repeat it).
// Cancelling ctx stops the waiting. Errors it returns are classified.
func WithRetry(m llms.Model, p RetryPolicy) llms.Model {
	return &retryModel{inner: m, policy: p.withDefaults()}
}

type retryModel struct {
	inner  llms.Model
	policy RetryPolicy
}

// Call implements llms.Model.
func (r *retryModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, r, prompt, opts...)
}

// GenerateContent implements llms.Model.
func (r *retryModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent,
	opts ...llms.CallOption,
) (*llms.ContentResponse, error) {
	opts, streamed := watchStreaming(opts)
	for retry := 1; ; retry++ {
		resp, err := r.inner.GenerateContent(ctx, msgs, opts...)
		if err == nil {
			return resp, nil
		}
		err = Classify(err)
		if ctx.Err() != nil || streamed.Load() || !IsRetryable(err) {
			return nil, err
		}
		if retry > r.policy.MaxRetries {
			if r.policy.MaxRetries == 0 {
				return nil, err
			}
			return nil, fmt.Errorf("llm: giving up after %d attempts: %w", retry, err)
		}
		wait := r.policy.backoff(retry)
		if after, ok := RetryAfter(err); ok {
			if after > r.policy.MaxRetryAfter {
				return nil, fmt.Errorf("llm: provider asks to wait %s, more than %s: %w",
					after, r.policy.MaxRetryAfter, err)
			}
			wait = after
		}
		if r.policy.OnRetry != nil {
			r.policy.OnRetry(retry, wait, err)
		}
		if werr := sleep(ctx, wait); werr != nil {
			return nil, fmt.Errorf("llm: retry interrupted: %w (last error: %v)", werr, err)
		}
	}
}

// sleep waits for d or until ctx is done, and returns ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// watchStreaming returns opts with the streaming callbacks, if any, wrapped
// to record that output was delivered, and the flag they set.
func watchStreaming(opts []llms.CallOption) ([]llms.CallOption, *atomic.Bool) {
	streamed := new(atomic.Bool)
	var co llms.CallOptions
	for _, o := range opts {
		o(&co)
	}
	out := append([]llms.CallOption(nil), opts...)
	if f := co.StreamingFunc; f != nil {
		out = append(out, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			if len(chunk) > 0 {
				streamed.Store(true)
			}
			return f(ctx, chunk)
		}))
	}
	if f := co.StreamingReasoningFunc; f != nil {
		out = append(out, llms.WithStreamingReasoningFunc(func(ctx context.Context, reasoning, chunk []byte) error {
			if len(reasoning) > 0 || len(chunk) > 0 {
				streamed.Store(true)
			}
			return f(ctx, reasoning, chunk)
		}))
	}
	return out, streamed
}

// WithTimeout returns a model that gives every call to m at most d. A call
// that runs out of time fails with an error matching both
// context.DeadlineExceeded and the inner error; Classify reports it as
// transient. A d of zero or less returns m unchanged.
func WithTimeout(m llms.Model, d time.Duration) llms.Model {
	if d <= 0 {
		return m
	}
	return &timeoutModel{inner: m, timeout: d}
}

type timeoutModel struct {
	inner   llms.Model
	timeout time.Duration
}

// timeoutError is the error of a call that exceeded its own timeout.
type timeoutError struct {
	timeout time.Duration
	err     error
}

// Error says the call timed out and why the inner call failed.
func (e *timeoutError) Error() string {
	return fmt.Sprintf("llm: model call timed out after %s: %v", e.timeout, e.err)
}

// Unwrap returns context.DeadlineExceeded and the inner error.
func (e *timeoutError) Unwrap() []error { return []error{context.DeadlineExceeded, e.err} }

// Call implements llms.Model.
func (t *timeoutModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, t, prompt, opts...)
}

// GenerateContent implements llms.Model.
func (t *timeoutModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent,
	opts ...llms.CallOption,
) (*llms.ContentResponse, error) {
	cctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	resp, err := t.inner.GenerateContent(cctx, msgs, opts...)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return nil, &timeoutError{timeout: t.timeout, err: err}
	}
	return resp, err
}
