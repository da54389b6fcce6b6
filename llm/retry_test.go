package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// failThen returns a model that fails with errs in turn, then replies "ok".
func failThen(errs ...error) *funcModel {
	return &funcModel{reply: func(_ context.Context, n int, _ llms.CallOptions) (*llms.ContentResponse, error) {
		if n <= len(errs) {
			return nil, errs[n-1]
		}
		return textResponse("ok"), nil
	}}
}

type retryLog struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (l *retryLog) record(_ int, wait time.Duration, _ error) {
	l.mu.Lock()
	l.waits = append(l.waits, wait)
	l.mu.Unlock()
}

func TestWithRetry(t *testing.T) {
	transient := &llm.APIError{StatusCode: 503}
	limited := &llm.APIError{StatusCode: 429}
	overflow := &llm.APIError{StatusCode: 400, Code: "context_length_exceeded"}
	permanent := &llm.APIError{StatusCode: 401}
	tests := []struct {
		name      string
		errs      []error
		retries   int
		wantCalls int
		wantErr   error
	}{
		{"success first time", nil, 3, 1, nil},
		{"transient then success", []error{transient, transient}, 3, 3, nil},
		{"rate limited then success", []error{limited}, 3, 2, nil},
		{"retries exhausted", []error{transient, transient, transient, transient}, 2, 3, llm.ErrTransient},
		{"no retries configured", []error{transient}, 0, 1, llm.ErrTransient},
		{"overflow is not retried", []error{overflow}, 3, 1, llm.ErrContextOverflow},
		{"permanent is not retried", []error{permanent}, 3, 1, llm.ErrPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := failThen(tt.errs...)
				m := llm.WithRetry(inner, llm.RetryPolicy{MaxRetries: tt.retries})
				resp, err := m.GenerateContent(t.Context(), human("hi"))
				assert.Equal(t, tt.wantCalls, inner.Calls())
				if tt.wantErr != nil {
					assert.ErrorIs(t, err, tt.wantErr)
					assert.Nil(t, resp)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, "ok", resp.Choices[0].Content)
			})
		})
	}
}

func TestWithRetryBackoffGrowsWithJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		transient := errors.New("API returned unexpected status code: 502")
		var log retryLog
		inner := failThen(transient, transient, transient, transient)
		m := llm.WithRetry(inner, llm.RetryPolicy{MaxRetries: 4, BaseDelay: time.Second, MaxDelay: 3 * time.Second,
			OnRetry: log.record})
		start := time.Now()
		_, err := m.GenerateContent(t.Context(), human("hi"))
		require.NoError(t, err)
		require.Len(t, log.waits, 4)
		bounds := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
		var total time.Duration
		for i, w := range log.waits {
			assert.GreaterOrEqual(t, w, bounds[i]/2, "retry %d", i+1)
			assert.LessOrEqual(t, w, bounds[i], "retry %d", i+1)
			total += w
		}
		assert.Equal(t, total, time.Since(start), "the model waited exactly the reported backoff")
	})
}

func TestWithRetryHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log retryLog
		inner := failThen(&llm.APIError{StatusCode: 429, RetryAfter: 7 * time.Second})
		m := llm.WithRetry(inner, llm.RetryPolicy{MaxRetries: 1, BaseDelay: time.Millisecond, OnRetry: log.record})
		start := time.Now()
		out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
		require.NoError(t, err)
		assert.Equal(t, "ok", out)
		assert.Equal(t, []time.Duration{7 * time.Second}, log.waits)
		assert.Equal(t, 7*time.Second, time.Since(start))
	})
}

func TestWithRetryRefusesLongRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := failThen(&llm.APIError{StatusCode: 429, RetryAfter: time.Hour})
		m := llm.WithRetry(inner, llm.RetryPolicy{MaxRetries: 3, MaxRetryAfter: time.Minute})
		_, err := m.GenerateContent(t.Context(), human("hi"))
		assert.ErrorIs(t, err, llm.ErrRateLimited)
		assert.ErrorContains(t, err, "asks to wait 1h0m0s")
		assert.Equal(t, 1, inner.Calls())
	})
}

func TestWithRetryStopsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		inner := failThen(&llm.APIError{StatusCode: 503}, &llm.APIError{StatusCode: 503})
		m := llm.WithRetry(inner, llm.RetryPolicy{MaxRetries: 5, BaseDelay: time.Minute,
			OnRetry: func(int, time.Duration, error) { cancel() }})
		_, err := m.GenerateContent(ctx, human("hi"))
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorContains(t, err, "retry interrupted")
		assert.Equal(t, 1, inner.Calls(), "no attempt after cancellation")
	})
}

func TestWithRetryDoesNotRepeatStreamedOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &funcModel{reply: func(ctx context.Context, _ int, co llms.CallOptions) (*llms.ContentResponse, error) {
			if err := co.StreamingFunc(ctx, []byte("partial ")); err != nil {
				return nil, err
			}
			return nil, &llm.APIError{StatusCode: 502}
		}}
		var chunks []string
		m := llm.WithRetry(inner, llm.RetryPolicy{MaxRetries: 3})
		_, err := m.GenerateContent(t.Context(), human("hi"), llms.WithStreamingFunc(
			func(_ context.Context, chunk []byte) error {
				chunks = append(chunks, string(chunk))
				return nil
			}))
		assert.ErrorIs(t, err, llm.ErrTransient)
		assert.Equal(t, 1, inner.Calls())
		assert.Equal(t, []string{"partial "}, chunks)
	})
}

func TestWithTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &funcModel{reply: func(ctx context.Context, _ int, _ llms.CallOptions) (*llms.ContentResponse, error) {
			select {
			case <-time.After(time.Hour):
				return textResponse("late"), nil
			case <-ctx.Done():
				return nil, errors.New("request timeout: API call exceeded deadline")
			}
		}}
		start := time.Now()
		_, err := llm.WithTimeout(slow, 30*time.Second).GenerateContent(t.Context(), human("hi"))
		assert.Equal(t, 30*time.Second, time.Since(start))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "timed out after 30s")
		assert.ErrorIs(t, llm.Classify(err), llm.ErrTransient)
	})
}

func TestWithTimeoutPassesFastCalls(t *testing.T) {
	inner := failThen()
	out, err := llms.GenerateFromSinglePrompt(t.Context(), llm.WithTimeout(inner, time.Minute), "hi")
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
	assert.Same(t, inner, llm.WithTimeout(inner, 0), "no timeout, no wrapper")
}

func TestWithTimeoutLeavesCallerCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	inner := &funcModel{reply: func(ctx context.Context, _ int, _ llms.CallOptions) (*llms.ContentResponse, error) {
		return nil, ctx.Err()
	}}
	_, err := llm.WithTimeout(inner, time.Minute).GenerateContent(ctx, human("hi"))
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
}

func TestRetryWithTimeoutRetriesSlowAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &funcModel{reply: func(ctx context.Context, n int, _ llms.CallOptions) (*llms.ContentResponse, error) {
			if n == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return textResponse("second try"), nil
		}}
		m := llm.WithRetry(llm.WithTimeout(inner, 10*time.Second), llm.RetryPolicy{MaxRetries: 1})
		out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
		require.NoError(t, err)
		assert.Equal(t, "second try", out)
		assert.Equal(t, 2, inner.Calls())
	})
}
