package llm_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// TestNewCapturesAnthropicErrors drives langchaingo's Anthropic client,
// built by New, against a server that is overloaded once: the error the
// client turns into text reaches the retry wrapper as a typed *APIError.
func TestNewCapturesAnthropicErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0.01")
			w.WriteHeader(529)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-3-5-sonnet",` +
			`"content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn",` +
			`"usage":{"input_tokens":5,"output_tokens":1}}`))
	}))
	t.Cleanup(srv.Close)

	models, err := llm.New(t.Context(), llm.Config{Getenv: env("ANTHROPIC_API_KEY", "test"),
		Models: map[llm.Tier]llm.ModelConfig{llm.TierBasic: {Provider: "anthropic", Model: "claude-3-5-sonnet",
			BaseURL: srv.URL + "/v1", MaxRetries: -1}}})
	require.NoError(t, err)
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)

	_, err = llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	var apiErr *llm.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, llm.ProviderAnthropic, apiErr.Provider)
	assert.Equal(t, 529, apiErr.StatusCode)
	assert.Equal(t, "overloaded_error", apiErr.Type)
	assert.Equal(t, 10*time.Millisecond, apiErr.RetryAfter)
	assert.ErrorIs(t, err, llm.ErrTransient)
	require.Error(t, apiErr.Err, "the client's own error is kept in the chain")
	assert.ErrorContains(t, apiErr.Err, "API returned unexpected status code: 529")

	out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	require.NoError(t, err)
	assert.Equal(t, "hello", out)
}
