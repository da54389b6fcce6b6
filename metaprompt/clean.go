package metaprompt

import (
	"regexp"
	"strings"

	"github.com/coorflow/coorflow/llm"
)

// clean returns the system prompt in a model's reply: <think>…</think>
// blocks removed (a "</think>" without its opening tag drops everything
// before it, an unclosed "<think>" everything after it), then a preamble
// line ("Here is the system prompt:", see stripPreamble), then a code fence
// that opens the reply removed with its closing fence, and surrounding
// blank space trimmed. Fences inside the prompt are kept.
func clean(reply string) string {
	s := stripPreamble(llm.StripThink(reply))
	if !isFence(s) {
		return s
	}
	marker := s[:3]
	// Drop the opening fence line, language tag included.
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	} else {
		return ""
	}
	if body, ok := strings.CutSuffix(strings.TrimRight(s, " \t\r\n"), marker); ok {
		s = body
	}
	return strings.TrimSpace(s)
}

// preamble matches a first line that introduces the prompt instead of
// being part of it: "Here is the system prompt you asked for:", "Sure!
// Here's the prompt:", "Below is the system prompt." — a line that opens
// with an acknowledgement or "here is"/"below is", mentions what follows,
// and ends with a colon or a period.
var preamble = regexp.MustCompile(`(?i)^\s*((sure|certainly|of course|okay|ok|absolutely|great)[!,.]?\s*)?` +
	`(here(['’]s| is| are)|below is|the following is)\b[^\n]{0,120}(prompt|version|draft|instructions?)[^\n]{0,40}[:.]\s*$`)

// stripPreamble drops the first non-blank line of s when it is a preamble
// and something follows it; the rest is the prompt.
func stripPreamble(s string) string {
	t := strings.TrimLeft(s, " \t\r\n")
	first, rest, ok := strings.Cut(t, "\n")
	if !ok || !preamble.MatchString(first) || strings.TrimSpace(rest) == "" {
		return s
	}
	return strings.TrimSpace(rest)
}
