package workflows

import (
	"maps"
	"slices"
	"strings"
)

// suggest returns " (did you mean "x"?)" when one of options is close to
// got, else, when label is set, " (label: a, b, c)", else "".
func suggest(got string, options []string, label string) string {
	best, bestD := "", 3
	for _, o := range options {
		if d := distance(strings.ToLower(got), strings.ToLower(o)); d < bestD || (d == bestD && best == "") {
			if d <= max(1, len(o)/3) {
				best, bestD = o, d
			}
		}
	}
	switch {
	case best != "":
		return ` (did you mean "` + best + `"?)`
	case label != "" && len(options) > 0:
		return " (" + label + ": " + strings.Join(options, ", ") + ")"
	}
	return ""
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// DidYouMean returns ` (did you mean "x"?)` when an option is within two
// edits of got (the nearest, the first of equals), else "": the
// suggestion the CLI and dataset files give for a misspelt name.
func DidYouMean(got string, options []string) string {
	best, bestD := "", 3
	for _, o := range options {
		if d := distance(got, o); d < bestD {
			best, bestD = o, d
		}
	}
	if best == "" {
		return ""
	}
	return ` (did you mean "` + best + `"?)`
}
