package llm

import (
	"regexp"
	"strings"
)

// thinkBlock matches a reasoning block as DeepSeek-R1, QwQ and other
// reasoning models emit it inline.
var thinkBlock = regexp.MustCompile(`(?s)<think>.*?</think>`)

// StripThink removes the reasoning blocks (<think>…</think>) some models
// put in their answer, and trims the rest. A "</think>" without its
// opening tag drops everything before it (some servers strip the opening
// tag); an unclosed "<think>" drops everything after it.
func StripThink(s string) string {
	s = thinkBlock.ReplaceAllString(s, "")
	if i := strings.Index(s, "</think>"); i >= 0 {
		s = s[i+len("</think>"):]
	}
	if i := strings.Index(s, "<think>"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
