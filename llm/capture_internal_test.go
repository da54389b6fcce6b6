package llm

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseAPIError(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		header http.Header
		want   APIError
	}{
		{"openai", `{"error":{"message":"too long","type":"invalid_request_error","param":"messages",` +
			`"code":"context_length_exceeded"}}`, nil,
			APIError{Code: "context_length_exceeded", Type: "invalid_request_error", Message: "too long"}},
		{"numeric code", `{"error":{"message":"m","code":400}}`, nil, APIError{Code: "400", Message: "m"}},
		{"anthropic", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, nil,
			APIError{Type: "overloaded_error", Message: "Overloaded"}},
		{"gemini openai-compatible, in a list", `[{"error":{"code":429,"message":"Resource has been exhausted",` +
			`"status":"RESOURCE_EXHAUSTED"}}]`, nil,
			APIError{Code: "429", Type: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted"}},
		{"ollama", `{"error":"model \"x\" not found"}`, nil, APIError{Message: `model "x" not found`}},
		{"not json", "upstream connect error", nil, APIError{Message: "upstream connect error"}},
		{"retry-after seconds", `{}`, http.Header{"Retry-After": {"3"}},
			APIError{Message: "{}", RetryAfter: 3 * time.Second}},
		{"retry-after-ms wins", `{}`, http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"250"}},
			APIError{Message: "{}", RetryAfter: 250 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseAPIError(ProviderOpenAI, 400, tt.header, []byte(tt.body))
			tt.want.Provider, tt.want.StatusCode = ProviderOpenAI, 400
			assert.Equal(t, &tt.want, got)
		})
	}
}

func TestRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}
	assert.Equal(t, 90*time.Second, retryAfter(h, now))
	h = http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}
	assert.Zero(t, retryAfter(h, now), "a date in the past asks for no wait")
	assert.Zero(t, retryAfter(http.Header{"Retry-After": {"soon"}}, now))
}
