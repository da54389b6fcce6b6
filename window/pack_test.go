package window_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/window"
)

// packParts are parts of known sizes: a text part of n tokens takes n+4
// (the message overhead) when it stands alone.
func packParts() []window.Part {
	return []window.Part{
		{Name: "system", Kind: window.KindSystem, Text: words(100), Required: true},
		{Name: "index", Kind: window.KindMemory, Text: words(100), Priority: board.PriorityLow},
		{Name: "task", Kind: window.KindTask, Text: words(100), Required: true},
		{Name: "handoff", Kind: window.KindHandoff, Text: words(100)},
		{Name: "notes", Kind: window.KindMemory, Text: words(100), Priority: board.PriorityLow, Role: llms.ChatMessageTypeHuman},
		{Name: "search", Kind: window.KindToolResult, Text: words(100)},
	}
}

func TestPriorities(t *testing.T) {
	const part = 104 // tokens of each part standing alone
	tests := []struct {
		name      string
		limit     int
		omitted   []string
		truncated []string
	}{
		{"everything fits", 3 + 6*part, nil, nil},
		{"one low part goes, the later one", 3 + 5*part, []string{"notes"}, nil},
		{"low parts go first", 3 + 4*part, []string{"index", "notes"}, nil},
		{"then normal ones", 3 + 3*part + 50, []string{"index", "notes", "search"}, nil},
		{"then high ones", 3 + 2*part + 50, []string{"index", "handoff", "notes", "search"}, nil},
		{"required parts are cut, never dropped", 3 + part + 60, []string{"index", "handoff", "notes", "search"}, []string{"task"}},
		{"both cut", 3 + 100, []string{"index", "handoff", "notes", "search"}, []string{"system", "task"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBuilder(t, nil, nil)
			res, err := b.Assemble(t.Context(), window.Request{Parts: packParts(), Budget: window.Budget{MaxInputTokens: tt.limit}})
			require.NoError(t, err)
			s := res.Snapshot
			assert.LessOrEqual(t, s.TotalTokens, tt.limit)
			var omitted, truncated []string
			for _, p := range s.Parts {
				assert.Equal(t, !p.Omitted, p.Included, p.Name)
				if p.Omitted {
					omitted = append(omitted, p.Name)
					assert.Zero(t, p.Tokens)
					assert.Regexp(t, `^over budget: needs 104 tokens, \d+ left after higher-priority parts$`, p.Reason)
				}
				if p.Truncated {
					truncated = append(truncated, p.Name)
					assert.Regexp(t, `^over budget: cut from 104 to \d+ tokens$`, p.Reason)
					assert.Less(t, p.Tokens, p.FullTokens)
				}
				assert.Equal(t, part, p.FullTokens)
			}
			assert.Equal(t, tt.omitted, omitted)
			assert.Equal(t, tt.truncated, truncated)
			assert.Len(t, s.PoliciesOf(window.PolicyOmit), len(tt.omitted))
			assert.Len(t, s.PoliciesOf(window.PolicyTruncate), len(tt.truncated))
			for _, m := range res.Messages {
				if got := text(m); strings.Contains(got, "[… cut to fit the context window]") {
					assert.True(t, strings.HasPrefix(got, "abc abc") || got == "[… cut to fit the context window]", got)
				}
			}
		})
	}
}

func TestRequiredPartsThatCannotFitAreAnError(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	_, err := b.Assemble(t.Context(), window.Request{Parts: packParts(), Budget: window.Budget{MaxInputTokens: 20}})
	require.ErrorIs(t, err, window.ErrBudgetTooSmall)
	assert.ErrorContains(t, err, "2 required parts need at least")
}

func TestCutTextPointsToItsReference(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	res, err := b.Assemble(t.Context(), window.Request{Budget: window.Budget{MaxInputTokens: 80}, Parts: []window.Part{
		{Name: "memory", Kind: window.KindMemory, Text: words(500), Ref: "memory/notes", Required: true},
	}})
	require.NoError(t, err)
	got := text(res.Messages[0])
	assert.True(t, strings.HasSuffix(got, "\n[… cut to fit the context window; full text: memory/notes (read it with read_context)]"), got)
	p, _ := res.Snapshot.Part("memory")
	assert.Equal(t, []string{"memory/notes"}, p.Refs)
	assert.LessOrEqual(t, res.Snapshot.TotalTokens, 80)
}

func TestRequiredHistoryLosesItsOldestGroupsFirst(t *testing.T) {
	b, _ := newBuilder(t, nil, func(c *window.Config) { c.History.Disabled = true })
	history := conversation(10, 200)
	res, err := b.Assemble(t.Context(), agentRequest(history, window.Budget{MaxInputTokens: 700}))
	require.NoError(t, err)
	p, _ := res.Snapshot.Part("history")
	assert.True(t, p.Truncated)
	assert.Regexp(t, `leaving out the \d+ oldest of 30 messages$`, p.Reason)
	kept := res.Messages[2:]
	assert.Equal(t, history[len(history)-len(kept):], kept)
	assertPairsIntact(t, res.Messages)
	assert.LessOrEqual(t, res.Snapshot.TotalTokens, 700)
	assert.Nil(t, res.Compacted, "a cut for one call is not for good")

	// When even the newest group does not fit, its texts are cut.
	res, err = b.Assemble(t.Context(), agentRequest(
		[]llms.MessageContent{toolCall("c", "fetch", "{}"), toolResult("c", "fetch", words(2_000))},
		window.Budget{MaxInputTokens: 300}))
	require.NoError(t, err)
	require.Len(t, res.Messages, 4)
	assert.Contains(t, text(res.Messages[3]), "[… cut to fit the context window]")
	assert.LessOrEqual(t, res.Snapshot.TotalTokens, 300)
	assertPairsIntact(t, res.Messages)
}

func TestLayoutJoinsTextPartsOfOneRole(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	res, err := b.Assemble(t.Context(), window.Request{Parts: []window.Part{
		{Name: "system", Kind: window.KindSystem, Text: "You are a researcher."},
		{Name: "index", Kind: window.KindMemory, Text: "Index: project/readme"},
		{Name: "empty", Kind: window.KindHandoff},
		{Name: "task", Kind: window.KindTask, Text: "Compare Go web frameworks."},
		{Name: "handoff", Kind: window.KindHandoff, Text: "From the planner: focus on routing."},
		{Name: "history", Kind: window.KindHistory, Messages: []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeAI, "On it.")}},
		{Name: "late", Kind: window.KindTask, Text: "Answer in English."},
	}})
	require.NoError(t, err)
	assert.Equal(t, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are a researcher.\n\nIndex: project/readme"),
		llms.TextParts(llms.ChatMessageTypeHuman, "Compare Go web frameworks.\n\nFrom the planner: focus on routing."),
		llms.TextParts(llms.ChatMessageTypeAI, "On it."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Answer in English."),
	}, res.Messages)
	p, _ := res.Snapshot.Part("empty")
	assert.Equal(t, window.PartReport{Name: "empty", Kind: window.KindHandoff, Priority: board.PriorityHigh, Reason: "empty"}, p)
	assert.Equal(t, 4, res.Snapshot.Messages)
}

func TestInvalidRequests(t *testing.T) {
	tests := []struct {
		name string
		req  window.Request
		want error
	}{
		{"no name", window.Request{Parts: []window.Part{{Kind: window.KindTask}}}, window.ErrInvalidPart},
		{"same name", window.Request{Parts: []window.Part{{Name: "a", Kind: window.KindTask}, {Name: "a", Kind: window.KindTask}}}, window.ErrInvalidPart},
		{"unknown kind", window.Request{Parts: []window.Part{{Name: "a", Kind: "notes"}}}, window.ErrInvalidPart},
		{"text and messages", window.Request{Parts: []window.Part{{Name: "a", Kind: window.KindHistory, Text: "x",
			Messages: []llms.MessageContent{}}}}, window.ErrInvalidPart},
		{"steps elsewhere", window.Request{Parts: []window.Part{{Name: "a", Kind: window.KindTask, Steps: plan(1)}}}, window.ErrInvalidPart},
		{"unknown priority", window.Request{Parts: []window.Part{{Name: "a", Kind: window.KindTask, Priority: "urgent"}}}, window.ErrInvalidPart},
		{"negative budget", window.Request{Budget: window.Budget{MaxInputTokens: -1}}, window.ErrInvalidBudget},
		{"reserve eats the window", window.Request{Budget: window.Budget{MaxInputTokens: 1000, ReserveForOutput: 1000}}, window.ErrInvalidBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := window.New(window.Config{}).Assemble(t.Context(), tt.req)
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

func TestBudgetLimit(t *testing.T) {
	assert.Equal(t, 0, window.Budget{}.Limit())
	assert.Equal(t, 0, window.Budget{ReserveForOutput: 10}.Limit())
	assert.Equal(t, 96_000, window.Budget{MaxInputTokens: 128_000, ReserveForOutput: 32_000}.Limit())
}
