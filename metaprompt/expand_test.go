package metaprompt_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/metaprompt"
)

// text returns the text of a message.
func text(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestExpandWritesAPromptFromTheBrief(t *testing.T) {
	b := researcher()
	model := replies(b, goodPrompt)
	p, err := expander(t, model, "gpt-4o", nil).Expand(t.Context(), b)
	require.NoError(t, err)

	assert.Equal(t, goodPrompt, p.Text)
	assert.Empty(t, metaprompt.Check(p.Text))
	assert.Equal(t, metaprompt.Prompt{
		Text: goodPrompt, Model: "gpt-4o", Key: metaprompt.Key(b, "gpt-4o"), Created: fixedTime,
		Calls: 1, Tokens: p.Tokens,
	}, p)
	assert.Positive(t, p.Tokens)

	calls := model.CallsFor(agentLabel(b))
	require.Len(t, calls, 1)
	msgs := calls[0].Messages
	require.Len(t, msgs, 2)
	assert.Equal(t, llms.ChatMessageTypeSystem, msgs[0].Role)
	assert.Equal(t, metaprompt.Instructions(), text(msgs[0]))
	assert.Equal(t, llms.ChatMessageTypeHuman, msgs[1].Role)
	brief := text(msgs[1])
	for _, want := range []string{
		"Name: market_researcher",
		"Role: market researcher",
		"Capabilities: finds and compares market reports and statistics",
		"Expected contribution: market size and growth figures, with sources, for the report writer",
		"Locale: en-US",
		"- fetch_url: Fetch a web page as text.",
		"- web_search: Search the web. Returns titles, links and snippets.",
		"Task:\nEstimate the 2024 market for electric cargo bikes in Germany.",
	} {
		assert.Contains(t, brief, want)
	}
}

func TestInstructionsAskForTheSectionsAndReasoningFirst(t *testing.T) {
	in := metaprompt.Instructions()
	for _, want := range []string{
		metaprompt.SectionSteps, metaprompt.SectionOutputFormat, metaprompt.SectionExamples, metaprompt.SectionNotes,
		"first line", "reason before it concludes", "locale", "no code fence",
	} {
		assert.Contains(t, in, want)
	}
	assert.Less(t, len(strings.Fields(in)), 600, "the meta-prompt stays tight")
}

func TestRequestMatchesGolden(t *testing.T) {
	var b strings.Builder
	for _, m := range metaprompt.Request(researcher()) {
		b.WriteString("=== " + string(m.Role) + " ===\n")
		b.WriteString(text(m))
		if !strings.HasSuffix(text(m), "\n") {
			b.WriteString("\n")
		}
	}
	got := b.String()
	golden := filepath.Join("testdata", "request.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with UPDATE_GOLDEN=1 to create it")
	assert.Equal(t, string(want), got)
}

func TestRequestOfASparseBrief(t *testing.T) {
	msgs := metaprompt.Request(metaprompt.Brief{Name: "scribe", Role: "note taker"})
	assert.Equal(t, "Write the system prompt for this agent.\n\n"+
		"Name: scribe\nRole: note taker\nCapabilities: (not given)\nExpected contribution: (not given)\n"+
		"Locale: (not given: English)\nTools: none\n"+
		"Task:\n(not given: derive it from the role and the expected contribution)\n", text(msgs[1]))
}

func TestExpandRepairsAPromptOnce(t *testing.T) {
	b := researcher()
	noFormat := prompt("You estimate the market for electric cargo bikes.",
		"# Steps", "1. Search, then reason about the figures.", "# Notes", "- Answer in English.")
	model := replies(b, noFormat, goodPrompt)
	p, err := expander(t, model, "gpt-4o", nil).Expand(t.Context(), b)
	require.NoError(t, err)
	assert.Equal(t, goodPrompt, p.Text)
	assert.True(t, p.Repaired)
	assert.Equal(t, 2, p.Calls)

	calls := model.CallsFor(agentLabel(b))
	require.Len(t, calls, 2)
	msgs := calls[1].Messages
	require.Len(t, msgs, 4)
	assert.Equal(t, calls[0].Messages, msgs[:2], "the repair continues the first conversation")
	assert.Equal(t, llms.ChatMessageTypeAI, msgs[2].Role)
	assert.Equal(t, noFormat, text(msgs[2]))
	assert.Equal(t, llms.ChatMessageTypeHuman, msgs[3].Role)
	repair := text(msgs[3])
	assert.Contains(t, repair, `section "# Output Format" is missing`)
	assert.NotContains(t, repair, `"# Steps" is missing`)
	assert.Contains(t, repair, "Write the whole system prompt again")
}

func TestExpandFailsAfterTwoBadReplies(t *testing.T) {
	b := researcher()
	noNotes := prompt("You estimate the market.", "# Steps", "1. Think.", "# Output Format", "A number.")
	headed := "# Market researcher\n" + goodPrompt
	model := replies(b, "```\n"+noNotes+"\n```", headed)
	_, err := expander(t, model, "gpt-4o", nil).Expand(t.Context(), b)
	require.Error(t, err)
	assert.ErrorIs(t, err, metaprompt.ErrInvalidPrompt)
	var pe *metaprompt.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "market_researcher", pe.Agent)
	assert.Equal(t, 2, pe.Attempts)
	assert.Equal(t, headed, pe.Output)
	assert.Equal(t, []found{{metaprompt.ProblemFirstLine, ""}}, kinds(pe.Problems))
	assert.EqualError(t, err, `metaprompt: agent "market_researcher": invalid prompt after 2 attempts: `+
		"the first line is a heading; start with one sentence that states the agent's task, with no heading or preamble")
	assert.Len(t, model.Calls(), 2, "one repair round, no more")
	// The first reply was sent back cleaned, without its fence.
	assert.Equal(t, noNotes, text(model.Calls()[1].Messages[2]))
}

func TestExpandStripsFencesAndThinkBlocks(t *testing.T) {
	withFence := goodPrompt + "\n\n# Context\n```json\n{\"reasoning\": \"x\"}\n```"
	tests := []struct {
		name, reply, want string
	}{
		{"plain", goodPrompt, goodPrompt},
		{"fence with language", "```markdown\n" + goodPrompt + "\n```", goodPrompt},
		{"bare fence", "```\n" + goodPrompt + "\n```\n", goodPrompt},
		{"tilde fence", "~~~md\n" + goodPrompt + "\n~~~", goodPrompt},
		{"unclosed fence", "```markdown\n" + goodPrompt, goodPrompt},
		{"think block", "<think>The brief asks for a researcher.</think>\n\n" + goodPrompt, goodPrompt},
		{"think blocks and fence", "<think>a</think>\n<think>b\nc</think>\n```md\n" + goodPrompt + "\n```", goodPrompt},
		{"closing think tag only", "I should write steps first.</think>\n" + goodPrompt, goodPrompt},
		{"unclosed think", goodPrompt + "\n<think>was that right", goodPrompt},
		{"inner fences kept", "```markdown\n" + withFence + "\n```", withFence},
		{"inner fences of an unwrapped prompt kept", withFence, withFence},
		{"preamble", "Here is the system prompt you asked for:\n\n" + goodPrompt, goodPrompt},
		{"preamble and fence", "Sure! Here's the system prompt:\n```markdown\n" + goodPrompt + "\n```", goodPrompt},
		{"think, preamble and fence", "<think>ok</think>\nBelow is the prompt for the agent.\n\n```\n" + goodPrompt + "\n```", goodPrompt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := researcher()
			model := replies(b, tt.reply)
			p, err := expander(t, model, "gpt-4o", nil).Expand(t.Context(), b)
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.Text)
			assert.Equal(t, 1, p.Calls)
		})
	}
}

func TestExpandReturnsAPinnedPromptAsItIs(t *testing.T) {
	model := scripted.New(scripted.Script{})
	cache := newCache()
	b := researcher()
	b.Pinned = "# My own prompt\nDo exactly what I say.\n"
	p, err := expander(t, model, "gpt-4o", cache).Expand(t.Context(), b)
	require.NoError(t, err)
	assert.Equal(t, metaprompt.Prompt{Text: b.Pinned, Pinned: true, Tokens: p.Tokens}, p)
	assert.NotEmpty(t, metaprompt.Check(p.Text), "pinned prompts are not checked")
	assert.Empty(t, model.Calls())
	assert.Empty(t, cached(t, cache))
}

func TestExpandPassesModelErrorsOn(t *testing.T) {
	b := researcher()
	boom := errors.New("provider down")
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{agentLabel(b): {{Err: boom}}}})
	_, err := expander(t, model, "gpt-4o", nil).Expand(t.Context(), b)
	assert.ErrorIs(t, err, boom)
	assert.ErrorContains(t, err, `metaprompt: agent "market_researcher": model call 1: `)
	assert.NotErrorIs(t, err, metaprompt.ErrInvalidPrompt)
}

func TestExpandRejectsBadBriefs(t *testing.T) {
	tests := []struct {
		name  string
		brief metaprompt.Brief
		want  string
	}{
		{"no name", metaprompt.Brief{Name: "  ", Task: "x"}, "metaprompt: invalid brief: no agent name"},
		{"nothing to expand", metaprompt.Brief{Name: "a", Locale: "en"},
			`metaprompt: invalid brief: agent "a": no task, role or contribution to expand`},
		{"tool without a name", metaprompt.Brief{Name: "a", Task: "x", Tools: []metaprompt.Tool{{Description: "d"}}},
			`metaprompt: invalid brief: agent "a": tool 1 has no name`},
		{"pinned without a name", metaprompt.Brief{Pinned: "You do it."}, "metaprompt: invalid brief: no agent name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := scripted.New(scripted.Script{})
			_, err := expander(t, model, "m", nil).Expand(t.Context(), tt.brief)
			assert.ErrorIs(t, err, metaprompt.ErrInvalidBrief)
			assert.EqualError(t, err, tt.want)
			assert.Empty(t, model.Calls())
		})
	}
}

func TestNewRejectsBadConfigs(t *testing.T) {
	model := scripted.New(scripted.Script{})
	tests := []struct {
		name string
		cfg  metaprompt.Config
		want string
	}{
		{"no model", metaprompt.Config{ModelName: "m"}, "metaprompt: invalid config: no model"},
		{"no model name", metaprompt.Config{Model: model}, "metaprompt: invalid config: no model name (it is part of the cache key)"},
		{"cache without owner", metaprompt.Config{Model: model, ModelName: "m", Cache: newCache()},
			"metaprompt: invalid config: a cache needs an owner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := metaprompt.New(tt.cfg)
			assert.ErrorIs(t, err, metaprompt.ErrConfig)
			assert.EqualError(t, err, tt.want)
		})
	}
}
