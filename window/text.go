package window

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coorflow/coorflow/llm"
)

// headTokens returns the longest prefix of s, cut at a rune boundary,
// whose estimate is at most max tokens, and whether s was cut. A cut moves
// back to the last line break or space in the prefix's final fifth, so
// words stay whole.
func headTokens(s string, max int) (string, bool) {
	if llm.EstimateTokens(s) <= max {
		return s, false
	}
	if max <= 0 {
		return "", true
	}
	runes := runeOffsets(s)
	// The largest n such that the first n runes fit.
	n := sort.Search(len(runes), func(i int) bool {
		return llm.EstimateTokens(s[:runes[i]]) > max
	}) - 1
	if n <= 0 {
		return "", true
	}
	return atBreak(s[:runes[n]]), true
}

// headBytes returns the longest prefix of s of at most max bytes, cut at a
// rune boundary and, where it can, at a break, and whether s was cut.
func headBytes(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	if max <= 0 {
		return "", true
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return atBreak(s[:end]), true
}

// runeOffsets returns the byte offset of each rune of s and len(s).
func runeOffsets(s string) []int {
	offs := make([]int, 0, len(s)+1)
	for i := range s {
		offs = append(offs, i)
	}
	return append(offs, len(s))
}

// atBreak cuts p back to its last line break, or else its last space, when
// that keeps at least four fifths of it.
func atBreak(p string) string {
	min := len(p) * 4 / 5
	if i := strings.LastIndexByte(p, '\n'); i >= min && i > 0 {
		return p[:i]
	}
	if i := strings.LastIndexByte(p, ' '); i >= min && i > 0 {
		return p[:i]
	}
	return p
}

// thousands formats n with comma separators: 12,345.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
