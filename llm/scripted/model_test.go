package scripted_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

func human(s string) []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, s)}
}

func tools(names ...string) llms.CallOption {
	var ts []llms.Tool
	for _, n := range names {
		ts = append(ts, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: n,
			Parameters: map[string]any{"type": "object"}}})
	}
	return llms.WithTools(ts)
}

func TestAgentTurns(t *testing.T) {
	m := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"researcher": {{Text: "r1"}, {Text: "r2"}},
		"coder":      {{Text: "c1"}},
	}})
	researcher := llm.WithAgent(t.Context(), "researcher")
	coder := llm.WithAgent(t.Context(), "coder")

	steps := []struct {
		ctx  context.Context
		want string
	}{
		{researcher, "r1"},
		{coder, "c1"},
		{researcher, "r2"},
	}
	for _, s := range steps {
		out, err := m.Call(s.ctx, "go")
		require.NoError(t, err)
		assert.Equal(t, s.want, out)
	}

	_, err := m.Call(researcher, "again")
	require.ErrorIs(t, err, scripted.ErrExhausted)
	assert.EqualError(t, err, `scripted: agent "researcher" turn 3: script exhausted: 2 replies scripted, all used`)
	var te *scripted.TurnError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "researcher", te.Agent)
	assert.Equal(t, 3, te.Turn)
	assert.ErrorIs(t, llm.Classify(err), llm.ErrPermanent, "a script error is never retried")

	calls := m.CallsFor("researcher")
	require.Len(t, calls, 3)
	for i, c := range calls {
		assert.Equal(t, i+1, c.Turn)
	}
	assert.Equal(t, []string{"coder", "researcher"}, m.Agents())
	assert.Empty(t, m.Remaining())
}

func TestUnscriptedAgent(t *testing.T) {
	m := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"a": {{Text: "x"}}}})
	_, err := m.Call(llm.WithAgent(t.Context(), "stranger"), "hi")
	assert.ErrorIs(t, err, scripted.ErrNoReply)
	assert.ErrorContains(t, err, `agent "stranger" turn 1`)
	assert.ErrorContains(t, err, "scripted agents: [a]")
}

func TestDefaultOnlyForUnscriptedAgents(t *testing.T) {
	m := scripted.New(scripted.Script{
		Agents:  map[string][]scripted.Reply{"a": {{Text: "x"}}},
		Default: &scripted.Reply{Text: "default"},
	})
	out, err := m.Call(llm.WithAgent(t.Context(), "b"), "hi")
	require.NoError(t, err)
	assert.Equal(t, "default", out)
	out, err = m.Call(t.Context(), "unlabelled")
	require.NoError(t, err)
	assert.Equal(t, "default", out)

	a := llm.WithAgent(t.Context(), "a")
	_, err = m.Call(a, "hi")
	require.NoError(t, err)
	_, err = m.Call(a, "hi")
	assert.ErrorIs(t, err, scripted.ErrExhausted, "an exhausted agent does not fall back to the default")
}

func TestToolCalls(t *testing.T) {
	m := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"researcher": {{
		Text: "Let me look.",
		ToolCalls: []scripted.ToolCall{
			{Name: "web_search", Arguments: `{"query":"go"}`},
			{ID: "mine", Name: "fetch"},
		},
	}}}})
	resp, err := m.GenerateContent(llm.WithAgent(t.Context(), "research team/1"), nil, tools("web_search", "fetch"))
	require.ErrorIs(t, err, scripted.ErrNoReply, "the label must match exactly")
	assert.Nil(t, resp)

	resp, err = m.GenerateContent(llm.WithAgent(t.Context(), "researcher"), human("find"),
		tools("web_search", "fetch"))
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	c := resp.Choices[0]
	assert.Equal(t, "Let me look.", c.Content)
	assert.Equal(t, "tool_calls", c.StopReason)
	assert.Equal(t, []llms.ToolCall{
		{ID: "call_researcher_1_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "web_search",
			Arguments: `{"query":"go"}`}},
		{ID: "mine", Type: "function", FunctionCall: &llms.FunctionCall{Name: "fetch", Arguments: "{}"}},
	}, c.ToolCalls)
	assert.Equal(t, c.ToolCalls[0].FunctionCall, c.FuncCall, "legacy field as the OpenAI client sets it")
}

func TestToolNotOffered(t *testing.T) {
	m := scripted.New(scripted.Script{Default: &scripted.Reply{
		ToolCalls: []scripted.ToolCall{{Name: "python"}}}})
	_, err := m.GenerateContent(llm.WithAgent(t.Context(), "coder"), human("x"), tools("web_search"))
	assert.ErrorIs(t, err, scripted.ErrToolNotOffered)
	assert.ErrorContains(t, err, `agent "coder" turn 1: reply calls tool "python", but the call offered [web_search]`)
}

func TestStreaming(t *testing.T) {
	text := "Go generics arrived in 1.18,\nwith type parameters."
	m := scripted.New(scripted.Script{Default: &scripted.Reply{Text: text, Reasoning: "Think first."}})
	var chunks, reasoning, both []string
	resp, err := m.GenerateContent(t.Context(), human("x"),
		llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
			chunks = append(chunks, string(b))
			return nil
		}),
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, b []byte) error {
			if len(r) > 0 {
				reasoning = append(reasoning, string(r))
			}
			if len(b) > 0 {
				both = append(both, string(b))
			}
			return nil
		}))
	require.NoError(t, err)
	assert.Equal(t, []string{"Go ", "generics ", "arrived ", "in ", "1.18,\n", "with ", "type ", "parameters."}, chunks)
	assert.Equal(t, text, strings.Join(chunks, ""))
	assert.Equal(t, chunks, both)
	assert.Equal(t, []string{"Think ", "first."}, reasoning)
	assert.Equal(t, text, resp.Choices[0].Content)
	assert.Equal(t, "Think first.", resp.Choices[0].ReasoningContent)
	assert.Equal(t, "stop", resp.Choices[0].StopReason)
}

func TestStreamingCallbackErrorStopsTheCall(t *testing.T) {
	m := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "a b c"}})
	stop := errors.New("client went away")
	n := 0
	_, err := m.GenerateContent(t.Context(), human("x"), llms.WithStreamingFunc(func(context.Context, []byte) error {
		n++
		return stop
	}))
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, n)
}

func TestChunks(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"  lead", []string{"  ", "lead"}},
		{"a  b ", []string{"a  ", "b "}},
		{"你好 世界", []string{"你好 ", "世界"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, scripted.Chunks(tt.in), "%q", tt.in)
	}
}

func TestUsage(t *testing.T) {
	m := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"a": {{Text: "abcdefgh", Reasoning: "abcd"}, {Err: errors.New("boom")}},
		"b": {{ToolCalls: []scripted.ToolCall{{Name: "t", Arguments: `{"k":1}`}}}},
	}})
	msgs := human("hello there")
	resp, err := m.GenerateContent(llm.WithAgent(t.Context(), "a"), msgs)
	require.NoError(t, err)
	prompt := llm.EstimateMessages(msgs)
	info := resp.Choices[0].GenerationInfo
	assert.Equal(t, prompt, info["PromptTokens"])
	assert.Equal(t, 3, info["CompletionTokens"]) // 2 for the text, 1 for the reasoning
	assert.Equal(t, prompt+3, info["TotalTokens"])
	assert.Equal(t, 1, info["ReasoningTokens"])

	_, err = m.GenerateContent(llm.WithAgent(t.Context(), "a"), msgs)
	require.Error(t, err)
	_, err = m.GenerateContent(llm.WithAgent(t.Context(), "b"), msgs, tools("t"))
	require.NoError(t, err)

	assert.Equal(t, scripted.Usage{Calls: 2, PromptTokens: prompt, CompletionTokens: 3, TotalTokens: prompt + 3},
		m.UsageFor("a"), "the failed call counts as a call, not as tokens")
	toolTokens := llm.EstimateTokens("t") + llm.EstimateTokens(`{"k":1}`)
	assert.Equal(t, scripted.Usage{Calls: 3, PromptTokens: 2 * prompt, CompletionTokens: 3 + toolTokens,
		TotalTokens: 2*prompt + 3 + toolTokens}, m.Usage())
}

func TestRules(t *testing.T) {
	m := scripted.New(scripted.Script{
		Rules: []scripted.Rule{
			{PromptContains: "Summarize", Agent: "planner", Times: 1, Reply: scripted.Reply{Text: "summary"}},
			{Match: func(c scripted.Call) bool { return len(c.ToolNames()) == 0 && c.Agent == "coder" },
				Reply: scripted.Reply{Text: "no tools"}},
		},
		Agents: map[string][]scripted.Reply{"planner": {{Text: "plan 1"}, {Text: "plan 2"}},
			"coder": {{Text: "code"}}},
	})
	planner := llm.WithAgent(t.Context(), "planner")
	coder := llm.WithAgent(t.Context(), "coder")
	steps := []struct {
		ctx    context.Context
		prompt string
		opts   []llms.CallOption
		want   string
	}{
		{planner, "Make a plan", nil, "plan 1"},
		{planner, "Summarize the steps", nil, "summary"},
		{planner, "Summarize again", nil, "plan 2"}, // the rule was used up
		{coder, "Summarize", nil, "no tools"},       // first rule is for the planner only
		{coder, "write code", []llms.CallOption{tools("python")}, "code"},
	}
	for i, s := range steps {
		out, err := m.Call(s.ctx, s.prompt, s.opts...)
		require.NoError(t, err, "step %d", i)
		assert.Equal(t, s.want, out, "step %d", i)
	}
	turns := []int{}
	for _, c := range m.CallsFor("planner") {
		turns = append(turns, c.Turn)
	}
	assert.Equal(t, []int{1, 2, 3}, turns, "turns count every call of the agent, rules included")
}

func TestReplyError(t *testing.T) {
	m := scripted.New(scripted.Script{Default: &scripted.Reply{Err: llm.ErrRateLimited}})
	_, err := m.Call(t.Context(), "x")
	assert.ErrorIs(t, err, llm.ErrRateLimited)
	require.Len(t, m.Calls(), 1)
	assert.ErrorIs(t, m.Calls()[0].Err, llm.ErrRateLimited)
	assert.Nil(t, m.Calls()[0].Response)
}

func TestRecordsCalls(t *testing.T) {
	m := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "ok"}})
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are terse."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Hi"),
	}
	_, err := m.GenerateContent(llm.WithAgent(t.Context(), "a"), msgs, tools("search", "fetch"),
		llms.WithTemperature(0.2))
	require.NoError(t, err)
	calls := m.Calls()
	require.Len(t, calls, 1)
	c := calls[0]
	assert.Equal(t, "a", c.Agent)
	assert.Equal(t, msgs, c.Messages)
	assert.Equal(t, []string{"search", "fetch"}, c.ToolNames())
	assert.InDelta(t, 0.2, c.Options.Temperature, 1e-9)
	assert.Equal(t, "You are terse.\nHi\n", c.Prompt())
	assert.Equal(t, "ok", c.Response.Choices[0].Content)
	assert.Equal(t, llm.EstimateMessages(msgs), c.PromptTokens)
	assert.Equal(t, 1, c.CompletionTokens)
}

func TestLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := scripted.New(scripted.Script{Latency: 2 * time.Second, Agents: map[string][]scripted.Reply{
			"": {{Text: "slow"}, {Text: "slower", Latency: 5 * time.Second}},
		}})
		start := time.Now()
		_, err := m.Call(t.Context(), "x")
		require.NoError(t, err)
		assert.Equal(t, 2*time.Second, time.Since(start))
		_, err = m.Call(t.Context(), "x")
		require.NoError(t, err)
		assert.Equal(t, 7*time.Second, time.Since(start))
	})
}

func TestLatencyHonoursCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "late", Latency: time.Hour}})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := m.Call(ctx, "x")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start))
	})
}

func TestConcurrentAgents(t *testing.T) {
	const n = 8
	barrier := scripted.NewBarrier(n)
	agents := map[string][]scripted.Reply{}
	names := make([]string, n)
	for i := range names {
		names[i] = "agent-" + string(rune('a'+i))
		agents[names[i]] = []scripted.Reply{{Text: "joined " + names[i], Wait: barrier.Wait}, {Text: "done"}}
	}
	m := scripted.New(scripted.Script{Agents: agents})

	var wg sync.WaitGroup
	outs := make([][]string, n)
	errs := make([]error, n)
	for i, name := range names {
		wg.Go(func() {
			ctx := llm.WithAgent(t.Context(), name)
			for range 2 {
				out, err := m.Call(ctx, "work")
				if err != nil {
					errs[i] = err
					return
				}
				outs[i] = append(outs[i], out)
			}
		})
	}
	wg.Wait()
	for i, name := range names {
		require.NoError(t, errs[i])
		assert.Equal(t, []string{"joined " + name, "done"}, outs[i])
	}
	assert.Equal(t, n, m.MaxInFlight(), "the barrier only opens with all calls in flight")
	assert.Len(t, m.Calls(), 2*n)
	assert.Empty(t, m.Remaining())
}

func TestUntil(t *testing.T) {
	release := make(chan struct{})
	m := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "released", Wait: scripted.Until(release)}})
	done := make(chan string)
	go func() {
		out, _ := m.Call(t.Context(), "x")
		done <- out
	}()
	close(release)
	assert.Equal(t, "released", <-done)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := scripted.New(scripted.Script{Default: &scripted.Reply{Wait: scripted.Until(make(chan struct{}))}}).
		Call(ctx, "x")
	assert.ErrorIs(t, err, context.Canceled)
}
