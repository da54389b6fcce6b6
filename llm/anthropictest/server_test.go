package anthropictest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/anthropictest"
)

const model = "claude-sonnet-4-5"

// newServer starts a server closed at the end of the test.
func newServer(t *testing.T, responses ...anthropictest.Response) *anthropictest.Server {
	t.Helper()
	srv := anthropictest.NewServer(responses...)
	t.Cleanup(srv.Close)
	return srv
}

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

// newModel builds, with llm.New from YAML, the basic tier on srv: the
// anthropic provider's path, wrappers included.
func newModel(t *testing.T, srv *anthropictest.Server, tierYAML string, log *retries) llms.Model {
	t.Helper()
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: anthropic\n" +
		"    model: " + model + "\n    base_url: " + srv.BaseURL() + "\n" + tierYAML))
	require.NoError(t, err)
	require.NoError(t, cfg.ApplyEnv(func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-key"}[k]
	}))
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

// collect returns a streaming option and the chunks it receives.
func collect() (llms.CallOption, *[]string) {
	var chunks []string
	return llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
		if len(b) > 0 {
			chunks = append(chunks, string(b))
		}
		return nil
	}), &chunks
}

var weatherTools = llms.WithTools([]llms.Tool{
	{Type: "function", Function: &llms.FunctionDefinition{Name: "get_weather", Description: "Weather in a city",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{
			"type": "string"}}}}},
	{Type: "function", Function: &llms.FunctionDefinition{Name: "get_time", Description: "Time in a city",
		Parameters: map[string]any{"type": "object"}}},
})

func TestTextAnswer(t *testing.T) {
	srv := newServer(t, anthropictest.Response{Text: "Paris.", Usage: &anthropictest.Usage{InputTokens: 12,
		OutputTokens: 2}})
	m := newModel(t, srv, "", nil)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Capital of France?"),
	})
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	c := resp.Choices[0]
	assert.Equal(t, "Paris.", c.Content)
	assert.Equal(t, "end_turn", c.StopReason)
	assert.Equal(t, 12, c.GenerationInfo["InputTokens"])
	assert.Equal(t, 2, c.GenerationInfo["OutputTokens"])

	req := srv.Requests()[0]
	assert.Equal(t, "/v1/messages", req.Path)
	assert.Equal(t, "sk-ant-test-key", req.Header.Get("x-api-key"))
	assert.Equal(t, "2023-06-01", req.Header.Get("anthropic-version"))
	assert.Equal(t, model, req.Messages.Model)
	assert.Equal(t, "Be brief.", req.Messages.SystemText())
	require.Len(t, req.Messages.Messages, 1)
	assert.Equal(t, "user", req.Messages.Messages[0].Role)
	assert.Equal(t, "Capital of France?", req.Messages.Messages[0].Text())
	assert.Positive(t, req.Messages.MaxTokens, "the API requires max_tokens")
	assert.False(t, req.Messages.Stream)
}

// TestToolUseRoundTrip: a reply with text and two tool_use blocks is one
// choice with the text and both calls, streamed or not; sent back with the
// tool results, the calls arrive as tool_use blocks and the results as
// tool_result blocks answering them.
func TestToolUseRoundTrip(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[streaming], func(t *testing.T) {
			srv := newServer(t,
				anthropictest.ToolUses("Let me check both.",
					anthropictest.ToolUse{ID: "toolu_weather", Name: "get_weather", Input: `{"city":"Paris, France"}`},
					anthropictest.ToolUse{Name: "get_time", Input: `{"city":"東京"}`}),
				anthropictest.Text("Sunny in Paris; 21:00 in Tokyo."))
			m := newModel(t, srv, "", nil)
			opts := []llms.CallOption{weatherTools}
			if streaming {
				stream, _ := collect()
				opts = append(opts, stream)
			}
			history := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris, time in Tokyo?")}
			resp, err := m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			require.Len(t, resp.Choices, 1, "the blocks are one choice")
			c := resp.Choices[0]
			assert.Equal(t, "Let me check both.", c.Content)
			assert.Equal(t, "tool_use", c.StopReason)
			require.Len(t, c.ToolCalls, 2)
			assert.Equal(t, "toolu_weather", c.ToolCalls[0].ID)
			assert.Equal(t, "get_weather", c.ToolCalls[0].FunctionCall.Name)
			assert.JSONEq(t, `{"city":"Paris, France"}`, c.ToolCalls[0].FunctionCall.Arguments)
			assert.Equal(t, "toolu_1_2", c.ToolCalls[1].ID)
			assert.JSONEq(t, `{"city":"東京"}`, c.ToolCalls[1].FunctionCall.Arguments)
			assert.Equal(t, []string{"get_weather", "get_time"}, srv.Requests()[0].Messages.ToolNames())

			// The agent's next turn: its reply, then one tool message per call.
			reply := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
				llms.TextContent{Text: c.Content}, c.ToolCalls[0], c.ToolCalls[1]}}
			history = append(history, reply,
				llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
					ToolCallID: c.ToolCalls[0].ID, Name: "get_weather", Content: "sunny, 24°C"}}},
				llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
					ToolCallID: c.ToolCalls[1].ID, Name: "get_time", Content: "21:00"}}})
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "Sunny in Paris; 21:00 in Tokyo.", resp.Choices[0].Content)

			var assistant, results []anthropictest.Block
			for _, msg := range srv.Requests()[1].Messages.Messages {
				for _, b := range msg.Blocks() {
					switch {
					case msg.Role == "assistant":
						assistant = append(assistant, b)
					case b.Type == "tool_result":
						results = append(results, b)
					}
				}
			}
			require.Len(t, assistant, 3, "the text and both calls reach the API")
			assert.Equal(t, "Let me check both.", assistant[0].Text)
			assert.Equal(t, "tool_use", assistant[1].Type)
			assert.Equal(t, "toolu_weather", assistant[1].ID)
			assert.JSONEq(t, `{"city":"Paris, France"}`, string(assistant[1].Input))
			assert.Equal(t, "toolu_1_2", assistant[2].ID)
			require.Len(t, results, 2)
			assert.Equal(t, "toolu_weather", results[0].ToolUseID)
			assert.Equal(t, "sunny, 24°C", results[0].ResultText())
			assert.Equal(t, "toolu_1_2", results[1].ToolUseID)
			assert.Equal(t, "21:00", results[1].ResultText())
		})
	}
}

func TestStreamingTokens(t *testing.T) {
	srv := newServer(t, anthropictest.Response{Thinking: "The user wants a greeting.",
		Text: "Hello there, streaming world.", Chunks: []string{"Hel", "lo there", ", streaming ", "world."}})
	m := newModel(t, srv, "", nil)
	stream, chunks := collect()
	resp, err := m.GenerateContent(t.Context(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, stream)
	require.NoError(t, err)
	assert.Equal(t, []string{"Hel", "lo there", ", streaming ", "world."}, *chunks)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "Hello there, streaming world.", resp.Choices[0].Content)
	assert.Equal(t, "The user wants a greeting.", resp.Choices[0].ReasoningContent)
	assert.True(t, srv.Requests()[0].Messages.Stream)
}

// TestErrorClasses: Anthropic's errors, in its format and with its
// statuses, reach the caller with the right class and, where the client
// turned them into text, as a typed *llm.APIError.
func TestErrorClasses(t *testing.T) {
	tests := []struct {
		name     string
		response anthropictest.Response
		stream   bool
		class    error
		status   int    // of the *llm.APIError; 0 when there is none
		errType  string // of the *llm.APIError
		contains string
	}{
		{"rate limited", anthropictest.RateLimited(2 * time.Second), false, llm.ErrRateLimited, 429,
			"rate_limit_error", "exceed the rate limit"},
		{"overloaded", anthropictest.Overloaded(), false, llm.ErrTransient, 529, "overloaded_error", "Overloaded"},
		{"server error", anthropictest.ServerError(), false, llm.ErrTransient, 500, "api_error", "Internal server error"},
		{"prompt too long", anthropictest.PromptTooLong(200000), false, llm.ErrContextOverflow, 400,
			"invalid_request_error", "prompt is too long: 201234 tokens > 200000 maximum"},
		{"unauthorized", anthropictest.Unauthorized(), false, llm.ErrPermanent, 401, "authentication_error",
			"invalid x-api-key"},
		{"invalid request", anthropictest.InvalidRequest("max_tokens: must be greater than 0"), false,
			llm.ErrPermanent, 400, "invalid_request_error", "max_tokens"},
		{"overloaded mid-stream", anthropictest.OverloadedMidStream(""), true, llm.ErrTransient, 0, "",
			"received error event"},
		{"empty reply", anthropictest.Empty(), false, llm.ErrEmptyResponse, 0, "",
			`anthropic model "claude-sonnet-4-5" returned nothing`},
		{"empty stream", anthropictest.Empty(), true, llm.ErrEmptyResponse, 0, "",
			`anthropic model "claude-sonnet-4-5" returned nothing`},
		{"invalid JSON body", anthropictest.Response{Body: `{"id":"msg_1","type":"message","content":[}`}, false,
			llm.ErrMalformedResponse, 0, "", "llm: malformed response from anthropic: anthropic: failed to create message: parse response: invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.response)
			m := newModel(t, srv, "    max_retries: -1\n", nil)
			var opts []llms.CallOption
			if tt.stream {
				stream, _ := collect()
				opts = append(opts, stream)
			}
			_, err := m.GenerateContent(t.Context(), []llms.MessageContent{
				llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, opts...)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.class)
			assert.ErrorContains(t, err, tt.contains)
			assert.Len(t, srv.Requests(), 1)
			if tt.status == 0 {
				return
			}
			var apiErr *llm.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, llm.ProviderAnthropic, apiErr.Provider)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, tt.errType, apiErr.Type)
		})
	}
}

// TestRetries: rate limits wait as long as retry-after says; overloads,
// mid-stream overloads before any output and empty replies are retried.
func TestRetries(t *testing.T) {
	tests := []struct {
		name   string
		first  anthropictest.Response
		stream bool
		wait   time.Duration // the wait asked for; 0 for backoff
	}{
		{"rate limited", anthropictest.RateLimited(30 * time.Millisecond), false, 30 * time.Millisecond},
		{"overloaded", anthropictest.Overloaded(), false, 0},
		{"overloaded mid-stream before any text", anthropictest.OverloadedMidStream(""), true, 0},
		{"empty", anthropictest.Empty(), false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.first, anthropictest.Text("ok"))
			var log retries
			m := newModel(t, srv, "    max_retries: 1\n", &log)
			var opts []llms.CallOption
			if tt.stream {
				stream, _ := collect()
				opts = append(opts, stream)
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{
				llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, opts...)
			require.NoError(t, err)
			assert.Equal(t, "ok", resp.Choices[0].Content)
			require.Len(t, log.waits, 1)
			if tt.wait > 0 {
				assert.Equal(t, tt.wait, log.waits[0])
			}
			assert.Len(t, srv.Requests(), 2)
		})
	}
}

// TestOverloadAfterOutputIsNotRetried: once text was streamed, a retry
// would repeat it.
func TestOverloadAfterOutputIsNotRetried(t *testing.T) {
	srv := newServer(t, anthropictest.OverloadedMidStream("Partial answer"), anthropictest.Text("never"))
	m := newModel(t, srv, "    max_retries: 2\n", nil)
	stream, chunks := collect()
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
		stream)
	assert.ErrorIs(t, err, llm.ErrTransient)
	assert.Equal(t, []string{"Partial ", "answer"}, *chunks)
	assert.Len(t, srv.Requests(), 1)
}

func TestRequestRecording(t *testing.T) {
	srv := newServer(t)
	resp, err := http.Post(srv.URL()+"/v1/complete", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, "error", body["type"])
	assert.Len(t, srv.Requests(), 1)
	assert.Zero(t, srv.Remaining())
}

func TestCacheBreakpointsArriveAndCacheReadsAreRead(t *testing.T) {
	srv := newServer(t,
		anthropictest.Response{ToolUses: []anthropictest.ToolUse{{ID: "toolu_1", Name: "get_weather", Input: `{"city":"Paris"}`}},
			Usage: &anthropictest.Usage{InputTokens: 40, OutputTokens: 9, CacheCreationInputTokens: 1500}},
		anthropictest.Response{Text: "Sunny.", Usage: &anthropictest.Usage{InputTokens: 50, OutputTokens: 2,
			CacheReadInputTokens: 1500, CacheCreationInputTokens: 30}},
	)
	m := newModel(t, srv, "", nil)
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?"),
	}
	resp, err := m.GenerateContent(t.Context(), msgs, weatherTools)
	require.NoError(t, err)
	assert.Zero(t, llm.CachedInputTokens(resp), "a cache write is not a read")
	call := resp.Choices[0].ToolCalls[0]
	msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: call.ID, Name: "get_weather", Content: "sunny, 24°C"}}})
	resp, err = m.GenerateContent(t.Context(), msgs, weatherTools)
	require.NoError(t, err)
	assert.Equal(t, "Sunny.", resp.Choices[0].Content)
	assert.Equal(t, 1500, llm.CachedInputTokens(resp))

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	eph := `{"type":"ephemeral"}`
	assert.Equal(t, map[string]string{"tools[1]": eph, "system[0]": eph, "messages[0].content[0]": eph},
		reqs[0].Messages.CacheBreakpoints(), "the stable prefix and the conversation so far end at breakpoints")
	assert.Equal(t, map[string]string{"tools[1]": eph, "system[0]": eph, "messages[0].content[0]": eph, "messages[2].content[0]": eph},
		reqs[1].Messages.CacheBreakpoints(), "the stable prefix ends at the first message; the last breakpoint moves to the newest tool result")
	assert.Equal(t, "Be brief.", reqs[1].Messages.SystemText())
	assert.Equal(t, "tool_result", reqs[1].Messages.Messages[2].Blocks()[0].Type)
	assert.Equal(t, []string{"get_weather", "get_time"}, reqs[1].Messages.ToolNames())
}

func TestCallerBreakpointsAreKept(t *testing.T) {
	srv := newServer(t, anthropictest.Text("ok"))
	m := newModel(t, srv, "", nil)
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{
		{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
			llms.WithCacheControl(llms.TextPart("A long document."), &llms.CacheControl{Type: "ephemeral"}),
			llms.TextPart("What does it say?"),
		}},
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"messages[0].content[0]": `{"type":"ephemeral"}`},
		srv.Requests()[0].Messages.CacheBreakpoints(), "no breakpoint is added after the caller's")
}
