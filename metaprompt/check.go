package metaprompt

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The sections a system prompt is checked for, as their headings read.
const (
	SectionSteps        = "# Steps"
	SectionOutputFormat = "# Output Format"
	SectionExamples     = "# Examples" // optional
	SectionNotes        = "# Notes"
)

// requiredSections are the sections every prompt needs, in the order the
// meta-prompt asks for them.
var requiredSections = []string{SectionSteps, SectionOutputFormat, SectionNotes}

// MaxPromptChars is the longest system prompt Check accepts, in
// characters: it leaves a third of the 12,000 characters a context window
// gives the system prompt and the store's index to the index.
const MaxPromptChars = 8000

// ProblemKind classifies a Problem.
type ProblemKind string

// The kinds of problems Check finds.
const (
	ProblemEmpty           ProblemKind = "empty"            // no text at all
	ProblemFirstLine       ProblemKind = "first_line"       // the first line is not one sentence stating the task
	ProblemMissingSection  ProblemKind = "missing_section"  // a required section is absent
	ProblemEmptySection    ProblemKind = "empty_section"    // a section has a heading and no content
	ProblemDuplicate       ProblemKind = "duplicate"        // a section appears more than once
	ProblemNoReasoning     ProblemKind = "no_reasoning"     // nothing tells the agent to reason
	ProblemConclusionFirst ProblemKind = "conclusion_first" // a format or example puts the conclusion before the reasoning
	ProblemTooLong         ProblemKind = "too_long"         // longer than MaxPromptChars
)

// Problem is something wrong with a system prompt.
type Problem struct {
	Kind ProblemKind `json:"kind"`
	// Section is the heading concerned ("# Output Format"), if any.
	Section string `json:"section,omitempty"`
	// Line is the 1-based line of the prompt concerned, 0 for none.
	Line int `json:"line,omitempty"`
	// Message says what is wrong in words a model or a person can act on.
	Message string `json:"message"`
}

// String returns the message.
func (p Problem) String() string { return p.Message }

// Check lists what is wrong with a system prompt, nil when nothing is. A
// good prompt starts with one sentence stating the agent's task (no
// heading, no preamble), has non-empty "# Steps", "# Output Format" and
// "# Notes" sections once each ("# Examples" is optional), tells the agent
// to reason, puts no conclusion field before a reasoning field in its
// output format or examples, and is at most MaxPromptChars long.
//
// Headings are level-1 Markdown headings, matched without regard to case
// or a trailing colon; headings inside code fences do not count. The
// reasoning checks are heuristics: they look for words about reasoning
// (reason, analysis, 推理, razonamiento… in the main languages) and, in
// labelled fields ("**Answer:**", `"answer":`, "## Reasoning"), for a
// conclusion label above the first reasoning label.
func Check(text string) []Problem {
	if strings.TrimSpace(text) == "" {
		return []Problem{{Kind: ProblemEmpty, Message: "the prompt is empty"}}
	}
	lines := strings.Split(text, "\n")
	top := 0
	for strings.TrimSpace(lines[top]) == "" {
		top++
	}
	var problems []Problem
	if p, ok := checkFirstLine(lines[top]); !ok {
		p.Line = top + 1
		problems = append(problems, p)
	}
	secs := sections(lines)
	problems = append(problems, checkSections(secs)...)
	if !mentionsReasoning(text) {
		problems = append(problems, Problem{Kind: ProblemNoReasoning,
			Message: "the prompt never tells the agent to reason before concluding; say that it works through the task first and gives its conclusion last"})
	}
	for _, s := range secs {
		if s.name == SectionOutputFormat || s.name == SectionExamples {
			if p, ok := checkOrder(s, lines); !ok {
				problems = append(problems, p)
			}
		}
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(text)); n > MaxPromptChars {
		problems = append(problems, Problem{Kind: ProblemTooLong,
			Message: fmt.Sprintf("the prompt has %d characters, more than %d; shorten it", n, MaxPromptChars)})
	}
	return problems
}

// preambles start lines that talk about the prompt instead of being it.
var preambles = []string{
	"here is", "here's", "below is", "sure", "certainly", "of course", "okay", "ok,", "ok.",
	"system prompt", "the system prompt", "i have written", "i've written", "as requested",
}

// checkFirstLine checks that line is one sentence stating the task.
func checkFirstLine(line string) (Problem, bool) {
	line = strings.TrimSpace(line)
	bad := func(why string) (Problem, bool) {
		return Problem{Kind: ProblemFirstLine,
			Message: "the first line " + why + "; start with one sentence that states the agent's task, with no heading or preamble"}, false
	}
	lower := strings.ToLower(line)
	switch {
	case strings.HasPrefix(line, "#"):
		return bad("is a heading")
	case isFence(line):
		return bad("opens a code fence")
	case isListItem(line):
		return bad("is a list item")
	case isPreamble(lower):
		return bad("is a preamble")
	case utf8.RuneCountInString(line) > 400:
		return bad("is too long for one sentence")
	case !strings.ContainsAny(lastRune(strings.TrimRight(line, "\"'”’)*_")), ".!?。！？"):
		return bad("is not a complete sentence")
	}
	return Problem{}, true
}

// section is a level-1 section of a prompt: lines [start, end) hold its
// body, heading excluded.
type section struct {
	name       string // the canonical heading for known sections, the text otherwise
	line       int    // 0-based line of the heading
	start, end int
	body       bool // has a non-blank line
}

// sections splits lines into their level-1 sections, ignoring headings in
// code fences.
func sections(lines []string) []section {
	var out []section
	inFence := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if title, ok := heading1(t); ok && !inFence {
			if n := len(out); n > 0 {
				out[n-1].end = i
			}
			out = append(out, section{name: canonical(title), line: i, start: i + 1, end: len(lines)})
			continue
		}
		if n := len(out); n > 0 && t != "" {
			out[n-1].body = true
		}
		if isFence(t) {
			inFence = !inFence
		}
	}
	return out
}

// heading1 returns the title of a level-1 Markdown heading.
func heading1(t string) (string, bool) {
	if !strings.HasPrefix(t, "# ") {
		return "", false
	}
	title := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t[2:]), "#"))
	return strings.TrimSpace(strings.TrimSuffix(title, ":")), title != ""
}

// canonical returns the heading of a known section for title, or title.
func canonical(title string) string {
	for _, s := range []string{SectionSteps, SectionOutputFormat, SectionExamples, SectionNotes} {
		if strings.EqualFold(title, s[2:]) {
			return s
		}
	}
	return title
}

// checkSections reports missing, duplicate and empty known sections.
func checkSections(secs []section) []Problem {
	var problems []Problem
	seen := map[string]int{}
	for _, s := range secs {
		known := s.name == SectionSteps || s.name == SectionOutputFormat ||
			s.name == SectionExamples || s.name == SectionNotes
		if !known {
			continue
		}
		seen[s.name]++
		if seen[s.name] == 2 {
			problems = append(problems, Problem{Kind: ProblemDuplicate, Section: s.name, Line: s.line + 1,
				Message: fmt.Sprintf("section %q appears more than once; merge them into one", s.name)})
		}
		if !s.body {
			problems = append(problems, Problem{Kind: ProblemEmptySection, Section: s.name, Line: s.line + 1,
				Message: fmt.Sprintf("section %q is empty; write its content under the heading", s.name)})
		}
	}
	for _, name := range requiredSections {
		if seen[name] == 0 {
			problems = append(problems, Problem{Kind: ProblemMissingSection, Section: name,
				Message: fmt.Sprintf("section %q is missing; add it with the heading written exactly %q", name, name)})
		}
	}
	return problems
}

// reasoningWords are stems that show a prompt talks about reasoning, in
// the main languages agents are asked to work in.
var reasoningWords = []string{
	"reason", "think", "analy", "step by step", "deliberat", "work through", // en
	"推理", "思考", "分析", "理由", "依据", "论证", // zh
	"考え", "推論", "根拠", // ja
	"추론", "분석", "생각", "근거", // ko
	"razon", "anális", "analis", "analiz", "raciocín", "raciocin", // es, pt, it
	"raison",                         // fr
	"überleg", "begründ", "nachdenk", // de
	"рассужд", "анализ", "обоснов", // ru
}

// mentionsReasoning reports whether text speaks of reasoning at all.
func mentionsReasoning(text string) bool {
	return hasAnySubstring(strings.ToLower(text), reasoningWords)
}

// Label words: a labelled field is about reasoning or is a conclusion.
var (
	reasoningLabels  = []string{"reason", "thought", "think", "analy", "rationale", "justif", "推理", "分析", "思考", "理由", "依据"}
	conclusionLabels = []string{"answer", "conclusion", "verdict", "final", "recommendation", "decision", "结论", "答案"}
	exampleLabels    = []string{"example", "示例", "例"}
)

// checkOrder reports a conclusion label above the first reasoning label in
// a section, or in each example of it: a heading that names an example
// starts the count again.
func checkOrder(s section, lines []string) (Problem, bool) {
	conclusion, reasoned := -1, false
	for i := s.start; i < s.end; i++ {
		label, ok := labelOf(lines[i])
		if !ok {
			continue
		}
		lower := strings.ToLower(label)
		switch {
		case strings.HasPrefix(strings.TrimSpace(lines[i]), "#") && hasAnySubstring(lower, exampleLabels):
			conclusion, reasoned = -1, false
		case reasoned:
		case hasAnySubstring(lower, reasoningLabels):
			if conclusion >= 0 {
				return Problem{Kind: ProblemConclusionFirst, Section: s.name, Line: conclusion + 1,
					Message: fmt.Sprintf("in section %q the conclusion (line %d) comes before the reasoning (line %d); put the reasoning first and the conclusion last",
						s.name, conclusion+1, i+1)}, false
			}
			reasoned = true
		case conclusion < 0 && hasAnySubstring(lower, conclusionLabels):
			conclusion = i
		}
	}
	return Problem{}, true
}

// labelOf returns the label of a line that names a field: a heading
// ("## Reasoning"), a bold or plain label ("**Answer:**", "- Answer:"), a
// JSON key (`"answer":`) or an XML-like tag ("<reasoning>").
func labelOf(line string) (string, bool) {
	t := strings.TrimSpace(line)
	heading := strings.HasPrefix(t, "#")
	t = strings.TrimLeft(t, "#>-*+ \t")
	if i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && i < len(t) && (t[i] == '.' || t[i] == ')') {
		t = strings.TrimSpace(t[i+1:])
	}
	if heading {
		t = strings.TrimSpace(t)
		return t, isShortLabel(t)
	}
	t = strings.TrimLeft(t, "*_\"`<{ \t")
	end := strings.IndexAny(t, ":*_\"`>：")
	if end <= 0 {
		return "", false
	}
	label := strings.TrimSpace(t[:end])
	return label, isShortLabel(label)
}

// isShortLabel reports whether s is short enough to name a field rather
// than be a sentence: at most 5 words and 40 characters.
func isShortLabel(s string) bool {
	return s != "" && utf8.RuneCountInString(s) <= 40 && len(strings.Fields(s)) <= 5
}

func isFence(t string) bool { return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") }

func isListItem(t string) bool {
	if strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "+ ") {
		return true
	}
	i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	return i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && t[i+1] == ' '
}

func lastRune(s string) string {
	r, _ := utf8.DecodeLastRuneInString(s)
	return string(r)
}

// isPreamble reports whether a lower-case line starts with one of the
// preambles, as whole words.
func isPreamble(lower string) bool {
	for _, p := range preambles {
		rest, ok := strings.CutPrefix(lower, p)
		if !ok {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(rest); rest == "" || !unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

func hasAnySubstring(s string, subs []string) bool {
	for _, p := range subs {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
