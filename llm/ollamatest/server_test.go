package ollamatest_test

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
	"github.com/tmc/langchaingo/llms/ollama"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/ollamatest"
	"github.com/coorflow/coorflow/llm/openaitest"
)

const model = "llama3.1:8b"

func newServer(t *testing.T, responses ...ollamatest.Response) *ollamatest.Server {
	t.Helper()
	srv := ollamatest.NewServer(responses...)
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

// newModel builds, with llm.New from YAML, the basic tier on srv: the
// ollama provider's path, wrappers included.
func newModel(t *testing.T, srv *ollamatest.Server, tierYAML string, log *retries) llms.Model {
	t.Helper()
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: ollama\n" +
		"    model: " + model + "\n    base_url: " + srv.URL() + "\n" + tierYAML))
	require.NoError(t, err)
	require.NoError(t, cfg.ApplyEnv(func(string) string { return "" }))
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

// TestTextAnswer: langchaingo's client leaves "stream" out of a call
// without a streaming function, so Ollama streams, and the client joins
// the lines.
func TestTextAnswer(t *testing.T) {
	srv := newServer(t, ollamatest.Response{Text: "Paris is the capital.", PromptEvalCount: 21, EvalCount: 5})
	m := newModel(t, srv, "", nil)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Capital of France?"),
	}, llms.WithMaxTokens(64))
	require.NoError(t, err)
	c := resp.Choices[0]
	assert.Equal(t, "Paris is the capital.", c.Content)
	assert.Equal(t, 21, c.GenerationInfo["PromptTokens"])
	assert.Equal(t, 5, c.GenerationInfo["CompletionTokens"])

	req := srv.Requests()[0]
	assert.Equal(t, "/api/chat", req.Path)
	assert.Equal(t, model, req.Chat.Model)
	assert.Nil(t, req.Chat.Stream, "no stream field: Ollama streams")
	require.Len(t, req.Chat.Messages, 2)
	assert.Equal(t, "system", req.Chat.Messages[0].Role)
	assert.Equal(t, "Be brief.", req.Chat.Messages[0].Content)
	assert.Equal(t, "Capital of France?", req.Chat.Messages[1].Content)
	assert.EqualValues(t, 64, req.Chat.Options["num_predict"])
}

func TestStreamingTokens(t *testing.T) {
	srv := newServer(t, ollamatest.Response{Text: "Hello there, streaming world.",
		Chunks: []string{"Hel", "lo there", ", streaming ", "world."}})
	m := newModel(t, srv, "", nil)
	stream, chunks := collect()
	resp, err := m.GenerateContent(t.Context(), human("hi"), stream)
	require.NoError(t, err)
	assert.Equal(t, []string{"Hel", "lo there", ", streaming ", "world."}, *chunks)
	assert.Equal(t, "Hello there, streaming world.", resp.Choices[0].Content)
	require.NotNil(t, srv.Requests()[0].Chat.Stream)
	assert.True(t, *srv.Requests()[0].Chat.Stream)
}

// TestToolsGoToTheOpenAICompatibleAPI: a call of the ollama provider
// that offers tools, or carries tool calls, goes to the same server's
// OpenAI-compatible API (/v1), which takes them; a call without tools
// stays on the native API.
func TestToolsGoToTheOpenAICompatibleAPI(t *testing.T) {
	native := newServer(t, ollamatest.Text("Plain answer."))
	compat := openaitest.NewServer(
		openaitest.ToolCalls(openaitest.ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}),
		openaitest.Text("Sunny in Paris."))
	t.Cleanup(compat.Close)
	both, err := ollamatest.Both(native, compat.URL())
	require.NoError(t, err)
	t.Cleanup(both.Close)
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: ollama\n    model: " + model + "\n"))
	require.NoError(t, err)
	require.NoError(t, cfg.ApplyEnv(func(k string) string { return map[string]string{"OLLAMA_HOST": both.URL}[k] }))
	models, err := llm.New(t.Context(), cfg)
	require.NoError(t, err)
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)

	resp, err := m.GenerateContent(t.Context(), human("Weather in Paris?"), weatherTools)
	require.NoError(t, err)
	require.Len(t, resp.Choices[0].ToolCalls, 1)
	assert.Equal(t, "get_weather", resp.Choices[0].ToolCalls[0].FunctionCall.Name)

	history := append(human("Weather in Paris?"),
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1",
			Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
			ToolCallID: "c1", Name: "get_weather", Content: "sunny"}}})
	resp, err = m.GenerateContent(t.Context(), history)
	require.NoError(t, err)
	assert.Equal(t, "Sunny in Paris.", resp.Choices[0].Content)

	resp, err = m.GenerateContent(t.Context(), human("hi"))
	require.NoError(t, err)
	assert.Equal(t, "Plain answer.", resp.Choices[0].Content)

	reqs := compat.Requests()
	require.Len(t, reqs, 2, "both calls with tools went to /v1")
	assert.Equal(t, model, reqs[0].Chat.Model)
	require.Len(t, reqs[0].Chat.Tools, 1)
	assert.Equal(t, "get_weather", reqs[0].Chat.Tools[0].Function.Name)
	require.Len(t, native.Requests(), 1, "the call without tools went to the native API")
	assert.Equal(t, model, native.Requests()[0].Chat.Model)
}

// TestClientDropsTools pins why: langchaingo's Ollama client (v0.1.14),
// used directly, sends no tools, and drops the tool calls of a reply.
// When a version of the client does both, this test fails, and the
// detour through /v1 in package llm can go.
func TestClientDropsTools(t *testing.T) {
	srv := newServer(t, ollamatest.ToolCalls(ollamatest.ToolCall{Name: "get_weather",
		Arguments: `{"city":"Paris"}`}))
	client, err := ollama.New(ollama.WithServerURL(srv.URL()), ollama.WithModel(model))
	require.NoError(t, err)
	resp, err := client.GenerateContent(t.Context(), human("Weather in Paris?"), weatherTools)
	require.NoError(t, err)
	assert.Empty(t, srv.Requests()[0].Chat.Tools, "the tools offered were not sent")
	assert.Empty(t, resp.Choices[0].ToolCalls, "the tool call of the reply was dropped")
	assert.Empty(t, resp.Choices[0].Content)
}

func TestErrorClasses(t *testing.T) {
	tests := []struct {
		name     string
		response ollamatest.Response
		stream   bool
		class    error
		status   int // of the *llm.APIError; 0 when there is none
		contains string
	}{
		{"model not found", ollamatest.ModelNotFound(model), false, llm.ErrPermanent, 404,
			`model "llama3.1:8b" not found, try pulling it first`},
		{"server busy", ollamatest.ServerBusy(), false, llm.ErrTransient, 503, "server busy"},
		{"rate limited", ollamatest.RateLimited(), false, llm.ErrRateLimited, 429, "too many requests"},
		{"context exceeded", ollamatest.ContextExceeded(), false, llm.ErrContextOverflow, 400,
			"the input length exceeds the context length"},
		{"runner failed", ollamatest.ServerError(), true, llm.ErrTransient, 500, "llama runner process has terminated"},
		{"empty", ollamatest.Empty(), false, llm.ErrEmptyResponse, 0,
			`ollama model "llama3.1:8b" returned nothing (no text and no tool call)`},
		{"lines that are not JSON", ollamatest.Malformed(), false, llm.ErrMalformedResponse, 0,
			"llm: malformed response from ollama: unexpected end of JSON input"},
		// An error line in a stream is text only: nothing says it may pass.
		{"error line mid-stream", ollamatest.Response{Text: "Partial", StreamError: "an error was encountered " +
			"while running the model"}, true, llm.ErrPermanent, 0, "an error was encountered while running the model"},
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
			_, err := m.GenerateContent(t.Context(), human("hi"), opts...)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.class)
			assert.ErrorContains(t, err, tt.contains)
			assert.Len(t, srv.Requests(), 1)
			if tt.status == 0 {
				return
			}
			var apiErr *llm.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, llm.ProviderOllama, apiErr.Provider)
			assert.Equal(t, tt.status, apiErr.StatusCode)
		})
	}
}

func TestBusyServerIsRetried(t *testing.T) {
	srv := newServer(t, ollamatest.ServerBusy(), ollamatest.Text("ok"))
	var log retries
	m := newModel(t, srv, "    max_retries: 1\n", &log)
	out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
	require.Len(t, log.errs, 1)
	assert.ErrorIs(t, log.errs[0], llm.ErrTransient)
	assert.Len(t, srv.Requests(), 2)
}

// TestStreamFalse: told "stream": false, the server answers with one JSON
// object, tool calls in Ollama's form included, as Ollama does.
func TestStreamFalse(t *testing.T) {
	srv := newServer(t, ollamatest.Response{Text: "Checking.", ToolCalls: []ollamatest.ToolCall{
		{Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
	resp, err := http.Post(srv.URL()+"/api/chat", "application/json",
		strings.NewReader(`{"model":"llama3.1:8b","stream":false,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
	var body struct {
		Message struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		Done       bool   `json:"done"`
		DoneReason string `json:"done_reason"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, "Checking.", body.Message.Content)
	require.Len(t, body.Message.ToolCalls, 1)
	assert.Equal(t, "get_weather", body.Message.ToolCalls[0].Function.Name)
	assert.JSONEq(t, `{"city":"Paris"}`, string(body.Message.ToolCalls[0].Function.Arguments))
	assert.True(t, body.Done)
	assert.Equal(t, "stop", body.DoneReason)
}

// TestAMessageOfSeveralTextPartsIsSentAsOne: the native client takes one
// text part per message; structured output adds its instruction as a
// second part, which the ollama provider joins to the first as a
// paragraph.
func TestAMessageOfSeveralTextPartsIsSentAsOne(t *testing.T) {
	srv := newServer(t, ollamatest.Text(`{"answer": 42}`))
	m := newModel(t, srv, "", nil)
	msgs := []llms.MessageContent{{Role: llms.ChatMessageTypeHuman,
		Parts: []llms.ContentPart{llms.TextPart("What is the answer?"), llms.TextPart("Reply in JSON.")}}}
	resp, err := m.GenerateContent(t.Context(), msgs)
	require.NoError(t, err)
	assert.Equal(t, `{"answer": 42}`, resp.Choices[0].Content)
	require.Len(t, srv.Requests(), 1)
	assert.Equal(t, "What is the answer?\n\nReply in JSON.", srv.Requests()[0].Chat.Messages[0].Content)
	assert.Len(t, msgs[0].Parts, 2, "the caller's messages are left as they were")
}
