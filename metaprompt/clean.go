package metaprompt

import (
	"strings"

	"github.com/coorflow/coorflow/llm"
)

// clean returns the system prompt in a model's reply: <think>…</think>
// blocks removed (a "</think>" without its opening tag drops everything
// before it, an unclosed "<think>" everything after it), then a code fence
// that opens the reply removed with its closing fence, and surrounding
// blank space trimmed. Fences inside the prompt are kept.
func clean(reply string) string {
	s := llm.StripThink(reply)
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
