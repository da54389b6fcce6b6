package window_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/window"
)

// toolTurns returns n turns of an agent, each a tool call and a result
// of about tokens tokens that names its turn.
func toolTurns(n, tokens int) []llms.MessageContent {
	var msgs []llms.MessageContent
	for i := range n {
		id := fmt.Sprintf("call_%02d", i+1)
		msgs = append(msgs, toolCall(id, "fetch", fmt.Sprintf(`{"url":"https://example.com/%d"}`, i+1)),
			toolResult(id, "fetch", fmt.Sprintf("page %d\n", i+1)+words(tokens)))
	}
	return msgs
}

func clearing(mod func(*window.ClearPolicy)) func(*window.Config) {
	return func(c *window.Config) {
		c.Clear = window.ClearPolicy{FallbackTokens: 5_000}
		if mod != nil {
			mod(&c.Clear)
		}
	}
}

func TestOldToolResultsAreClearedToStubsThatReadBack(t *testing.T) {
	b, bs := newBuilder(t, nil, clearing(func(p *window.ClearPolicy) { p.KeepTurns = 3 }))
	history := toolTurns(6, 1_000) // about 6,100 tokens, over 5,000
	res, err := b.Assemble(t.Context(), agentRequest(history, window.Budget{}))
	require.NoError(t, err)

	applied := res.Snapshot.PoliciesOf(window.PolicyClearToolResults)
	require.Len(t, applied, 1)
	assert.Contains(t, applied[0].Detail, "cleared 3 tool results older than the last 3 turns")
	assert.Less(t, applied[0].TokensAfter, applied[0].TokensBefore-2_500)

	got := res.Compacted["history"]
	require.Len(t, got, len(history), "clearing keeps every message, and every call with its result")
	assertPairsIntact(t, got)
	for i := range 6 {
		content := text(got[2*i+1])
		if i < 3 {
			assert.Contains(t, content, fmt.Sprintf("[Result of tool fetch (call call_%02d) cleared from the context: 1,0", i+1))
			ref := refIn(t, content)
			full, _ := readAll(t, bs, ref, window.MaxReadBytes)
			assert.Equal(t, text(history[2*i+1]), full, "read_context reads the cleared result back")
			continue
		}
		assert.Equal(t, text(history[2*i+1]), content, "the last 3 turns keep their results")
	}
	// The caller's messages are not touched.
	assert.True(t, strings.HasPrefix(text(history[1]), "page 1"))
}

// refIn returns the reference in a stub.
func refIn(t *testing.T, stub string) string {
	t.Helper()
	_, after, ok := strings.Cut(stub, "Full text: ")
	require.True(t, ok, stub)
	ref, _, _ := strings.Cut(after, " ")
	return ref
}

func TestClearingWaitsForTheThresholdAndThenStaysPut(t *testing.T) {
	b, _ := newBuilder(t, nil, clearing(nil))
	history := toolTurns(4, 1_000) // about 4,100 tokens, under 5,000
	res, err := b.Assemble(t.Context(), agentRequest(history, window.Budget{}))
	require.NoError(t, err)
	assert.Empty(t, res.Snapshot.PoliciesOf(window.PolicyClearToolResults), "under the threshold nothing is cleared")
	assert.Nil(t, res.Compacted)

	history = toolTurns(6, 1_000)
	res, err = b.Assemble(t.Context(), agentRequest(history, window.Budget{}))
	require.NoError(t, err)
	require.Len(t, res.Snapshot.PoliciesOf(window.PolicyClearToolResults), 1)
	// One more turn on the compacted history: under the threshold again,
	// so the prompt only grows and its beginning stays the same.
	next := append(res.Compacted["history"], toolTurns(7, 1_000)[12:]...)
	res2, err := b.Assemble(t.Context(), agentRequest(next, window.Budget{}))
	require.NoError(t, err)
	assert.Empty(t, res2.Snapshot.PoliciesOf(window.PolicyClearToolResults))
	shared, total := window.PrefixReuse(res.Messages, res2.Messages)
	assert.Equal(t, total-shareOfLast(res2.Messages, 2)-llm.TokensPerReply, shared, "everything but the new turn is reused")
}

// shareOfLast returns the tokens of the last n messages.
func shareOfLast(msgs []llms.MessageContent, n int) int {
	all, _ := window.PrefixReuse(msgs, msgs)
	head, _ := window.PrefixReuse(msgs[:len(msgs)-n], msgs[:len(msgs)-n])
	return all - head
}

func TestClearingSettings(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*window.ClearPolicy)
		cleared int
	}{
		{"by default the latest turn keeps its results", nil, 5},
		{"keep three turns", func(p *window.ClearPolicy) { p.KeepTurns = 3 }, 3},
		{"excluded tool", func(p *window.ClearPolicy) { p.Exclude = []string{"fetch"} }, 0},
		{"results under the minimum", func(p *window.ClearPolicy) { p.MinTokens = 2_000 }, 0},
		{"disabled", func(p *window.ClearPolicy) { p.Disabled = true }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBuilder(t, nil, clearing(tt.mod))
			res, err := b.Assemble(t.Context(), agentRequest(toolTurns(6, 1_000), window.Budget{}))
			require.NoError(t, err)
			n := 0
			for _, m := range res.Messages {
				if strings.Contains(text(m), "cleared from the context") {
					n++
				}
			}
			assert.Equal(t, tt.cleared, n)
		})
	}
}

func TestClearingKeepsResultsWhenTheStoreFails(t *testing.T) {
	b := window.New(window.Config{Offloader: failingOffloader{}, Clear: window.ClearPolicy{FallbackTokens: 5_000}})
	history := toolTurns(6, 1_000)
	res, err := b.Assemble(t.Context(), agentRequest(history, window.Budget{}))
	require.NoError(t, err)
	assert.Empty(t, res.Snapshot.PoliciesOf(window.PolicyClearToolResults))
	skipped := res.Snapshot.PoliciesOf(window.PolicySkipped)
	require.Len(t, skipped, 5, "every result older than the latest turn")
	assert.Equal(t, "clear_tool_results: result of fetch (call call_01) kept: disk full", skipped[0].Detail)
	assert.Equal(t, text(history[1]), text(res.Messages[3]), "the result stays in the window, nothing is lost")

	nb := window.New(window.Config{Clear: window.ClearPolicy{FallbackTokens: 5_000}})
	res, err = nb.Assemble(t.Context(), agentRequest(history, window.Budget{}))
	require.NoError(t, err)
	skipped = res.Snapshot.PoliciesOf(window.PolicySkipped)
	require.Len(t, skipped, 1)
	assert.Equal(t, "clear_tool_results: no offloader configured to keep the cleared results", skipped[0].Detail)
}

func TestPrefixReuse(t *testing.T) {
	sys := llms.TextParts(llms.ChatMessageTypeSystem, words(100))
	task := llms.TextParts(llms.ChatMessageTypeHuman, words(50))
	turn := toolTurns(1, 300)
	prev := []llms.MessageContent{sys, task}
	cur := append([]llms.MessageContent{sys, task}, turn...)
	shared, total := window.PrefixReuse(prev, cur)
	assert.Equal(t, 100+1+50+1+2*3, shared, "system and task with their message overhead")
	assert.Greater(t, total, shared+300)

	changed := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, words(100)+" now"), task}
	shared, _ = window.PrefixReuse(prev, changed)
	assert.Zero(t, shared, "a changed first message ends the prefix, though the task matches")

	var m window.PrefixMeter
	m.Observe("a", prev)
	m.Observe("b", cur)
	assert.Zero(t, m.Share(), "first calls of each agent are not measured")
	m.Observe("a", cur)
	s, tt := window.PrefixReuse(prev, cur)
	assert.InDelta(t, float64(s)/float64(tt), m.Share(), 1e-9)
	assert.InDelta(t, 1, m.Kept(), 1e-9, "the second call of a repeats all of the first")
	assert.Equal(t, 3, m.Calls)
}
