package store

import (
	"strings"
)

// snippetBefore and snippetAfter bound the excerpt around a match, in bytes.
const (
	snippetBefore = 40
	snippetAfter  = 100
)

// snippet returns a one-line excerpt of content around the first
// occurrence of any term; lower is content in lower case.
func snippet(content, lower string, terms []string) string {
	at := -1
	for _, t := range terms {
		if i := strings.Index(lower, t); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return ""
	}
	src := content
	if len(lower) != len(content) { // lower-casing changed byte lengths
		src = lower
	}
	start, end := max(at-snippetBefore, 0), min(at+snippetAfter, len(src))
	for start > 0 && !isRuneStart(src[start]) {
		start--
	}
	for end < len(src) && !isRuneStart(src[end]) {
		end++
	}
	out := strings.Join(strings.Fields(src[start:end]), " ")
	if start > 0 {
		out = "…" + out
	}
	if end < len(src) {
		out += "…"
	}
	return out
}
