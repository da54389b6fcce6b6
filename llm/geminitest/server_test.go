package geminitest_test

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
	"github.com/coorflow/coorflow/llm/geminitest"
)

const (
	model = "gemini-2.0-flash"
	key   = "AIza-test-key"
)

func newServer(t *testing.T, responses ...geminitest.Response) *geminitest.Server {
	t.Helper()
	srv := geminitest.NewServer(responses...)
	t.Cleanup(srv.Close)
	return srv
}

type retries struct {
	mu   sync.Mutex
	errs []error
}

func (r *retries) record(_ llm.Tier, _ int, _ time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *retries) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

// newModel builds, with llm.New from YAML, the basic tier on srv: the
// googleai provider's path, wrappers included.
func newModel(t *testing.T, srv *geminitest.Server, tierYAML string, log *retries) llms.Model {
	t.Helper()
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: googleai\n" +
		"    model: " + model + "\n    base_url: " + srv.URL() + "\n" + tierYAML))
	require.NoError(t, err)
	require.NoError(t, cfg.ApplyEnv(func(k string) string { return map[string]string{"GOOGLE_API_KEY": key}[k] }))
	if log != nil {
		cfg.OnRetry = log.record
	}
	models, err := llm.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, models.Close()) })
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	return m
}

func human(s string) []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, s)}
}

func collect() (llms.CallOption, *[]string) {
	var chunks []string
	return llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
		if len(b) > 0 {
			chunks = append(chunks, string(b))
		}
		return nil
	}), &chunks
}

var weatherTools = llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
	Name: "get_weather", Description: "Weather in a city",
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{
		"type": "string"}}}}}})

func TestTextAnswer(t *testing.T) {
	srv := newServer(t, geminitest.Text("Paris is the capital of France."))
	m := newModel(t, srv, "", nil)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Capital of France?"),
	})
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "Paris is the capital of France.", resp.Choices[0].Content)
	assert.Equal(t, "stop", resp.Choices[0].StopReason)

	req := srv.Requests()[0]
	assert.Equal(t, "/v1beta/openai/chat/completions", req.Path)
	assert.Equal(t, model, req.Chat.Model)
	assert.Equal(t, key, geminitest.APIKey(req))
	require.Len(t, req.Chat.Messages, 2)
	assert.Equal(t, "system", req.Chat.Messages[0].Role)
	assert.Equal(t, "Be brief.", req.Chat.Messages[0].Text())
	assert.Equal(t, "user", req.Chat.Messages[1].Role)
	assert.Equal(t, "Capital of France?", req.Chat.Messages[1].Text())
}

// TestBaseURLNamingTheEndpoint: a base_url that already names the
// OpenAI-compatible endpoint, as Google documents it, reaches the same
// path.
func TestBaseURLNamingTheEndpoint(t *testing.T) {
	srv := newServer(t, geminitest.Text("ok"))
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: googleai\n" +
		"    model: " + model + "\n    base_url: " + srv.URL() + geminitest.Prefix + "/\n"))
	require.NoError(t, err)
	require.NoError(t, cfg.ApplyEnv(func(k string) string { return map[string]string{"GOOGLE_API_KEY": key}[k] }))
	models, err := llm.New(t.Context(), cfg)
	require.NoError(t, err)
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
	assert.Equal(t, "/v1beta/openai/chat/completions", srv.Requests()[0].Path)
}

func TestStreamingTokens(t *testing.T) {
	srv := newServer(t, geminitest.Response{Text: "Hello there, streaming world.",
		Chunks: []string{"Hel", "lo there", ", streaming ", "world."}})
	m := newModel(t, srv, "", nil)
	stream, chunks := collect()
	resp, err := m.GenerateContent(t.Context(), human("hi"), stream)
	require.NoError(t, err)
	assert.Equal(t, []string{"Hel", "lo there", ", streaming ", "world."}, *chunks)
	assert.Equal(t, "Hello there, streaming world.", resp.Choices[0].Content)
}

// TestFunctionCallRoundTrip: a reply with text and a function call is one
// choice with both; sent back with the function's response, the call and
// the response arrive as the assistant's tool_calls and a tool message.
func TestFunctionCallRoundTrip(t *testing.T) {
	srv := newServer(t,
		geminitest.FunctionCalls("Let me check.", geminitest.FunctionCall{Name: "get_weather",
			Arguments: `{"city":"Paris"}`}),
		geminitest.Text("Sunny in Paris."))
	m := newModel(t, srv, "", nil)
	history := human("Weather in Paris?")
	resp, err := m.GenerateContent(t.Context(), history, weatherTools)
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	c := resp.Choices[0]
	assert.Equal(t, "Let me check.", c.Content)
	require.Len(t, c.ToolCalls, 1)
	assert.Equal(t, "get_weather", c.ToolCalls[0].FunctionCall.Name)
	assert.JSONEq(t, `{"city":"Paris"}`, c.ToolCalls[0].FunctionCall.Arguments)
	assert.Equal(t, []string{"get_weather"}, srv.Requests()[0].Chat.ToolNames())

	history = append(history,
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.TextContent{Text: c.Content}, c.ToolCalls[0]}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
			ToolCallID: c.ToolCalls[0].ID, Name: "get_weather", Content: "sunny, 24°C"}}})
	resp, err = m.GenerateContent(t.Context(), history, weatherTools)
	require.NoError(t, err)
	assert.Equal(t, "Sunny in Paris.", resp.Choices[0].Content)

	msgs := srv.Requests()[1].Chat.Messages
	require.Len(t, msgs, 3)
	assert.Equal(t, "assistant", msgs[1].Role)
	assert.Equal(t, "Let me check.", msgs[1].Text())
	require.Len(t, msgs[1].ToolCalls, 1)
	assert.Equal(t, "get_weather", msgs[1].ToolCalls[0].Function.Name)
	assert.JSONEq(t, `{"city":"Paris"}`, msgs[1].ToolCalls[0].Function.Arguments)
	assert.Equal(t, "tool", msgs[2].Role)
	assert.Equal(t, c.ToolCalls[0].ID, msgs[2].ToolCallID)
	assert.Equal(t, "sunny, 24°C", msgs[2].Text())
}

func TestErrorClasses(t *testing.T) {
	tests := []struct {
		name     string
		response geminitest.Response
		class    error
		contains string
	}{
		{"resource exhausted", geminitest.ResourceExhausted(), llm.ErrRateLimited, "Resource has been exhausted"},
		{"token limit", geminitest.TokenLimit(1048576), llm.ErrContextOverflow,
			"The input token count (1053576) exceeds the maximum number of tokens allowed (1048576)."},
		{"internal", geminitest.Internal(), llm.ErrTransient, "An internal error has occurred"},
		{"invalid API key", geminitest.InvalidAPIKey(), llm.ErrPermanent, "API key not valid"},
		{"empty candidate", geminitest.Empty(), llm.ErrEmptyResponse,
			`googleai model "gemini-2.0-flash" returned nothing (no text and no tool call)`},
		{"no choices", geminitest.NoChoices(), llm.ErrEmptyResponse,
			`googleai model "gemini-2.0-flash" returned nothing (no choices: empty response)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.response)
			m := newModel(t, srv, "    max_retries: -1\n", nil)
			_, err := m.GenerateContent(t.Context(), human("hi"))
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.class)
			assert.ErrorContains(t, err, tt.contains)
			assert.NotContains(t, err.Error(), key)
			assert.Len(t, srv.Requests(), 1)
		})
	}
}

func TestRateLimitIsRetried(t *testing.T) {
	srv := newServer(t, geminitest.ResourceExhausted(), geminitest.Text("ok"))
	var log retries
	m := newModel(t, srv, "    max_retries: 1\n", &log)
	out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
	assert.Equal(t, 1, log.count())
	assert.Len(t, srv.Requests(), 2)
}

// TestUnavailableIsRetried: Gemini's 503 is transient, and retried.
func TestUnavailableIsRetried(t *testing.T) {
	srv := newServer(t, geminitest.Unavailable(), geminitest.Text("ok"))
	var log retries
	m := newModel(t, srv, "    max_retries: 1\n", &log)
	out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
	require.Equal(t, 1, log.count())
	assert.ErrorIs(t, log.errs[0], llm.ErrTransient)
	assert.ErrorContains(t, log.errs[0], "The model is overloaded")
	assert.Len(t, srv.Requests(), 2)
}
