package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMergeJSON(t *testing.T) {
	tests := []struct {
		name               string
		base, ours, theirs string
		want               string // exact output, key order included
		clashes            []string
		err                string
	}{
		{name: "theirs adds a field", base: `{"a":1}`, ours: `{"a":2}`, theirs: `{"a":1,"b":3}`, want: `{"a":2,"b":3}`},
		{name: "ours order kept, new fields last", base: `{"a":1,"b":2}`, ours: `{"b":2,"a":1,"c":0}`,
			theirs: `{"z":9,"a":1,"b":5}`, want: `{"b":5,"a":1,"c":0,"z":9}`},
		{name: "theirs removes a field", base: `{"a":1,"b":2}`, ours: `{"a":1,"b":2,"c":3}`, theirs: `{"a":1}`,
			want: `{"a":1,"c":3}`},
		{name: "both remove a field", base: `{"a":1,"b":2}`, ours: `{"a":1}`, theirs: `{"a":1}`, want: `{"a":1}`},
		{name: "nested values compared as JSON", base: `{"o":{"x":1,"y":2}}`, ours: `{"o":{"y":2,"x":1},"n":1}`,
			theirs: `{"o":{"x":1, "y":2},"m":2}`, want: `{"o":{"y":2,"x":1},"n":1,"m":2}`},
		{name: "nested change is a whole-field change", base: `{"o":{"x":1}}`, ours: `{"o":{"x":2}}`,
			theirs: `{"o":{"x":1,"y":1}}`, clashes: []string{"o"}},
		{name: "numbers keep their text", base: `{"n":1}`, ours: `{"n":1,"m":2}`, theirs: `{"n":12345678901234567890}`,
			want: `{"n":12345678901234567890,"m":2}`},
		{name: "clash and add", base: `{"a":1}`, ours: `{"a":2}`, theirs: `{"a":3,"b":1}`, clashes: []string{"a"}},
		{name: "both add same field differently", base: `{}`, ours: `{"a":1}`, theirs: `{"a":2}`, clashes: []string{"a"}},
		{name: "base not an object", base: `[1]`, ours: `{}`, theirs: `{}`, err: "the base revision is not a JSON object"},
		{name: "ours not an object", base: `{}`, ours: `"s"`, theirs: `{}`, err: "the current revision is not a JSON object"},
		{name: "theirs invalid", base: `{}`, ours: `{}`, theirs: `{"a":`, err: "the edited content is not valid JSON"},
		{name: "trailing data", base: `{}`, ours: `{}`, theirs: `{} {}`, err: "the edited content is not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, clashes, err := mergeJSON(tc.base, tc.ours, tc.theirs)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.clashes, clashes)
			if tc.clashes == nil {
				assert.Equal(t, tc.want, got)
				assert.True(t, json.Valid([]byte(got)))
			}
		})
	}
}

func TestRuneCut(t *testing.T) {
	tests := []struct {
		data  string
		limit int
		want  int
	}{
		{"abc", 5, 3},
		{"abcdef", 3, 3},
		{"a€b", 2, 1},        // € is 3 bytes: cut before it
		{"€b", 1, 3},         // the first character is longer than the limit: take it whole
		{"😀😀", 5, 4},         // 4-byte characters
		{"\x82\x82ab", 1, 2}, // starting inside a character (a caller's own offset): its rest is one unit
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, runeCut(tc.data, tc.limit), "runeCut(%q, %d)", tc.data, tc.limit)
	}
}

func TestCountOverlapping(t *testing.T) {
	assert.Equal(t, 0, countOverlapping("abc", "x"))
	assert.Equal(t, 2, countOverlapping("aaa", "aa"))
	assert.Equal(t, 3, countOverlapping("ababab", "ab"))
}

func TestQueryTerms(t *testing.T) {
	assert.Equal(t, []string{"rust", "mascot"}, queryTerms("  Go\tRUST go mascot?\n"), "short words go when there are longer ones")
	assert.Equal(t, []string{"go", "c"}, queryTerms("Go c go"), "a query of short words keeps them")
	assert.Equal(t, []string{"checkpoint", "rate", "sqlite"}, queryTerms("What is the checkpoint rate of it in (SQLite)?"), "stop words and punctuation go")
	assert.NotContains(t, queryTerms("What is the checkpoint rate of it in SQLite?"), "the", "stop words go")
	assert.Empty(t, queryTerms(" \t "))
}

func TestRankDropsItemsWithTooFewTermsAndPrefersRecentOnATie(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	item := func(path, content string, age time.Duration) Item {
		return Item{Meta: Meta{Path: path, Updated: now.Add(-age)}, Content: content}
	}
	terms := []string{"sqlite", "checkpoint", "wal", "rate"}
	hits := rank([]Item{
		item("m/old", "sqlite checkpoint rate in wal mode", 365*24*time.Hour),
		item("m/new", "sqlite checkpoint rate in wal mode", time.Hour),
		item("m/one", "the rate of exchange", 0),
	}, terms, now)
	var paths []string
	for _, h := range hits {
		paths = append(paths, h.Path)
	}
	assert.Equal(t, []string{"m/new", "m/old"}, paths, "2 of 4 terms at least; the newer first")
	assert.Equal(t, 2, minMatch(4))
	assert.Equal(t, 1, minMatch(3))
}

func TestSnippet(t *testing.T) {
	long := "start " + string(make([]byte, 0)) + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx needle\nline two " +
		"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy end"
	s := snippet(long, long, []string{"needle"})
	assert.Contains(t, s, "needle line two", "newlines become spaces")
	assert.True(t, len(s) < len(long))
	assert.Equal(t, "…", s[:len("…")], "cut at the start is marked")
	assert.Empty(t, snippet("abc", "abc", []string{"zzz"}))
}
