package openaitest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// TestProviderErrorsHoldNoKey is the regression test of security finding 9
// (issue 11): a provider that echoes the key in its error put it into every
// log line, recorded run and response that showed the error.
func TestProviderErrorsHoldNoKey(t *testing.T) {
	const key = "org-key-SECRET-0123" // the configured key: not shaped like one
	srv := newServer(t,
		openaitest.Response{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After-Ms": {"1"}},
			Error: &openaitest.ErrorBody{Message: "Rate limit reached for key " + key, Code: "rate_limit_exceeded"}},
		openaitest.Response{Status: http.StatusUnauthorized, Error: &openaitest.ErrorBody{
			Message: "Incorrect API key provided: Bearer sk-test-SECRET-abcdef... (key " + key + ")",
			Type:    "invalid_request_error", Code: "invalid_api_key"}},
	)
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: openai\n    model: gpt-4o-mini\n" +
		"    base_url: " + srv.BaseURL() + "\n    api_key_env: ORG_KEY\n"))
	require.NoError(t, err)
	require.NoError(t, cfg.ApplyEnv(func(k string) string { return map[string]string{"ORG_KEY": key}[k] }))
	var log retries
	cfg.OnRetry = log.record
	models, err := llm.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, models.Close()) })
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)

	_, err = m.GenerateContent(t.Context(), human("hi"))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "SECRET", "the error returned")
	assert.Contains(t, err.Error(), "Incorrect API key provided: Bearer [redacted]")
	require.Len(t, log.errs, 1, "the rate limit was retried")
	assert.NotContains(t, log.errs[0].Error(), "SECRET", "the error given to OnRetry, which logs it")
	assert.ErrorIs(t, err, llm.ErrPermanent, "the class is kept")
	var apiErr *llm.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
	assert.Equal(t, "invalid_api_key", apiErr.Code)
	assert.NotContains(t, apiErr.Message, "SECRET")
	assert.Equal(t, "Bearer "+key, srv.Requests()[0].Header.Get("Authorization"), "the key itself is still sent")
}
