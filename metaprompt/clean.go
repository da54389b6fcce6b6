package metaprompt

import (
	"regexp"
	"strings"
)

// thinkBlock matches a reasoning block that reasoning models (DeepSeek-R1,
// QwQ) write inline, before their answer.
var thinkBlock = regexp.MustCompile(`(?s)<think>.*?</think>`)

// clean returns the system prompt in a model's reply: <think>…</think>
// blocks removed (a "</think>" without its opening tag drops everything
// before it, an unclosed "<think>" everything after it), then a code fence
// that opens the reply removed with its closing fence, and surrounding
// blank space trimmed. Fences inside the prompt are kept.
func clean(reply string) string {
	s := thinkBlock.ReplaceAllString(reply, "")
	if i := strings.Index(s, "</think>"); i >= 0 {
		s = s[i+len("</think>"):]
	}
	if i := strings.Index(s, "<think>"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
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
