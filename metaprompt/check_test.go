package metaprompt_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coorflow/coorflow/metaprompt"
)

// found is a problem as the table below states it: kind and section.
type found struct {
	Kind    metaprompt.ProblemKind
	Section string
}

func kinds(ps []metaprompt.Problem) []found {
	var out []found
	for _, p := range ps {
		out = append(out, found{p.Kind, p.Section})
	}
	return out
}

const (
	first     = "You compare the prices of three suppliers and recommend one."
	steps     = "1. Collect the prices.\n2. Reason about the trade-offs before you choose."
	format    = "A short Markdown note with the comparison and your recommendation."
	notes     = "- Answer in English."
	stepsBare = "1. Collect the prices.\n2. Choose one."
)

func TestCheckAcceptsGoodPrompts(t *testing.T) {
	tests := []struct {
		name, text string
	}{
		{"full", goodPrompt},
		{"minimal", prompt(first, "# Steps", steps, "# Output Format", format, "# Notes", notes)},
		{"headings in any case, with a colon", prompt(first, "# steps:", steps, "# OUTPUT FORMAT", format, "# Notes:", notes)},
		{"other sections allowed", prompt(first, "# Context", "Prices change weekly.", "# Steps", steps,
			"# Output Format", format, "# Notes", notes)},
		{"chinese", prompt("你负责比较三家供应商的价格并推荐一家。",
			"# Steps", "1. 收集价格。\n2. 先分析利弊，再做选择。", "# Output Format", "一段简短的说明。", "# Notes", "- 用中文回答。")},
		{"first line ends in bold", prompt("You compare prices for **the buyer**.", "# Steps", steps,
			"# Output Format", format, "# Notes", notes)},
		{"json reasoning first", prompt(first, "# Steps", steps, "# Output Format",
			"```json\n{\n  \"reasoning\": \"...\",\n  \"answer\": \"...\"\n}\n```", "# Notes", notes)},
		{"each example reasoning first", prompt(first, "# Steps", steps, "# Output Format", format,
			"# Examples", "## Example 1\nReasoning: [a]\nAnswer: [b]\n## Example 2\nReasoning: [c]\nAnswer: [d]",
			"# Notes", notes)},
		{"a final answer after reasoning in prose", prompt(first, "# Steps", steps, "# Output Format",
			"Write your analysis, then give the final answer on the last line.", "# Notes", notes)},
		{"leading blank lines", "\n\n" + goodPrompt + "\n\n"},
		{"a word that starts like a preamble", strings.Replace(goodPrompt, "You estimate", "Surely you estimate", 1)},
		{"windows line ends", strings.ReplaceAll(goodPrompt, "\n", "\r\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Empty(t, metaprompt.Check(tt.text))
		})
	}
}

func TestCheckFindsProblems(t *testing.T) {
	full := func(f string) string {
		return prompt(f, "# Steps", steps, "# Output Format", format, "# Notes", notes)
	}
	tests := []struct {
		name string
		text string
		want []found
	}{
		{"empty", "", []found{{metaprompt.ProblemEmpty, ""}}},
		{"blank", " \n\t\n", []found{{metaprompt.ProblemEmpty, ""}}},
		{"heading first", "# Price analyst\n" + full(first), []found{{metaprompt.ProblemFirstLine, ""}}},
		{"section first", "# Steps\n1. Think it through.\n# Output Format\nText.\n# Notes\nNone.",
			[]found{{metaprompt.ProblemFirstLine, ""}}},
		{"preamble", full("Here is the system prompt you asked for:"), []found{{metaprompt.ProblemFirstLine, ""}}},
		{"sure", full("Sure! You compare prices."), []found{{metaprompt.ProblemFirstLine, ""}}},
		{"list item", full("- You compare prices."), []found{{metaprompt.ProblemFirstLine, ""}}},
		{"not a sentence", full("You compare prices and recommend a supplier"), []found{{metaprompt.ProblemFirstLine, ""}}},
		{"too long a first line", full(strings.Repeat("You compare prices ", 30) + "."), []found{{metaprompt.ProblemFirstLine, ""}}},
		{"missing steps", prompt(first, "# Output Format", "Think first, then answer.", "# Notes", notes),
			[]found{{metaprompt.ProblemMissingSection, metaprompt.SectionSteps}}},
		{"missing output format", prompt(first, "# Steps", steps, "# Notes", notes),
			[]found{{metaprompt.ProblemMissingSection, metaprompt.SectionOutputFormat}}},
		{"missing notes", prompt(first, "# Steps", steps, "# Output Format", format),
			[]found{{metaprompt.ProblemMissingSection, metaprompt.SectionNotes}}},
		{"level-2 heading is not a section", prompt(first, "# Steps", steps, "## Output Format", format, "# Notes", notes),
			[]found{{metaprompt.ProblemMissingSection, metaprompt.SectionOutputFormat}}},
		{"heading inside a code fence", prompt(first, "# Steps", steps, "# Output Format",
			"```\n# Notes\n```"), []found{{metaprompt.ProblemMissingSection, metaprompt.SectionNotes}}},
		{"empty section", prompt(first, "# Steps", steps, "# Output Format", "\n", "# Notes", notes),
			[]found{{metaprompt.ProblemEmptySection, metaprompt.SectionOutputFormat}}},
		{"empty last section", full(first) + "\n# Examples\n",
			[]found{{metaprompt.ProblemEmptySection, metaprompt.SectionExamples}}},
		{"duplicate", full(first) + "\n# Steps\n3. More.",
			[]found{{metaprompt.ProblemDuplicate, metaprompt.SectionSteps}}},
		{"no reasoning", prompt(first, "# Steps", stepsBare, "# Output Format", format, "# Notes", notes),
			[]found{{metaprompt.ProblemNoReasoning, ""}}},
		{"conclusion first in the format", prompt(first, "# Steps", steps, "# Output Format",
			"- **Recommendation:** the supplier.\n- **Reasoning:** why.", "# Notes", notes),
			[]found{{metaprompt.ProblemConclusionFirst, metaprompt.SectionOutputFormat}}},
		{"conclusion first in json", prompt(first, "# Steps", steps, "# Output Format",
			"```json\n{\n  \"answer\": \"...\",\n  \"reasoning\": \"...\"\n}\n```", "# Notes", notes),
			[]found{{metaprompt.ProblemConclusionFirst, metaprompt.SectionOutputFormat}}},
		{"conclusion first in headings", prompt(first, "# Steps", steps, "# Output Format",
			"## Final answer\n[one line]\n## Analysis\n[the rest]", "# Notes", notes),
			[]found{{metaprompt.ProblemConclusionFirst, metaprompt.SectionOutputFormat}}},
		{"conclusion first in the second example", prompt(first, "# Steps", steps, "# Output Format", format,
			"# Examples", "## Example 1\nReasoning: [a]\nAnswer: [b]\n## Example 2\nAnswer: [d]\nReasoning: [c]",
			"# Notes", notes),
			[]found{{metaprompt.ProblemConclusionFirst, metaprompt.SectionExamples}}},
		{"chinese conclusion first", prompt("你负责推荐一家供应商。", "# Steps", "1. 先分析。", "# Output Format",
			"结论：[供应商]\n分析：[理由]", "# Notes", "- 用中文回答。"),
			[]found{{metaprompt.ProblemConclusionFirst, metaprompt.SectionOutputFormat}}},
		{"too long", full(first) + "\n" + strings.Repeat("Keep it short. ", 600),
			[]found{{metaprompt.ProblemTooLong, ""}}},
		{"several at once", "Okay, here it is.\n\n# Steps\n1. Go.",
			[]found{
				{metaprompt.ProblemFirstLine, ""},
				{metaprompt.ProblemMissingSection, metaprompt.SectionOutputFormat},
				{metaprompt.ProblemMissingSection, metaprompt.SectionNotes},
				{metaprompt.ProblemNoReasoning, ""},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := metaprompt.Check(tt.text)
			assert.Equal(t, tt.want, kinds(got))
			for _, p := range got {
				assert.NotEmpty(t, p.Message)
				assert.Equal(t, p.Message, p.String())
			}
		})
	}
}

func TestCheckLocatesProblems(t *testing.T) {
	text := prompt("# Supplier choice", "# Steps", steps, "# Output Format",
		"Answer: [the supplier]\nReasoning: [why]", "# Notes", notes, "# Notes", "- Again.")
	got := metaprompt.Check("\n" + text)
	assert.Equal(t, []metaprompt.Problem{
		{Kind: metaprompt.ProblemFirstLine, Line: 2,
			Message: "the first line is a heading; start with one sentence that states the agent's task, with no heading or preamble"},
		{Kind: metaprompt.ProblemDuplicate, Section: "# Notes", Line: 15,
			Message: `section "# Notes" appears more than once; merge them into one`},
		{Kind: metaprompt.ProblemConclusionFirst, Section: "# Output Format", Line: 9,
			Message: `in section "# Output Format" the conclusion (line 9) comes before the reasoning (line 10); put the reasoning first and the conclusion last`},
	}, got)
}
