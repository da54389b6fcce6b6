package openaitest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// quickRetry retries like New's models do, with waits short enough for a
// test.
var quickRetry = llm.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

// coordinatorCall makes the kind of call a coordinator makes: a system
// prompt, the user's request and a handoff tool on offer. With stream, the
// reply is streamed and the chunks received are returned.
func coordinatorCall(t *testing.T, m llms.Model, stream bool) (*llms.ContentResponse, []string, error) {
	t.Helper()
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are the coordinator. Answer, or hand off to the planner."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Compare SQLite and PostgreSQL for a small web app."),
	}
	opts := []llms.CallOption{llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name: "handoff_to_planner", Description: "Hand the request to the planner",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}})}
	var chunks []string
	if stream {
		opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
			if len(b) > 0 {
				chunks = append(chunks, string(b))
			}
			return nil
		}))
	}
	resp, err := m.GenerateContent(t.Context(), msgs, opts...)
	return resp, chunks, err
}

// TestMisbehavingReplies drives langchaingo's OpenAI client, as New builds
// it, against replies that are not answers, under a retry policy like
// New's. Each is retried; a good reply after it is taken, and when none
// comes the failure says what happened and names the model.
func TestMisbehavingReplies(t *testing.T) {
	good := openaitest.Text("SQLite for one server, PostgreSQL for many writers.")
	tests := []struct {
		name   string
		bad    openaitest.Response
		stream bool
		class  error  // besides ErrTransient
		msg    string // the failure once the retries are used up
	}{
		{"empty completion", openaitest.Empty(), false, llm.ErrEmptyResponse,
			`openai model "gpt-4o-mini" returned nothing (no text and no tool call)`},
		{"empty stream", openaitest.Empty(), true, llm.ErrEmptyResponse,
			`openai model "gpt-4o-mini" returned nothing (no text and no tool call)`},
		{"malformed chunks dropped by the client", openaitest.MalformedStream(), true, llm.ErrEmptyResponse,
			`openai model "gpt-4o-mini" returned nothing (no text and no tool call)`},
		{"no choices", openaitest.NoChoices(), false, llm.ErrEmptyResponse,
			`openai model "gpt-4o-mini" returned nothing (no choices: empty response)`},
		{"no choices streamed", openaitest.NoChoices(), true, llm.ErrEmptyResponse,
			`openai model "gpt-4o-mini" returned nothing (no text and no tool call)`},
		{"complete but invalid JSON", openaitest.InvalidJSON(), false, llm.ErrMalformedResponse,
			"llm: malformed response from openai: invalid character '}' looking for beginning of object key string"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" then an answer", func(t *testing.T) {
			srv := newServer(t, tt.bad, good)
			m := llm.WithRetry(basicModel(t, srv), quickRetry)
			resp, chunks, err := coordinatorCall(t, m, tt.stream)
			require.NoError(t, err)
			assert.Equal(t, good.Text, resp.Choices[0].Content)
			assert.Len(t, srv.Requests(), 2)
			if tt.stream {
				assert.Equal(t, good.Text, join(chunks), "only the good reply was streamed")
			}
		})
		t.Run(tt.name+" every time", func(t *testing.T) {
			srv := newServer(t, tt.bad, tt.bad, tt.bad)
			m := llm.WithRetry(basicModel(t, srv), quickRetry)
			_, _, err := coordinatorCall(t, m, tt.stream)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.class)
			assert.ErrorIs(t, err, llm.ErrTransient)
			assert.ErrorContains(t, err, "llm: giving up after 3 attempts: ")
			assert.ErrorContains(t, err, tt.msg)
			assert.Len(t, srv.Requests(), 3, "retried twice")
		})
	}
}

// TestEmptyAnswerRetriedByNew checks New's own retry wrapper: the empty
// answer reaches OnRetry, which logs it, and the second answer is taken.
func TestEmptyAnswerRetriedByNew(t *testing.T) {
	srv := newServer(t, openaitest.Empty(), openaitest.Text("Here is the comparison."))
	var log retries
	m, err := newModels(t, srv, "    max_retries: 1\n", &log).Model(llm.TierBasic)
	require.NoError(t, err)
	resp, _, err := coordinatorCall(t, m, false)
	require.NoError(t, err)
	assert.Equal(t, "Here is the comparison.", resp.Choices[0].Content)
	require.Len(t, log.errs, 1)
	var empty *llm.EmptyResponseError
	require.ErrorAs(t, log.errs[0], &empty)
	assert.Equal(t, llm.EmptyResponseError{Provider: llm.ProviderOpenAI, Model: "gpt-4o-mini"}, *empty)
}

// TestToolCallsAreAnAnswer: a ReAct turn that calls a tool and writes no
// text is not empty.
func TestToolCallsAreAnAnswer(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := newServer(t, openaitest.ToolCalls(openaitest.ToolCall{Name: "handoff_to_planner"}))
		m := llm.WithRetry(basicModel(t, srv), quickRetry)
		resp, _, err := coordinatorCall(t, m, stream)
		require.NoError(t, err, "stream=%t", stream)
		require.Len(t, resp.Choices[0].ToolCalls, 1)
		assert.Equal(t, "handoff_to_planner", resp.Choices[0].ToolCalls[0].FunctionCall.Name)
		assert.Len(t, srv.Requests(), 1)
	}
}

// TestThinkingOnlyIsEmpty: a reasoning model whose whole answer is a
// <think> block answered nothing.
func TestThinkingOnlyIsEmpty(t *testing.T) {
	srv := newServer(t, openaitest.Text("<think>The user wants a comparison.</think>\n"), openaitest.Text("Done."))
	m := llm.WithRetry(basicModel(t, srv), quickRetry)
	out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "Compare them.")
	require.NoError(t, err)
	assert.Equal(t, "Done.", out)
	assert.Len(t, srv.Requests(), 2)
}

// TestScriptMismatch: a reply scripted for the other mode fails loudly.
func TestScriptMismatch(t *testing.T) {
	srv := newServer(t, openaitest.MalformedStream())
	_, err := llms.GenerateFromSinglePrompt(t.Context(), client(t, srv), "hi")
	assert.ErrorContains(t, err, "openaitest: response 1 is scripted for a request with stream=true")
}

// basicModel returns the basic tier's model that New builds for srv,
// without retries of its own.
func basicModel(t *testing.T, srv *openaitest.Server) llms.Model {
	t.Helper()
	m, err := newModels(t, srv, "    max_retries: -1\n", nil).Model(llm.TierBasic)
	require.NoError(t, err)
	return m
}

func join(chunks []string) string {
	var s string
	for _, c := range chunks {
		s += c
	}
	return s
}
