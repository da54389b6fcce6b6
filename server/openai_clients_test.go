package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	lcopenai "github.com/tmc/langchaingo/llms/openai"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/openaitest"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/server"
	wfs "github.com/coorflow/coorflow/workflows"
)

// The README's request, which examples/coor's demo script is written for
// (one turn of it), and a conversation of two messages, which the
// reactive demo model answers.
const (
	coorQuestion = "Compare SQLite and PostgreSQL for an embedded agent engine"
	coorTitle    = "# SQLite or PostgreSQL for an embedded agent engine"
	coorOther    = "Compare Redis and Memcached for a session cache"
	coorFollowUp = "And which one for a rate limiter?"
)

// coorEnv serves examples/coor on its demo model (no provider key), as
// `coorflow serve examples/coor` does: its MCP description says which
// channels are its input and answer. Bob's budget is 100 tokens.
func coorEnv(t *testing.T) *env {
	t.Helper()
	f, err := wfs.Load("../examples/coor/workflow.yaml")
	require.NoError(t, err)
	noEnv := func(string) string { return "" }
	ms, err := f.Resolve(t.Context(), wfs.ModelOptions{Getenv: noEnv})
	require.NoError(t, err)
	require.True(t, ms.Demo, "no provider: the demo script")
	r, err := f.Compile(t.Context(), wfs.Env{Models: ms.Models, Getenv: noEnv})
	require.NoError(t, err)
	return newEnv(t, server.Config{Workflows: map[string]*graph.Runnable{"coor": r},
		Recorder: recorder(t), OwnerBudgets: map[string]llm.Budget{"bob": {Tokens: 100}},
		MCPTools: map[string]server.MCPTool{"coor": {Input: f.InputChannel(), InputSchema: f.InputSchema(), Output: f.OutputChannel()}}})
}

// TestTheOpenAIClientStreamsACoorRunsAnswer: the official openai JS
// client lists the workflows as models, gets a coor run's report at once
// and streamed (the reporter's tokens, then the usage), continues the
// conversation on its thread, and gets OpenAI's errors as its own error
// classes: a run a budget stops is a RateLimitError (insufficient_quota).
func TestTheOpenAIClientStreamsACoorRunsAnswer(t *testing.T) {
	openaitest.NodeModules(t) // skip before serving when the client is absent
	e := coorEnv(t)
	rep := openaitest.Run(t, openaitest.Env{URL: e.hs.URL + server.OpenAIMount, Token: alice, Model: "coor",
		Question: coorQuestion, Other: coorOther, FollowUp: coorFollowUp, BrokeToken: bob})

	assert.Equal(t, []string{"models", "create", "stream", "second turn", "errors"}, rep.Steps)
	assert.Equal(t, []string{"coor"}, rep.Models)
	assert.True(t, strings.HasPrefix(rep.Answer, coorTitle+"\n"), "the reporter's report: %.200q", rep.Answer)
	assert.Greater(t, rep.Usage.PromptTokens, 0)
	assert.Greater(t, rep.Usage.CompletionTokens, 0)
	assert.Equal(t, rep.Usage.PromptTokens+rep.Usage.CompletionTokens, rep.Usage.TotalTokens)

	assert.Equal(t, rep.Answer, strings.TrimRight(rep.Streamed, "\n"), "the same report, streamed (as the reporter's tokens, its last newline too)")
	assert.Greater(t, rep.StreamChunks, 20, "the reporter's tokens, one chunk each")
	require.NotNil(t, rep.StreamUsage, "include_usage: the usage chunk")
	for _, c := range []struct {
		thread string
		got    openaitest.Usage
	}{{rep.AnswerThread, rep.Usage}, {rep.StreamThread, *rep.StreamUsage}} {
		runs := e.runsOn(alice, c.thread)
		require.Len(t, runs, 1)
		var ru server.Run
		e.call("GET", "/v1/threads/"+c.thread+"/runs/"+runs[0], alice, nil, http.StatusOK, &ru)
		assert.Equal(t, openaitest.Usage{PromptTokens: ru.Usage.PromptTokens, CompletionTokens: ru.Usage.CompletionTokens,
			TotalTokens: ru.Usage.PromptTokens + ru.Usage.CompletionTokens}, c.got, "the usage is the run's")
	}

	assert.NotEqual(t, rep.AnswerThread, rep.StreamThread, "two conversations, two threads")
	assert.Len(t, e.runsOn(alice, rep.AnswerThread), 1)
	assert.Len(t, e.runsOn(alice, rep.StreamThread), 1)
	assert.True(t, strings.HasPrefix(rep.FirstAnswer, "# "+coorOther+"\n"), "%.200q", rep.FirstAnswer)
	assert.True(t, strings.HasPrefix(rep.SecondAnswer, "# And which one for a rate limiter\n"), "%.200q", rep.SecondAnswer)
	require.Len(t, rep.ConversationThreads, 2)
	assert.Equal(t, rep.ConversationThreads[0], rep.ConversationThreads[1], "the second message is a turn on the conversation's thread")
	assert.Len(t, e.runsOn(alice, rep.ConversationThreads[0]), 2)

	str := func(s string) *string { return &s }
	want := map[string]openaitest.Failure{
		"unknownModel":       {Class: "NotFoundError", Status: 404, Type: str("invalid_request_error"), Code: str("model_not_found"), Param: str("model")},
		"badKey":             {Class: "AuthenticationError", Status: 401, Type: str("invalid_request_error"), Code: str("invalid_api_key")},
		"twoChoices":         {Class: "BadRequestError", Status: 400, Type: str("invalid_request_error"), Code: str("invalid_field"), Param: str("n")},
		"lastNotUser":        {Class: "BadRequestError", Status: 400, Type: str("invalid_request_error"), Code: str("invalid_field"), Param: str("messages[0].role")},
		"streamUnknownModel": {Class: "NotFoundError", Status: 404, Type: str("invalid_request_error"), Code: str("model_not_found"), Param: str("model")},
		"budget":             {Class: "RateLimitError", Status: 429, Type: str("insufficient_quota"), Code: str("insufficient_quota")},
	}
	assert.Contains(t, rep.Errors["budget"].Message, "llm: owner budget exceeded", "bob's run, stopped by his budget")
	for name, w := range want {
		got := rep.Errors[name]
		assert.NotEmpty(t, got.Message, name)
		got.Message = ""
		assert.Equal(t, w, got, name)
	}
}

// headerKeeper keeps the thread header of each answer.
type headerKeeper struct {
	mu      sync.Mutex
	threads []string
}

func (h *headerKeeper) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		h.mu.Lock()
		h.threads = append(h.threads, resp.Header.Get(server.OpenAIThreadHeader))
		h.mu.Unlock()
	}
	return resp, err
}

func (h *headerKeeper) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.threads[len(h.threads)-1]
}

// TestLangchaingosOpenAIClientStreamsACoorRunsAnswer: langchaingo's
// OpenAI client, its base URL the endpoint's, gets a coor run's report at
// once and streamed, continues the conversation on its thread, and
// reports an unknown model as OpenAI's 404.
func TestLangchaingosOpenAIClientStreamsACoorRunsAnswer(t *testing.T) {
	e := coorEnv(t)
	keeper := &headerKeeper{}
	m, err := lcopenai.New(lcopenai.WithBaseURL(e.hs.URL+server.OpenAIMount), lcopenai.WithToken(alice), lcopenai.WithModel("coor"),
		lcopenai.WithHTTPClient(&http.Client{Transport: keeper}))
	require.NoError(t, err)
	ctx := t.Context()

	answer, err := llms.GenerateFromSinglePrompt(ctx, m, coorQuestion)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(answer, coorTitle+"\n"), "%.200q", answer)
	first := keeper.last()

	var chunks []string
	resp, err := m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, coorQuestion)},
		llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			if len(chunk) > 0 {
				chunks = append(chunks, string(chunk))
			}
			return nil
		}))
	require.NoError(t, err)
	streamed := resp.Choices[0].Content
	assert.Equal(t, answer, strings.TrimRight(streamed, "\n"))
	assert.Equal(t, streamed, strings.Join(chunks, ""))
	assert.Greater(t, len(chunks), 20, "the reporter's tokens")
	info := resp.Choices[0].GenerationInfo
	assert.Greater(t, info["PromptTokens"], 0, "the run's usage, streamed: %v", info)
	assert.Greater(t, info["CompletionTokens"], 0)
	thread := keeper.last()
	assert.NotEqual(t, first, thread)

	assert.Len(t, e.runsOn(alice, thread), 1)

	other, err := llms.GenerateFromSinglePrompt(ctx, m, coorOther)
	require.NoError(t, err)
	conversation := keeper.last()
	resp, err = m.GenerateContent(ctx, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, coorOther),
		llms.TextParts(llms.ChatMessageTypeAI, other),
		llms.TextParts(llms.ChatMessageTypeHuman, coorFollowUp),
	}, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(resp.Choices[0].Content, "# And which one for a rate limiter\n"), "%.200q", resp.Choices[0].Content)
	assert.Equal(t, conversation, keeper.last(), "the second message is a turn on the conversation's thread")
	assert.Len(t, e.runsOn(alice, conversation), 2)

	unknown, err := lcopenai.New(lcopenai.WithBaseURL(e.hs.URL+server.OpenAIMount), lcopenai.WithToken(alice), lcopenai.WithModel("gpt-4o"))
	require.NoError(t, err)
	_, err = llms.GenerateFromSinglePrompt(ctx, unknown, "hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "404")
	assert.Contains(t, err.Error(), `the model "gpt-4o" does not exist`)
}
