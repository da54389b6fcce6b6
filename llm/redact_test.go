package llm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
)

func TestRedactTakesOutKeysAndWhatLooksLikeACredential(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"configured key", "key proj-7f3a9c2e rejected", "key [redacted] rejected"},
		{"bearer token", "Incorrect API key provided: Bearer abc.def-ghi, try again", "Incorrect API key provided: Bearer [redacted], try again"},
		{"bearer in lower case", "authorization: bearer xyz123", "authorization: Bearer [redacted]"},
		{"openai key", "Incorrect API key provided: sk-test-SECRET...", "Incorrect API key provided: [redacted]..."},
		{"anthropic key", "invalid x-api-key sk-ant-api03-abcdefgh", "invalid x-api-key [redacted]"},
		{"google key", "API key AIzaSyA1234567890abcdefghijklmno not valid", "API key [redacted] not valid"},
		{"key in a url", `Post "https://host/v1?alt=sse&key=s3cr3t&x=1": EOF`, `Post "https://host/v1?alt=sse&key=[redacted]&x=1": EOF`},
		{"short keys are not looked for", "abc is fine", "abc is fine"},
		{"nothing secret", "status 500: overloaded", "status 500: overloaded"},
		{"sk- words are not keys", "task-list and sk-1", "task-list and sk-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, llm.Redact(tt.in, "proj-7f3a9c2e", "abc", ""))
		})
	}
}

func TestRedactErrorKeepsTheChain(t *testing.T) {
	cause := fmt.Errorf("client: key proj-7f3a9c2e: %w", context.DeadlineExceeded)
	api := &llm.APIError{Provider: llm.ProviderOpenAI, StatusCode: 401, Code: "invalid_api_key",
		Message: "Incorrect API key provided: proj-7f3a9c2e", Err: cause}
	for _, err := range []error{api, fmt.Errorf("llm: call: %w", api)} {
		got := llm.RedactError(err, "proj-7f3a9c2e")
		assert.NotContains(t, got.Error(), "proj-7f3a9c2e")
		assert.Contains(t, got.Error(), "status 401 (invalid_api_key): Incorrect API key provided: [redacted]")
		assert.ErrorIs(t, got, context.DeadlineExceeded, "errors.Is sees the chain")
		var apiErr *llm.APIError
		require.ErrorAs(t, got, &apiErr)
		assert.Equal(t, 401, apiErr.StatusCode)
		assert.Equal(t, "Incorrect API key provided: [redacted]", apiErr.Message, "the *APIError errors.As finds is redacted")
		assert.NotContains(t, apiErr.Error(), "proj-7f3a9c2e")
		assert.Equal(t, "proj-7f3a9c2e", api.Message[len(api.Message)-13:], "the original is left alone")
	}
	plain := errors.New("nothing to hide")
	assert.Same(t, plain, llm.RedactError(plain, "proj-7f3a9c2e"), "an error with nothing to take out is returned as is")
	assert.NoError(t, llm.RedactError(nil))
}
