package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	llmopenaitest "github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
)

const chatPath = server.OpenAIMount + "/chat/completions"

// openaiError is OpenAI's error body, as clients read it.
type openaiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// completion is the part of a chat.completion the tests read.
type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Coorflow struct {
		ThreadID string `json:"thread_id"`
		RunID    string `json:"run_id"`
		Status   string `json:"status"`
	} `json:"coorflow"`
}

func msgs(turns ...string) []map[string]any {
	out := make([]map[string]any, len(turns))
	for i, t := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out[i] = map[string]any{"role": role, "content": t}
	}
	return out
}

// chat sends a chat completion that must succeed.
func (e *env) chat(token string, body map[string]any, header ...string) (completion, http.Header) {
	e.t.Helper()
	resp := e.request("POST", chatPath, token, body, header...)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, resp.StatusCode, "%s", data)
	var c completion
	require.NoError(e.t, json.Unmarshal(data, &c), "%s", data)
	return c, resp.Header
}

// chatFails sends a chat completion (or another request) that must fail
// with status, and returns OpenAI's error.
func (e *env) chatFails(method, path, token string, body any, status int, header ...string) (openaiError, http.Header) {
	e.t.Helper()
	resp := e.request(method, path, token, body, header...)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, status, resp.StatusCode, "%s", data)
	var got openaiError
	require.NoError(e.t, json.Unmarshal(data, &got), "%s", data)
	var raw map[string]map[string]any
	require.NoError(e.t, json.Unmarshal(data, &raw))
	assert.ElementsMatch(e.t, []string{"message", "type", "param", "code"}, keys(raw["error"]), "OpenAI's error shape: %s", data)
	return got, resp.Header
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// runsOn lists the ids of the owner's runs on thread, newest first.
func (e *env) runsOn(token, thread string) []string {
	e.t.Helper()
	var list server.RunList
	e.call("GET", "/v1/threads/"+thread+"/runs", token, nil, http.StatusOK, &list)
	var ids []string
	for _, ru := range list.Runs {
		ids = append(ids, ru.ID)
	}
	return ids
}

// chunks reads a streamed chat completion: its data payloads, [DONE]
// last.
func chunks(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	for _, ev := range readEvents(t, r, func(s sse) bool { return s.Data == "[DONE]" }) {
		assert.Empty(t, ev.Event, "OpenAI's chunks are unnamed events")
		out = append(out, ev.Data)
	}
	return out
}

// TestAChatCompletionRunsTheWorkflowAndTheConversationIsItsThread: the
// model is the workflow, the last user message its input and the answer
// its output channel's value; the answer names the thread, and the next
// request of the conversation (the history resent, as chat UIs do) is a
// second run on it; a conversation that went apart is another thread.
func TestAChatCompletionRunsTheWorkflowAndTheConversationIsItsThread(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools})

	first, h := e.chat(alice, map[string]any{"model": "echo", "messages": []map[string]any{
		{"role": "system", "content": "be loud"}, {"role": "user", "content": "hello"}}})
	require.Len(t, first.Choices, 1)
	assert.Equal(t, "chat.completion", first.Object)
	assert.Equal(t, "echo", first.Model)
	assert.Equal(t, "assistant", first.Choices[0].Message.Role)
	assert.Equal(t, "HELLO", first.Choices[0].Message.Content)
	assert.Equal(t, "stop", first.Choices[0].FinishReason)
	thread := h.Get(server.OpenAIThreadHeader)
	require.NotEmpty(t, thread)
	assert.Equal(t, thread, first.Coorflow.ThreadID)
	assert.Equal(t, "chatcmpl-"+h.Get(server.OpenAIRunHeader), first.ID)
	assert.Equal(t, []string{first.Coorflow.RunID}, e.runsOn(alice, thread))

	second, h2 := e.chat(alice, map[string]any{"model": "echo", "messages": []map[string]any{
		{"role": "system", "content": "be loud"}, {"role": "user", "content": "hello"},
		{"role": "assistant", "content": "HELLO\n"}, {"role": "user", "content": [](map[string]any){{"type": "text", "text": "again"}}}}})
	assert.Equal(t, "AGAIN", second.Choices[0].Message.Content)
	assert.Equal(t, thread, h2.Get(server.OpenAIThreadHeader), "the second turn of the conversation is on its thread")
	assert.Equal(t, []string{second.Coorflow.RunID, first.Coorflow.RunID}, e.runsOn(alice, thread))
	var values map[string]any
	require.NoError(t, json.Unmarshal(e.state(alice, thread).Values, &values))
	assert.Equal(t, 2.0, values["count"], "the thread's state carries both turns")

	other, _ := e.chat(alice, map[string]any{"model": "echo", "messages": []map[string]any{
		{"role": "system", "content": "be loud"}, {"role": "user", "content": "hello"},
		{"role": "assistant", "content": "something else"}, {"role": "user", "content": "again"}}})
	assert.NotEqual(t, thread, other.Coorflow.ThreadID, "a history the server did not answer starts a thread")

	named, h3 := e.chat(alice, map[string]any{"model": "echo", "messages": msgs("third")}, server.OpenAIThreadHeader, thread)
	assert.Equal(t, thread, h3.Get(server.OpenAIThreadHeader), "the header names the thread")
	assert.Equal(t, "THIRD", named.Choices[0].Message.Content)
	assert.Len(t, e.runsOn(alice, thread), 3)
}

// talkerGraph is workflow "talker": think (a model call whose text goes
// to the log) and then say (a model call whose text, with " [1]" added,
// is the answer), over the OpenAI wire protocol to srv.
func talkerGraph(t *testing.T, srv *llmopenaitest.Server) *graph.Runnable {
	t.Helper()
	cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: openai\n    model: gpt-4o-mini\n    base_url: " +
		srv.BaseURL() + "\n    max_retries: -1\n"))
	require.NoError(t, err)
	cfg.Getenv = func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-test"}[k] }
	models, err := llm.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, models.Close()) })
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	m = llm.Observe(m, models.Profile(llm.TierBasic).Info(llm.TierBasic))
	call := func(ctx context.Context, prompt string) (string, error) {
		resp, err := m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, prompt)})
		if err != nil {
			return "", err
		}
		return resp.Choices[0].Content, nil
	}
	g := graph.New("talker", textKey, logKey)
	g.AddNode("think", func(ctx context.Context, s graph.State) (graph.Command, error) {
		text, err := call(ctx, "think: "+textKey.Get(s))
		return graph.Update(graph.AppendTo(logKey, text)), err
	})
	g.AddNode("say", func(ctx context.Context, s graph.State) (graph.Command, error) {
		text, err := call(ctx, "say: "+textKey.Get(s))
		return graph.Update(textKey.Set(text + " [1]")), err
	})
	g.AddEdge(graph.Start, "think")
	g.AddEdge("think", "say")
	g.AddEdge("say", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// TestAStreamedChatCompletionSendsTheFinalNodesTokensThenUsageThenDone: a
// streamed completion is chat.completion.chunk events: the tokens of the
// node that ends the workflow (not those of the nodes before it) as they
// come, what the answer adds to them, the finish, the run's usage when
// asked, and [DONE]. Not streamed, the answer and usage are the same.
func TestAStreamedChatCompletionSendsTheFinalNodesTokensThenUsageThenDone(t *testing.T) {
	srv := llmopenaitest.NewServer(
		llmopenaitest.Response{Text: "private musings here", Usage: usage(100, 20, 10)},
		llmopenaitest.Response{Text: "the answer is forty two", Usage: usage(200, 0, 30)},
		llmopenaitest.Response{Text: "private musings here", Usage: usage(100, 20, 10)},
		llmopenaitest.Response{Text: "the answer is forty two", Usage: usage(200, 0, 30)})
	t.Cleanup(srv.Close)
	e := newEnv(t, server.Config{Workflows: workflows(talkerGraph(t, srv)),
		MCPTools: map[string]server.MCPTool{"talker": {Input: "text", Output: "text"}}})
	resp := e.request("POST", chatPath, alice, map[string]any{"model": "talker", "messages": msgs("question"),
		"stream": true, "stream_options": map[string]any{"include_usage": true}})
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	data := chunks(t, resp.Body)
	require.GreaterOrEqual(t, len(data), 4)
	assert.Equal(t, "[DONE]", data[len(data)-1])
	var pieces []string
	var finish []string
	var usageChunk map[string]any
	for i, d := range data[:len(data)-1] {
		var ch struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Choices []struct {
				Delta        map[string]any `json:"delta"`
				FinishReason *string        `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &ch), d)
		assert.Equal(t, "chat.completion.chunk", ch.Object)
		assert.Equal(t, "chatcmpl-"+resp.Header.Get(server.OpenAIRunHeader), ch.ID)
		if i == 0 {
			assert.Equal(t, "assistant", ch.Choices[0].Delta["role"])
		}
		if ch.Usage != nil {
			assert.Empty(t, ch.Choices, "the usage chunk has no choices")
			usageChunk = ch.Usage
			continue
		}
		if s, ok := ch.Choices[0].Delta["content"].(string); ok && s != "" {
			pieces = append(pieces, s)
		}
		if ch.Choices[0].FinishReason != nil {
			finish = append(finish, *ch.Choices[0].FinishReason)
		}
	}
	assert.Equal(t, "the answer is forty two [1]", strings.Join(pieces, ""))
	assert.Greater(t, len(pieces), 3, "the answer came as the model's tokens: %q", pieces)
	assert.Equal(t, " [1]", pieces[len(pieces)-1], "what the node added to its tokens follows them")
	assert.Equal(t, []string{"stop"}, finish)
	assert.Equal(t, map[string]any{"prompt_tokens": 300.0, "completion_tokens": 40.0, "total_tokens": 340.0,
		"prompt_tokens_details": map[string]any{"cached_tokens": 20.0}, "completion_tokens_details": map[string]any{"reasoning_tokens": 0.0}}, usageChunk)

	c, _ := e.chat(alice, map[string]any{"model": "talker", "messages": msgs("question")})
	assert.Equal(t, "the answer is forty two [1]", c.Choices[0].Message.Content)
	assert.Equal(t, 300, c.Usage.PromptTokens)
	assert.Equal(t, 40, c.Usage.CompletionTokens)
	assert.Equal(t, 340, c.Usage.TotalTokens)
}

// TestAChatCompletionErrorIsOpenAIs: what a client can get wrong is
// answered in OpenAI's error shape, with the status OpenAI's clients
// expect, and starts no run.
func TestAChatCompletionErrorIsOpenAIs(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, MaxBodyBytes: 4096})
	good := map[string]any{"model": "echo", "messages": msgs("hi")}
	cases := []struct {
		name, method, path, token string
		body                      any
		status                    int
		typ, code, param          string
	}{
		{"no token", "POST", chatPath, "", good, 401, "invalid_request_error", "invalid_api_key", ""},
		{"unknown token", "POST", chatPath, "nope", good, 401, "invalid_request_error", "invalid_api_key", ""},
		{"unknown model", "POST", chatPath, alice, map[string]any{"model": "gpt-4o", "messages": msgs("hi")}, 404, "invalid_request_error", "model_not_found", "model"},
		{"unknown model to get", "GET", server.OpenAIMount + "/models/gpt-4o", alice, nil, 404, "invalid_request_error", "model_not_found", "model"},
		{"bad JSON", "POST", chatPath, alice, `{"model": "echo", "messages": [`, 400, "invalid_request_error", "malformed_json", ""},
		{"trailing data", "POST", chatPath, alice, `{"model": "echo"} {}`, 400, "invalid_request_error", "malformed_json", ""},
		{"wrong type", "POST", chatPath, alice, map[string]any{"model": "echo", "messages": "hi"}, 400, "invalid_request_error", "invalid_field", "messages"},
		{"no model", "POST", chatPath, alice, map[string]any{"messages": msgs("hi")}, 400, "invalid_request_error", "invalid_field", "model"},
		{"no messages", "POST", chatPath, alice, map[string]any{"model": "echo", "messages": []any{}}, 400, "invalid_request_error", "invalid_field", "messages"},
		{"last is not the user's", "POST", chatPath, alice, map[string]any{"model": "echo", "messages": msgs("hi", "hello")}, 400, "invalid_request_error", "invalid_field", "messages[1].role"},
		{"image part", "POST", chatPath, alice, map[string]any{"model": "echo", "messages": []any{map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "http://x"}}}}}}, 400, "invalid_request_error", "invalid_field", "messages[0].content[0].type"},
		{"unknown role", "POST", chatPath, alice, map[string]any{"model": "echo", "messages": []any{map[string]any{"role": "robot", "content": "x"}, map[string]any{"role": "user", "content": "y"}}}, 400, "invalid_request_error", "invalid_field", "messages[0].role"},
		{"n", "POST", chatPath, alice, map[string]any{"model": "echo", "messages": msgs("hi"), "n": 2}, 400, "invalid_request_error", "invalid_field", "n"},
		{"oversized", "POST", chatPath, alice, map[string]any{"model": "echo", "messages": msgs(strings.Repeat("x", 5000))}, 413, "invalid_request_error", "body_too_large", ""},
		{"bad thread header", "POST", chatPath, alice, good, 400, "invalid_request_error", "invalid_field", server.OpenAIThreadHeader},
		{"no such route", "GET", server.OpenAIMount + "/embeddings", alice, nil, 404, "invalid_request_error", "not_found", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var header []string
			if c.name == "bad thread header" {
				header = []string{server.OpenAIThreadHeader, "../x"}
			}
			got, h := e.chatFails(c.method, c.path, c.token, c.body, c.status, header...)
			assert.Equal(t, c.typ, got.Error.Type)
			require.NotNil(t, got.Error.Code)
			assert.Equal(t, c.code, *got.Error.Code)
			assert.NotEmpty(t, got.Error.Message)
			if c.param == "" {
				assert.Nil(t, got.Error.Param)
			} else if assert.NotNil(t, got.Error.Param) {
				assert.Equal(t, c.param, *got.Error.Param)
			}
			if c.status == 401 {
				assert.NotEmpty(t, h.Get("WWW-Authenticate"))
			}
		})
	}
	var threads []map[string]any
	e.call("POST", "/threads/search", alice, map[string]any{}, http.StatusOK, &threads)
	assert.Empty(t, threads, "no request started a thread")
}

// TestTheModelsAreTheWorkflows: GET /models lists the workflows as
// models; GET /models/{id} shows one.
func TestTheModelsAreTheWorkflows(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t), askGraph(t, false)), MCPTools: mcpTools})
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
		} `json:"data"`
	}
	e.call("GET", server.OpenAIMount+"/models", alice, nil, http.StatusOK, &list)
	assert.Equal(t, "list", list.Object)
	require.Len(t, list.Data, 2)
	assert.Equal(t, "ask", list.Data[0].ID)
	assert.Equal(t, "echo", list.Data[1].ID)
	assert.Equal(t, "model", list.Data[1].Object)
	var one map[string]any
	e.call("GET", server.OpenAIMount+"/models/echo", alice, nil, http.StatusOK, &one)
	assert.Equal(t, "echo", one["id"])
	assert.Equal(t, "coorflow", one["owned_by"])
}

// TestAQuestionIsTheAnswerAndTheNextMessageAnswersIt: a run that stops on
// a question answers with the question; the conversation's next user
// message is the answer (JSON when it is JSON), a second run on the
// thread.
func TestAQuestionIsTheAnswerAndTheNextMessageAnswersIt(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false)), MCPTools: mcpTools})
	q, h := e.chat(alice, map[string]any{"model": "ask", "messages": msgs("draft it")})
	assert.Equal(t, "approve draft?", q.Choices[0].Message.Content)
	assert.Equal(t, server.StatusInterrupted, q.Coorflow.Status)
	thread := h.Get(server.OpenAIThreadHeader)

	resp := e.request("POST", chatPath, alice, map[string]any{"model": "ask", "messages": msgs("draft it", "approve draft?", `{"ok": true}`), "stream": true})
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var content strings.Builder
	for _, d := range chunks(t, resp.Body) {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if d != "[DONE]" {
			require.NoError(t, json.Unmarshal([]byte(d), &ch))
			content.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	assert.Equal(t, `["draft ok=true","after"]`, content.String())
	assert.Equal(t, thread, resp.Header.Get(server.OpenAIThreadHeader))
	assert.Len(t, e.runsOn(alice, thread), 2)
}

// TestOneMessageAnswersEveryQuestionARunStopsOn: a run that stops on two
// questions answers with both; the next message answers each of them.
func TestOneMessageAnswersEveryQuestionARunStopsOn(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, true)), MCPTools: mcpTools})
	q, _ := e.chat(alice, map[string]any{"model": "ask", "messages": msgs("draft it")})
	assert.Equal(t, server.StatusInterrupted, q.Coorflow.Status)
	assert.Contains(t, q.Choices[0].Message.Content, "approve draft?")
	assert.Contains(t, q.Choices[0].Message.Content, "approve second?")
	done, _ := e.chat(alice, map[string]any{"model": "ask", "messages": msgs("draft it", q.Choices[0].Message.Content, `{"ok": true}`)})
	assert.Equal(t, server.StatusDone, done.Coorflow.Status)
	var log []string
	require.NoError(t, json.Unmarshal([]byte(done.Choices[0].Message.Content), &log))
	assert.ElementsMatch(t, []string{"draft ok=true", "second ok=true", "after"}, log)
	assert.Equal(t, q.Coorflow.ThreadID, done.Coorflow.ThreadID)
}

// TestAClientThatLeavesAStreamDoesNotStopTheRun: the run of a streamed
// completion whose client went away goes on to its end on the thread.
func TestAClientThatLeavesAStreamDoesNotStopTheRun(t *testing.T) {
	h := newHoldFlow(t, 1)
	e := newEnv(t, server.Config{Workflows: workflows(h.r), MCPTools: map[string]server.MCPTool{"hold": {Input: "text", Output: "text"}}})
	resp := e.request("POST", chatPath, alice, map[string]any{"model": "hold", "messages": msgs("go"), "stream": true})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	thread, run := resp.Header.Get(server.OpenAIThreadHeader), resp.Header.Get(server.OpenAIRunHeader)
	h.waitEntered(t, 1)
	require.NoError(t, resp.Body.Close())
	h.open()
	evs := e.stream("GET", "/v1/threads/"+thread+"/runs/"+run+"/stream", alice, nil)
	require.NotEmpty(t, evs)
	assert.Equal(t, server.StatusDone, evs[len(evs)-1].run(t).Status)
}

// TestAnOwnersConversationsAreItsOwn: bob resending alice's conversation,
// or naming her thread, runs on threads of his own.
func TestAnOwnersConversationsAreItsOwn(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools})
	chatOwnersApart(t, e)
}

// chatOwnersApart: alice chats; bob resending her conversation, or
// naming her thread, runs on threads of his own.
func chatOwnersApart(t *testing.T, e *env) {
	a, h := e.chat(alice, map[string]any{"model": "echo", "messages": msgs("alice's secret")})
	thread := h.Get(server.OpenAIThreadHeader)
	b, hb := e.chat(bob, map[string]any{"model": "echo", "messages": msgs("alice's secret", a.Choices[0].Message.Content, "more")})
	assert.NotEqual(t, thread, hb.Get(server.OpenAIThreadHeader), "alice's conversation is not bob's")
	assert.Equal(t, "MORE", b.Choices[0].Message.Content)
	_, hb = e.chat(bob, map[string]any{"model": "echo", "messages": msgs("mine")}, server.OpenAIThreadHeader, thread)
	assert.Equal(t, thread, hb.Get(server.OpenAIThreadHeader), "bob's own thread of that id")
	assert.Len(t, e.runsOn(alice, thread), 1, "alice's thread has her run only")
	assert.Len(t, e.runsOn(bob, thread), 1)
	assert.NotContains(t, string(e.state(bob, thread).Values), "SECRET")
}

// TestTheRunQuotaHoldsForChatCompletionsInParallel: of 120 chat
// completions sent at once, on one server or spread over replicas,
// exactly the owner's quota of runs in progress start; the others get
// OpenAI's 429 rate limit with Retry-After, and no more run at once.
func TestTheRunQuotaHoldsForChatCompletionsInParallel(t *testing.T) {
	const quota, n = 5, 120
	for _, b := range admissionBackends {
		t.Run(b.name, func(t *testing.T) {
			h := newHoldFlow(t, n)
			envs := b.start(t, server.Config{Workflows: workflows(h.r), MaxActiveRuns: quota,
				MCPTools: map[string]server.MCPTool{"hold": {Input: "text", Output: "text"}}})
			type result struct {
				status     int
				code, wait string
				answer     string
			}
			results := make(chan result, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				e := envs[i%len(envs)]
				wg.Go(func() {
					<-start
					resp := e.request("POST", chatPath, alice, map[string]any{"model": "hold", "messages": msgs(fmt.Sprintf("go %d", i))})
					defer resp.Body.Close()
					data, _ := io.ReadAll(resp.Body)
					res := result{status: resp.StatusCode, wait: resp.Header.Get("Retry-After")}
					var body openaiError
					var c completion
					if json.Unmarshal(data, &body) == nil && body.Error.Code != nil {
						res.code = *body.Error.Code
					} else if json.Unmarshal(data, &c) == nil && len(c.Choices) == 1 {
						res.answer = c.Choices[0].Message.Content
					}
					results <- res
				})
			}
			close(start)
			for range n - quota {
				res := <-results
				require.Equal(t, http.StatusTooManyRequests, res.status, "only refusals end before the runs are let go")
				assert.Equal(t, "rate_limit_exceeded", res.code)
				assert.Equal(t, "5", res.wait)
			}
			h.waitEntered(t, quota)
			assert.Equal(t, int64(quota), h.cur.Load(), "the accepted runs run")
			h.open()
			wg.Wait()
			close(results)
			for res := range results {
				assert.Equal(t, http.StatusOK, res.status)
				assert.Equal(t, "held", res.answer)
			}
			assert.LessOrEqual(t, h.max.Load(), int64(quota), "runs in progress at once")
			assert.Empty(t, h.entered, "no run beyond the quota started")
			var threads int
			envs[0].call("POST", "/threads/count", alice, map[string]any{}, http.StatusOK, &threads)
			assert.Equal(t, quota, threads, "a refused request leaves no thread")
		})
	}
}

// TestAConversationGoesOnAcrossReplicas: among replicas sharing a Store,
// the second message of a conversation, sent to another replica, is a
// second run on its thread, and streams the final node's tokens from
// whichever replica runs it.
func TestAConversationGoesOnAcrossReplicas(t *testing.T) {
	srv := llmopenaitest.NewServer(
		llmopenaitest.Response{Text: "thinking", Usage: usage(10, 0, 1)},
		llmopenaitest.Response{Text: "first answer here", Usage: usage(20, 0, 3)},
		llmopenaitest.Response{Text: "thinking again", Usage: usage(10, 0, 2)},
		llmopenaitest.Response{Text: "second answer comes now", Usage: usage(30, 0, 4)})
	t.Cleanup(srv.Close)
	cfg := server.Config{Workflows: workflows(talkerGraph(t, srv)), Store: storemem.New(store.Config{}),
		MCPTools: map[string]server.MCPTool{"talker": {Input: "text", Output: "text"}}}
	rs := newReplicaSet(t, 2, time.Minute, cfg)
	a, b := rs.envs[0], rs.envs[1]

	first, h := a.chat(alice, map[string]any{"model": "talker", "messages": msgs("one")})
	assert.Equal(t, "first answer here [1]", first.Choices[0].Message.Content)
	assert.Equal(t, 34, first.Usage.TotalTokens, "both model calls of the run")
	thread := h.Get(server.OpenAIThreadHeader)

	resp := b.request("POST", chatPath, alice, map[string]any{"model": "talker", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": msgs("one", first.Choices[0].Message.Content, "two")})
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, thread, resp.Header.Get(server.OpenAIThreadHeader), "the conversation's thread, found by the other replica")
	var pieces []string
	var total float64
	for _, d := range chunks(t, resp.Body) {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if d == "[DONE]" {
			continue
		}
		require.NoError(t, json.Unmarshal([]byte(d), &ch), d)
		if ch.Usage != nil {
			total, _ = ch.Usage["total_tokens"].(float64)
		} else if c := ch.Choices[0].Delta.Content; c != "" {
			pieces = append(pieces, c)
		}
	}
	assert.Equal(t, "second answer comes now [1]", strings.Join(pieces, ""))
	assert.Greater(t, len(pieces), 3, "the say node's tokens")
	assert.Equal(t, 46.0, total, "the second run's usage")
	assert.Len(t, a.runsOn(alice, thread), 2)
}

// TestBudgetsStopChatCompletions: a run the owner's budget stops answers
// OpenAI's 429 insufficient_quota (not to be retried), streamed or not,
// and the owner's next request is refused the same way.
func TestBudgetsStopChatCompletions(t *testing.T) {
	srv := llmopenaitest.NewServer(llmopenaitest.Response{Text: "draft", Usage: usage(1000, 0, 200)})
	t.Cleanup(srv.Close)
	e := newEnv(t, server.Config{Workflows: workflows(costlyGraph(t, srv)), Recorder: recorder(t),
		OwnerBudgets: map[string]llm.Budget{"alice": {Tokens: 1000}},
		MCPTools:     map[string]server.MCPTool{"costly": {Input: "text", Output: "log"}}})

	resp := e.request("POST", chatPath, alice, map[string]any{"model": "costly", "messages": msgs("spend"), "stream": true})
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data := chunks(t, resp.Body)
	var last openaiError
	require.NoError(t, json.Unmarshal([]byte(data[len(data)-1]), &last), "the stream ends with the error")
	require.NotNil(t, last.Error.Code)
	assert.Equal(t, "insufficient_quota", *last.Error.Code)
	assert.Equal(t, "insufficient_quota", last.Error.Type)
	assert.Contains(t, last.Error.Message, "owner budget exceeded")

	got, h := e.chatFails("POST", chatPath, alice, map[string]any{"model": "costly", "messages": msgs("again")}, http.StatusTooManyRequests)
	assert.Equal(t, "insufficient_quota", *got.Error.Code)
	assert.Contains(t, got.Error.Message, `owner "alice" has spent its budget`)
	assert.Equal(t, "false", h.Get("X-Should-Retry"))
	assert.Len(t, srv.Requests(), 1, "the refused request made no call")
}

// openaiOwnerChecks are TestEveryRouteKeepsOwnersApart's cases of the
// OpenAI endpoint. Its chat case starts runs of bob's: the endpoint's
// routes are registered last, so that the cases of the routes before
// (those that count bob's recordings) have run.
func openaiOwnerChecks(e *env) map[string]func(t *testing.T) {
	same := func(path string) func(t *testing.T) {
		return func(t *testing.T) {
			var a, b any
			e.call("GET", path, alice, nil, http.StatusOK, &a)
			e.call("GET", path, bob, nil, http.StatusOK, &b)
			assert.Equal(t, a, b, "the models are the served workflows, everyone's")
		}
	}
	return map[string]func(t *testing.T){
		"GET " + server.OpenAIMount + "/models":         same(server.OpenAIMount + "/models"),
		"GET " + server.OpenAIMount + "/models/{model}": same(server.OpenAIMount + "/models/echo"),
		server.OpenAIMount + "/": func(t *testing.T) {
			for _, token := range []string{alice, bob} {
				got, _ := e.chatFails("GET", server.OpenAIMount+"/files", token, nil, http.StatusNotFound)
				assert.Equal(t, "not_found", *got.Error.Code)
			}
		},
		"POST " + chatPath: func(t *testing.T) { chatOwnersApart(t, e) },
	}
}
