package window_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/window"
)

// conversation returns n turns of an agent: a tool call, its result, and
// a remark, each turn about perTurn tokens.
func conversation(n, perTurn int) []llms.MessageContent {
	var msgs []llms.MessageContent
	for i := range n {
		id := fmt.Sprintf("call_%02d", i+1)
		msgs = append(msgs,
			toolCall(id, "web_search", fmt.Sprintf(`{"query":"topic %d"}`, i+1)),
			toolResult(id, "web_search", fmt.Sprintf("result %d: ", i+1)+words(perTurn/2)),
			llms.TextParts(llms.ChatMessageTypeAI, fmt.Sprintf("Noted finding %d. ", i+1)+words(perTurn/4)))
	}
	return msgs
}

func agentRequest(history []llms.MessageContent, budget window.Budget) window.Request {
	return window.Request{Agent: "researcher-1", Budget: budget, Parts: []window.Part{
		{Name: "system", Kind: window.KindSystem, Text: "You are a researcher.", Required: true},
		{Name: "task", Kind: window.KindTask, Text: "Compare Go web frameworks.", Required: true},
		{Name: "history", Kind: window.KindHistory, Messages: history, Required: true},
	}}
}

// assertPairsIntact checks that every tool message follows the assistant
// message that called it, with nothing but tool messages between.
func assertPairsIntact(t *testing.T, msgs []llms.MessageContent) {
	t.Helper()
	called := map[string]bool{}
	for i, m := range msgs {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				called[p.ID] = true
			case llms.ToolCallResponse:
				assert.True(t, called[p.ToolCallID], "message %d answers %s, whose call is not before it", i, p.ToolCallID)
			}
		}
		if m.Role != llms.ChatMessageTypeTool && !hasCalls(m) {
			clear(called)
		}
	}
}

func hasCalls(m llms.MessageContent) bool {
	for _, p := range m.Parts {
		if _, ok := p.(llms.ToolCall); ok {
			return true
		}
	}
	return false
}

func TestHistoryIsSummarizedFromTheThreshold(t *testing.T) {
	history := conversation(10, 200)
	b0, _ := newBuilder(t, nil, nil)
	full, err := b0.Assemble(t.Context(), agentRequest(history, window.Budget{}))
	require.NoError(t, err)
	require.Empty(t, full.Snapshot.Policies)
	size := full.Snapshot.FullTokens

	tests := []struct {
		name      string
		at        int
		summarize bool
	}{
		{"below", size + 1, false},
		{"at", size, true},
		{"above", size - 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := summarizer("The agent searched ten topics; findings 1-9 noted.")
			b, bs := newBuilder(t, sum, nil)
			limit := limitFor(t, window.DefaultHistoryThreshold, tt.at)
			res, err := b.Assemble(t.Context(), agentRequest(history, window.Budget{MaxInputTokens: limit}))
			require.NoError(t, err)
			applied := res.Snapshot.PoliciesOf(window.PolicySummarizeHistory)
			if !tt.summarize {
				assert.Empty(t, applied)
				assert.Empty(t, sum.Calls())
				assert.Equal(t, full.Messages, res.Messages)
				return
			}
			require.Len(t, applied, 1)
			ref := applied[0].Ref
			assert.Contains(t, applied[0].Detail, "at 85% of")
			assert.True(t, strings.HasPrefix(ref, "mission/run-1/outputs/transcripts/researcher-1/history-"), ref)

			kept := res.Compacted["history"]
			require.NotEmpty(t, kept)
			assert.Equal(t, res.Messages[2:], kept)
			summary := text(kept[0])
			assert.Contains(t, summary, "The full transcript is archived at "+ref)
			assert.Contains(t, summary, "The agent searched ten topics; findings 1-9 noted.")
			verbatim := kept[1:]
			evicted := history[:len(history)-len(verbatim)]
			assert.Equal(t, history[len(history)-len(verbatim):], verbatim)
			assert.Contains(t, applied[0].Detail, fmt.Sprintf("summarized %d of 30 messages", len(evicted)))
			assertPairsIntact(t, res.Messages)

			histTokens := full.Snapshot.Parts[2].Tokens
			keptTokens := llmTokens(verbatim)
			assert.LessOrEqual(t, keptTokens, histTokens/10, "at most the newest 10%% by tokens")
			assert.Greater(t, keptTokens+llmTokens(history[len(evicted)-3:len(evicted)]), histTokens/10, "and as much as fits")

			archived, _ := readAll(t, bs, ref, 4_096)
			assert.Equal(t, window.Transcript(evicted), archived, "the evicted messages are archived")
			for i := range len(evicted) / 3 {
				assert.Contains(t, archived, fmt.Sprintf("[tool web_search (call_%02d)]\nresult %d: ", i+1, i+1))
			}

			calls := sum.Calls()
			require.Len(t, calls, 1)
			assert.Equal(t, window.DefaultSummarizerAgent, calls[0].Agent)
			golden(t, "prompt_summarize_history.golden", text(calls[0].Messages[0]))
			assert.Equal(t, "Summarize the transcript of researcher-1.\n\n<transcript>\n"+strings.TrimRight(archived, "\n")+"\n</transcript>",
				text(calls[0].Messages[1]))
		})
	}
}

func llmTokens(msgs []llms.MessageContent) int {
	n := 0
	for _, m := range msgs {
		n += partTokensOf(m)
	}
	return n
}

func TestSummarizationNeverSplitsToolCallsFromResults(t *testing.T) {
	sum := summarizer("summary")
	tests := []struct {
		name string
		tail []llms.MessageContent
		keep int // messages kept verbatim
	}{
		{
			// The newest group is a call with three results: kept whole,
			// though it is more than 10% of the history.
			name: "pending results",
			tail: []llms.MessageContent{
				{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
					llms.ToolCall{ID: "a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "fetch", Arguments: "{}"}},
					llms.ToolCall{ID: "b", Type: "function", FunctionCall: &llms.FunctionCall{Name: "fetch", Arguments: "{}"}},
					llms.ToolCall{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "fetch", Arguments: "{}"}},
				}},
				toolResult("a", "fetch", words(300)), toolResult("b", "fetch", words(300)), toolResult("c", "fetch", words(300)),
			},
			keep: 4,
		},
		{
			// The 10% boundary falls inside a call group: the whole group
			// goes, the remark after it stays.
			name: "boundary inside a group",
			tail: []llms.MessageContent{
				toolCall("x", "fetch", "{}"), toolResult("x", "fetch", words(150)),
				llms.TextParts(llms.ChatMessageTypeAI, "Done."),
			},
			keep: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, bs := newBuilder(t, sum, nil)
			history := append(conversation(6, 200), tt.tail...)
			req := agentRequest(history, window.Budget{MaxInputTokens: 100_000})
			req.Force = true
			res, err := b.Assemble(t.Context(), req)
			require.NoError(t, err)
			kept := res.Compacted["history"]
			require.Len(t, kept, tt.keep+1)
			assert.Equal(t, history[len(history)-tt.keep:], kept[1:])
			assertPairsIntact(t, res.Messages)
			ref := res.Snapshot.PoliciesOf(window.PolicySummarizeHistory)[0].Ref
			archived, _ := readAll(t, bs, ref, 0)
			assert.Equal(t, window.Transcript(history[:len(history)-tt.keep]), archived)
		})
	}
}

func TestHistoryFallbackWithoutALimit(t *testing.T) {
	var history []llms.MessageContent
	for i := range 9 {
		history = append(history,
			llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("question %d ", i)+words(10_000)),
			llms.TextParts(llms.ChatMessageTypeAI, fmt.Sprintf("answer %d ", i)+words(10_000)))
	}
	b, _ := newBuilder(t, summarizer("summary"), nil)
	res, err := b.Assemble(t.Context(), agentRequest(history, window.Budget{}))
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Snapshot.FullTokens, window.DefaultHistoryFallbackTokens)
	applied := res.Snapshot.PoliciesOf(window.PolicySummarizeHistory)
	require.Len(t, applied, 1)
	assert.Contains(t, applied[0].Detail, "summarized 12 of 18 messages at 180,")
	assert.Contains(t, applied[0].Detail, "(threshold 170,000 tokens, no known limit)")
	kept := res.Compacted["history"]
	assert.Equal(t, history[12:], kept[1:], "the last 6 messages")

	// The last 6 messages would split a call group: fewer are kept.
	tail := []llms.MessageContent{
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.ToolCall{ID: "a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f"}},
			llms.ToolCall{ID: "b", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f"}},
			llms.ToolCall{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f"}},
			llms.ToolCall{ID: "d", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f"}},
		}},
		toolResult("a", "f", "1"), toolResult("b", "f", "2"), toolResult("c", "f", "3"), toolResult("d", "f", "4"),
		llms.TextParts(llms.ChatMessageTypeAI, "All four fetched."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Go on."),
	}
	history = append(history, tail...)
	res, err = b.Assemble(t.Context(), agentRequest(history, window.Budget{}))
	require.NoError(t, err)
	assert.Equal(t, tail[5:], res.Compacted["history"][1:])

	for _, tt := range []struct {
		fallback  int
		summarize bool
	}{{res.Snapshot.FullTokens + 1, false}, {res.Snapshot.FullTokens, true}} {
		b, _ := newBuilder(t, summarizer("summary"), func(c *window.Config) { c.History.FallbackTokens = tt.fallback })
		res, err := b.Assemble(t.Context(), agentRequest(history, window.Budget{}))
		require.NoError(t, err)
		assert.Equal(t, tt.summarize, len(res.Snapshot.PoliciesOf(window.PolicySummarizeHistory)) == 1, "fallback %d", tt.fallback)
	}
}

func TestSummarizedHistoryIsSummarizedAgain(t *testing.T) {
	sum := summarizer("first summary")
	b, bs := newBuilder(t, sum, nil)
	req := agentRequest(conversation(10, 200), window.Budget{MaxInputTokens: 100_000})
	req.Force = true
	res, err := b.Assemble(t.Context(), req)
	require.NoError(t, err)
	history := append(res.Compacted["history"], conversation(4, 200)...)
	req.Parts[2].Messages = history
	res, err = b.Assemble(t.Context(), req)
	require.NoError(t, err)
	ref := res.Snapshot.PoliciesOf(window.PolicySummarizeHistory)[0].Ref
	archived, _ := readAll(t, bs, ref, 0)
	assert.True(t, strings.HasPrefix(archived, "[user]\n[Summary of the 27 earlier messages"), archived[:200])
	assert.Len(t, sum.Calls(), 2)
}

func TestHistorySummaryOptions(t *testing.T) {
	history := conversation(10, 200)
	tests := []struct {
		name   string
		cfg    window.Config
		detail string
	}{
		{"disabled", window.Config{History: window.HistoryPolicy{Disabled: true}}, ""},
		{"no offloader", window.Config{}, "summarize_history: no offloader configured to archive the evicted messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := window.New(tt.cfg)
			req := agentRequest(history, window.Budget{MaxInputTokens: 100_000})
			req.Force = true
			res, err := b.Assemble(t.Context(), req)
			require.NoError(t, err)
			assert.Empty(t, res.Snapshot.PoliciesOf(window.PolicySummarizeHistory))
			assert.Nil(t, res.Compacted)
			if tt.detail != "" {
				require.Len(t, res.Snapshot.PoliciesOf(window.PolicySkipped), 1)
				assert.Equal(t, tt.detail, res.Snapshot.PoliciesOf(window.PolicySkipped)[0].Detail)
			}
		})
	}
}

func TestLowerPriorityPartsDoNotTriggerSummarization(t *testing.T) {
	sum := summarizer("summary")
	b, _ := newBuilder(t, sum, nil)
	req := agentRequest(conversation(10, 200), window.Budget{MaxInputTokens: 4_000})
	req.Parts = append(req.Parts, window.Part{Name: "index", Kind: window.KindMemory, Text: words(3_000), Priority: board.PriorityLow})
	res, err := b.Assemble(t.Context(), req)
	require.NoError(t, err)
	require.Greater(t, res.Snapshot.FullTokens, 4_000)
	assert.Empty(t, res.Snapshot.PoliciesOf(window.PolicySummarizeHistory))
	assert.Empty(t, sum.Calls())
	index, _ := res.Snapshot.Part("index")
	assert.True(t, index.Omitted, "the low-priority part is left out instead")

	req.Parts[3].Priority = board.PriorityHigh
	res, err = b.Assemble(t.Context(), req)
	require.NoError(t, err)
	assert.Len(t, res.Snapshot.PoliciesOf(window.PolicySummarizeHistory), 1, "a part as important as the history counts")
}

func TestFailingSummarizerFallsBackToAnExtract(t *testing.T) {
	model := scripted.New(scripted.Script{Default: &scripted.Reply{Err: llm.ErrTransient}})
	b, bs := newBuilder(t, model, nil)
	req := agentRequest(conversation(10, 200), window.Budget{MaxInputTokens: 100_000})
	req.Force = true
	res, err := b.Assemble(t.Context(), req)
	require.NoError(t, err)
	applied := res.Snapshot.PoliciesOf(window.PolicySummarizeHistory)
	require.Len(t, applied, 1)
	assert.Contains(t, applied[0].Detail, "(summarizer failed (llm: transient error")
	summary := text(res.Compacted["history"][0])
	assert.Contains(t, summary, "[assistant]\n→ web_search (call_01)", "an extract of the transcript's first lines")
	archived, _ := readAll(t, bs, applied[0].Ref, 0)
	assert.True(t, strings.HasPrefix(archived, "[assistant]\n→ web_search (call_01)"))
}

func TestBuilderIsSafeForConcurrentUse(t *testing.T) {
	sum := summarizer("summary")
	b, _ := newBuilder(t, sum, nil)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			req := agentRequest(conversation(10, 200), window.Budget{MaxInputTokens: 100_000})
			req.Agent = fmt.Sprintf("agent-%d", i%2)
			req.Force = true
			_, errs[i] = b.Assemble(t.Context(), req)
		})
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
	assert.LessOrEqual(t, len(sum.Calls()), 8)
}
