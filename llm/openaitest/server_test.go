package openaitest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// newServer starts a server closed at the end of the test.
func newServer(t *testing.T, responses ...openaitest.Response) *openaitest.Server {
	t.Helper()
	srv := openaitest.NewServer(responses...)
	t.Cleanup(srv.Close)
	return srv
}

// client returns langchaingo's real OpenAI client pointed at srv.
func client(t *testing.T, srv *openaitest.Server) *openai.LLM {
	t.Helper()
	m, err := openai.New(openai.WithBaseURL(srv.BaseURL()), openai.WithToken("test"), openai.WithModel("gpt-4o"))
	require.NoError(t, err)
	return m
}

func human(s string) []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, s)}
}

var weatherTools = llms.WithTools([]llms.Tool{
	{Type: "function", Function: &llms.FunctionDefinition{Name: "get_weather", Description: "Weather in a city",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{
			"type": "string"}}}}},
	{Type: "function", Function: &llms.FunctionDefinition{Name: "get_time", Description: "Time in a city",
		Parameters: map[string]any{"type": "object"}}},
})

func TestParallelToolCalls(t *testing.T) {
	reply := openaitest.ToolCalls(
		openaitest.ToolCall{ID: "call_weather", Name: "get_weather", Arguments: `{"city":"Paris, France"}`},
		openaitest.ToolCall{Name: "get_time", Arguments: `{"city":"東京","tz":"Asia/Tokyo"}`},
	)
	for _, streaming := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[streaming]
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, reply)
			opts := []llms.CallOption{weatherTools}
			if streaming {
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			resp, err := client(t, srv).GenerateContent(t.Context(), human("Weather and time?"), opts...)
			require.NoError(t, err)
			require.Len(t, resp.Choices, 1)
			c := resp.Choices[0]
			assert.Equal(t, "tool_calls", c.StopReason)
			assert.Equal(t, []llms.ToolCall{
				{ID: "call_weather", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather",
					Arguments: `{"city":"Paris, France"}`}},
				{ID: "call_1_2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_time",
					Arguments: `{"city":"東京","tz":"Asia/Tokyo"}`}},
			}, c.ToolCalls)

			reqs := srv.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, streaming, reqs[0].Chat.Stream)
			assert.Equal(t, []string{"get_weather", "get_time"}, reqs[0].Chat.ToolNames())
		})
	}
}

func TestStreamingDeliversChunks(t *testing.T) {
	srv := newServer(t, openaitest.Response{
		Text:   "Hello there, streaming world.",
		Chunks: []string{"Hel", "lo there", ", streaming ", "world."},
		Usage:  &openaitest.Usage{PromptTokens: 11, CompletionTokens: 7},
	})
	var chunks []string
	resp, err := client(t, srv).GenerateContent(t.Context(), human("hi"),
		llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
			if len(b) > 0 {
				chunks = append(chunks, string(b))
			}
			return nil
		}))
	require.NoError(t, err)
	assert.Equal(t, []string{"Hel", "lo there", ", streaming ", "world."}, chunks)
	c := resp.Choices[0]
	assert.Equal(t, "Hello there, streaming world.", c.Content)
	assert.Equal(t, "stop", c.StopReason)
	assert.Equal(t, 11, c.GenerationInfo["PromptTokens"])
	assert.Equal(t, 7, c.GenerationInfo["CompletionTokens"])
	assert.Equal(t, 18, c.GenerationInfo["TotalTokens"])
	req := srv.Requests()[0].Chat
	require.NotNil(t, req.StreamOptions)
	assert.True(t, req.StreamOptions.IncludeUsage)
}

func TestReplyContents(t *testing.T) {
	srv := newServer(t,
		openaitest.Response{Text: "42", Reasoning: "Let me think.", Usage: &openaitest.Usage{PromptTokens: 5,
			CompletionTokens: 4, ReasoningTokens: 3}},
		openaitest.Text("estimated"),
	)
	m := client(t, srv)
	resp, err := m.GenerateContent(t.Context(), human("answer?"))
	require.NoError(t, err)
	c := resp.Choices[0]
	assert.Equal(t, "42", c.Content)
	assert.Equal(t, "Let me think.", c.ReasoningContent)
	assert.Equal(t, 3, c.GenerationInfo["ReasoningTokens"])

	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "hello"),
	}
	resp, err = m.GenerateContent(t.Context(), msgs)
	require.NoError(t, err)
	assert.Equal(t, llm.EstimateMessages(msgs), resp.Choices[0].GenerationInfo["PromptTokens"],
		"default usage is llm's estimate")

	got := srv.Requests()[1].Chat
	assert.Equal(t, "gpt-4o", got.Model)
	require.Len(t, got.Messages, 2)
	assert.Equal(t, "system", got.Messages[0].Role)
	assert.Equal(t, "Be brief.", got.Messages[0].Text())
	assert.Equal(t, "hello", got.Messages[1].Text())
}

func TestErrorsThroughRealClient(t *testing.T) {
	quick := llm.RetryPolicy{MaxRetries: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	tests := []struct {
		name         string
		responses    []openaitest.Response
		wantText     string
		wantClass    error
		wantRequests int
	}{
		{"429 then success is retried", []openaitest.Response{openaitest.RateLimited(10 * time.Millisecond),
			openaitest.Text("ok")}, "ok", nil, 2},
		{"500 then success is retried", []openaitest.Response{openaitest.ServerError(), openaitest.Text("ok")},
			"ok", nil, 2},
		{"no choices is retried", []openaitest.Response{openaitest.NoChoices(), openaitest.Text("ok")}, "ok", nil, 2},
		{"context length is overflow, not retried", []openaitest.Response{openaitest.ContextLengthExceeded(8192),
			openaitest.Text("never")}, "", llm.ErrContextOverflow, 1},
		{"401 is permanent, not retried", []openaitest.Response{openaitest.Unauthorized(), openaitest.Text("never")},
			"", llm.ErrPermanent, 1},
		{"retries run out", []openaitest.Response{openaitest.ServerError(), openaitest.ServerError(),
			openaitest.ServerError(), openaitest.ServerError()}, "", llm.ErrTransient, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.responses...)
			out, err := llms.GenerateFromSinglePrompt(t.Context(), llm.WithRetry(client(t, srv), quick), "hi")
			assert.Len(t, srv.Requests(), tt.wantRequests)
			if tt.wantClass != nil {
				assert.ErrorIs(t, err, tt.wantClass)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantText, out)
		})
	}
}

func TestSlowResponseTimesOut(t *testing.T) {
	srv := newServer(t, openaitest.Delayed(time.Minute, openaitest.Text("late")))
	start := time.Now()
	_, err := llms.GenerateFromSinglePrompt(t.Context(), llm.WithTimeout(client(t, srv), 50*time.Millisecond), "hi")
	assert.Less(t, time.Since(start), 30*time.Second, "the timeout, not the server, ended the call")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, llm.Classify(err), llm.ErrTransient)
	assert.ErrorContains(t, err, "timed out after 50ms")
}

func TestScriptExhausted(t *testing.T) {
	srv := newServer(t, openaitest.Text("only"))
	m := client(t, srv)
	_, err := m.Call(t.Context(), "one")
	require.NoError(t, err)
	_, err = m.Call(t.Context(), "two")
	assert.ErrorContains(t, err, "openaitest: script exhausted: request 2, 1 responses scripted")
	assert.ErrorIs(t, llm.Classify(err), llm.ErrPermanent)
	assert.Zero(t, srv.Remaining())

	srv.Enqueue(openaitest.Text("more"))
	out, err := m.Call(t.Context(), "three")
	require.NoError(t, err)
	assert.Equal(t, "more", out)
}

func TestUnknownRoute(t *testing.T) {
	srv := newServer(t)
	m, err := openai.New(openai.WithBaseURL(srv.URL()+"/nope"), openai.WithToken("test"),
		openai.WithModel("gpt-4o"))
	require.NoError(t, err)
	_, err = llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	assert.ErrorIs(t, llm.Classify(err), llm.ErrPermanent)
	require.Len(t, srv.Requests(), 1)
	assert.True(t, strings.HasPrefix(srv.Requests()[0].Path, "/nope"))
}
