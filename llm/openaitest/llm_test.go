package openaitest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
)

type retries struct {
	mu    sync.Mutex
	waits []time.Duration
	errs  []error
}

func (r *retries) record(_ llm.Tier, _ int, wait time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, wait)
	r.errs = append(r.errs, err)
}

// newModels builds llm.Models from YAML whose base URL is the server's.
func newModels(t *testing.T, srv *openaitest.Server, tierYAML string, onRetry *retries) *llm.Models {
	t.Helper()
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: openai\n" +
		"    model: gpt-4o-mini\n    base_url: " + srv.BaseURL() + "\n    api_key_env: COORFLOW_TEST_KEY\n" +
		tierYAML))
	require.NoError(t, err)
	require.NoError(t, cfg.ApplyEnv(func(k string) string {
		return map[string]string{"COORFLOW_TEST_KEY": "sk-test-123"}[k]
	}))
	if onRetry != nil {
		cfg.OnRetry = onRetry.record
	}
	models, err := llm.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, models.Close()) })
	return models
}

func TestNewEndToEnd(t *testing.T) {
	srv := newServer(t, openaitest.Text("Hello from the test server."))
	models := newModels(t, srv, "", nil)
	m, err := models.Model(llm.TierReasoning) // falls back to basic
	require.NoError(t, err)

	resp, err := m.GenerateContent(t.Context(), human("hi"))
	require.NoError(t, err)
	assert.Equal(t, "Hello from the test server.", resp.Choices[0].Content)
	assert.Equal(t, llm.Profile{Provider: "openai", Model: "gpt-4o-mini", MaxInputTokens: 128_000},
		models.Profile(llm.TierBasic))

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
	assert.Equal(t, "Bearer sk-test-123", reqs[0].Header.Get("Authorization"), "key read from the named variable")
	assert.Equal(t, "gpt-4o-mini", reqs[0].Chat.Model)
}

func TestNewHonoursRetryAfter(t *testing.T) {
	srv := newServer(t, openaitest.RateLimited(40*time.Millisecond), openaitest.Text("ok"))
	var log retries
	m, err := newModels(t, srv, "", &log).Model(llm.TierBasic)
	require.NoError(t, err)

	out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
	require.Len(t, log.waits, 1)
	assert.Equal(t, 40*time.Millisecond, log.waits[0], "the wait is the server's retry-after-ms")
	var apiErr *llm.APIError
	require.ErrorAs(t, log.errs[0], &apiErr)
	assert.Equal(t, 429, apiErr.StatusCode)
	assert.Equal(t, "rate_limit_exceeded", apiErr.Code)
	assert.Len(t, srv.Requests(), 2)
}

func TestNewTypedErrors(t *testing.T) {
	tests := []struct {
		name      string
		tierYAML  string
		response  openaitest.Response
		status    int
		code      string
		class     error
		deadline  bool
		wantCalls int
	}{
		{"context length", "", openaitest.ContextLengthExceeded(128000), 400, "context_length_exceeded",
			llm.ErrContextOverflow, false, 1},
		{"unauthorized", "", openaitest.Unauthorized(), 401, "invalid_api_key", llm.ErrPermanent, false, 1},
		{"server error without retries", "    max_retries: -1\n", openaitest.ServerError(), 500, "",
			llm.ErrTransient, false, 1},
		{"timeout", "    max_retries: -1\n    timeout: 50ms\n",
			openaitest.Delayed(time.Minute, openaitest.Text("late")), 0, "", llm.ErrTransient, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.response, openaitest.Text("never"))
			var log retries
			m, err := newModels(t, srv, tt.tierYAML, &log).Model(llm.TierBasic)
			require.NoError(t, err)
			_, err = m.GenerateContent(t.Context(), human("hi"), llms.WithMaxTokens(10))
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.class)
			assert.Len(t, srv.Requests(), tt.wantCalls)
			assert.Empty(t, log.waits, "not retried")
			if tt.deadline {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				return
			}
			var apiErr *llm.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, llm.ProviderOpenAI, apiErr.Provider)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, tt.code, apiErr.Code)
			assert.NotEmpty(t, apiErr.Message)
		})
	}
}

func TestNewStreamsThroughWrappers(t *testing.T) {
	srv := newServer(t, openaitest.Text("one two three"))
	m, err := newModels(t, srv, "", nil).Model(llm.TierBasic)
	require.NoError(t, err)
	var got strings.Builder
	_, err = m.GenerateContent(t.Context(), human("count"), llms.WithStreamingFunc(
		func(_ context.Context, b []byte) error {
			got.Write(b)
			return nil
		}))
	require.NoError(t, err)
	assert.Equal(t, "one two three", got.String())
}

func TestCachedPromptTokensAreReportedAndRead(t *testing.T) {
	srv := newServer(t, openaitest.Text("one"), openaitest.Text("two"), openaitest.Text("three"),
		openaitest.Response{Text: "four", Usage: &openaitest.Usage{PromptTokens: 3000, CachedTokens: 2048}})
	models := newModels(t, srv, "", nil)
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	system := llms.TextParts(llms.ChatMessageTypeSystem, strings.Repeat("Stable instructions. ", 400)) // ~2,000 tokens
	first := []llms.MessageContent{system, llms.TextParts(llms.ChatMessageTypeHuman, "question one")}

	resp, err := m.GenerateContent(t.Context(), first)
	require.NoError(t, err)
	assert.Zero(t, llm.CachedInputTokens(resp), "nothing is cached on the first call")

	second := append(first, llms.TextParts(llms.ChatMessageTypeAI, "one"), llms.TextParts(llms.ChatMessageTypeHuman, "question two"))
	resp, err = m.GenerateContent(t.Context(), second)
	require.NoError(t, err)
	cached := llm.CachedInputTokens(resp)
	prompt, _ := llm.Usage(resp, second)
	assert.Positive(t, cached, "the shared beginning is served from the cache")
	assert.Zero(t, cached%openaitest.CacheStepTokens, "in steps of 128 tokens")
	assert.Greater(t, cached, prompt*9/10)
	assert.Less(t, cached, prompt)

	changed := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Other instructions."), second[1]}
	resp, err = m.GenerateContent(t.Context(), changed)
	require.NoError(t, err)
	assert.Zero(t, llm.CachedInputTokens(resp), "a changed first message misses the cache")

	resp, err = m.GenerateContent(t.Context(), first)
	require.NoError(t, err)
	assert.Equal(t, 2048, llm.CachedInputTokens(resp), "a scripted count is sent as it is")
}

func TestNewFuncAnswersFromTheRequest(t *testing.T) {
	srv := openaitest.NewFunc(func(req openaitest.ChatRequest) openaitest.Response {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return openaitest.Text("the tool said " + last.Text())
		}
		return openaitest.ToolCalls(openaitest.ToolCall{ID: "c1", Name: "lookup", Arguments: `{"q":"` + last.Text() + `"}`})
	})
	t.Cleanup(srv.Close)
	models := newModels(t, srv, "", nil)
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	msgs := human("cats")
	resp, err := m.GenerateContent(t.Context(), msgs)
	require.NoError(t, err)
	require.Len(t, resp.Choices[0].ToolCalls, 1)
	assert.JSONEq(t, `{"q":"cats"}`, resp.Choices[0].ToolCalls[0].FunctionCall.Arguments)
	msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{resp.Choices[0].ToolCalls[0]}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "lookup", Content: "meow"}}})
	resp, err = m.GenerateContent(t.Context(), msgs)
	require.NoError(t, err)
	assert.Equal(t, "the tool said meow", resp.Choices[0].Content)
	assert.Empty(t, srv.Requests(), "a func server keeps no requests")
}
