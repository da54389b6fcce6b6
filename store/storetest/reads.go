package storetest

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
)

func testRead(t *testing.T, s store.Store) {
	ctx := t.Context()
	text := strings.Repeat("0123456789", 10) // 100 bytes
	add(t, s, alice, "mission/r1/outputs/report", text, store.Attrs{})
	add(t, s, alice, "project/empty", "", store.Attrs{})

	t.Run("pages", func(t *testing.T) {
		var got strings.Builder
		off, pages := int64(0), 0
		for {
			c, err := s.Read(ctx, alice, "mission/r1/outputs/report", off, 30)
			require.NoError(t, err)
			assert.Equal(t, off, c.Offset)
			assert.Equal(t, int64(100), c.Size)
			assert.Equal(t, int64(1), c.Revision)
			assert.Equal(t, "mission/r1/outputs/report", c.Path)
			assert.LessOrEqual(t, len(c.Content), 30)
			got.WriteString(c.Content)
			pages++
			off = c.Next
			if c.EOF {
				break
			}
			require.Less(t, pages, 10, "read does not advance")
		}
		assert.Equal(t, 4, pages)
		assert.Equal(t, text, got.String())
	})
	tests := []struct {
		name          string
		path          string
		offset, limit int64
		want          string
		eof           bool
		err           error
		msg           string
	}{
		{name: "from the middle", path: "mission/r1/outputs/report", offset: 95, limit: 3, want: "567"},
		{name: "last bytes", path: "mission/r1/outputs/report", offset: 95, limit: 50, want: "56789", eof: true},
		{name: "default limit", path: "mission/r1/outputs/report", offset: 0, limit: 0, want: text, eof: true},
		{name: "at the end", path: "mission/r1/outputs/report", offset: 100, limit: 10, want: "", eof: true},
		{name: "empty item", path: "project/empty", offset: 0, limit: 10, want: "", eof: true},
		{name: "beyond the end", path: "mission/r1/outputs/report", offset: 101, limit: 10, err: store.ErrOffset,
			msg: "offset 101 is beyond the end of the item (100 bytes)"},
		{name: "far beyond the end of an empty item", path: "project/empty", offset: 5000, limit: 10, err: store.ErrOffset,
			msg: "offset 5000"},
		{name: "negative offset", path: "mission/r1/outputs/report", offset: -1, limit: 10, err: store.ErrInvalid,
			msg: "negative offset"},
		{name: "missing item", path: "mission/r1/outputs/none", offset: 0, limit: 10, err: store.ErrNotFound,
			msg: "mission/r1/outputs/none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := s.Read(ctx, alice, tc.path, tc.offset, tc.limit)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Contains(t, err.Error(), tc.msg)
				assert.Contains(t, err.Error(), tc.path)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.Content)
			assert.Equal(t, tc.eof, c.EOF)
			assert.Equal(t, tc.offset+int64(len(tc.want)), c.Next)
		})
	}
}

func testReadUTF8(t *testing.T, s store.Store) {
	text := strings.Repeat("añ€😀", 20) // 1, 2, 3 and 4-byte characters
	add(t, s, alice, "memory/unicode", text, store.Attrs{})
	for _, limit := range []int64{1, 2, 3, 5, 7, 64} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			var got strings.Builder
			off := int64(0)
			for i := 0; ; i++ {
				require.Less(t, i, len(text)+1, "read does not advance")
				c, err := s.Read(t.Context(), alice, "memory/unicode", off, limit)
				require.NoError(t, err)
				require.True(t, utf8.ValidString(c.Content), "chunk %q at %d is split inside a character", c.Content, off)
				require.NotEmpty(t, c.Content)
				if utf8.RuneCountInString(c.Content) > 1 {
					assert.LessOrEqual(t, int64(len(c.Content)), limit, "chunk of several characters over the limit")
				}
				got.WriteString(c.Content)
				off = c.Next
				if c.EOF {
					break
				}
			}
			assert.Equal(t, text, got.String())
		})
	}
}

func testList(t *testing.T, s store.Store) {
	ctx := t.Context()
	paths := []string{
		"mission/r1/plan", "mission/r1/progress", "mission/r1/outputs/a", "mission/r1/outputs/b",
		"mission/r2/plan", "project/readme", "memory/facts", "team/roster",
	}
	for _, p := range paths {
		add(t, s, alice, p, "content of "+p, store.Attrs{})
	}
	add(t, s, bob, "mission/r1/bob-only", "x", store.Attrs{})

	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"memory/facts", "mission/r1/outputs/a", "mission/r1/outputs/b", "mission/r1/plan",
			"mission/r1/progress", "mission/r2/plan", "project/readme", "team/roster"}},
		{"mission/r1/", []string{"mission/r1/outputs/a", "mission/r1/outputs/b", "mission/r1/plan", "mission/r1/progress"}},
		{"mission/r1/outputs", []string{"mission/r1/outputs/a", "mission/r1/outputs/b"}},
		{"project", []string{"project/readme"}},
		{"team/", []string{"team/roster"}},
		{"mission/r3/", nil},
	}
	for _, tc := range tests {
		t.Run("prefix "+tc.prefix, func(t *testing.T) {
			p, err := s.List(ctx, alice, tc.prefix, store.ListOptions{})
			require.NoError(t, err)
			var got []string
			for _, m := range p.Items {
				got = append(got, m.Path)
				assert.Equal(t, int64(len("content of "+m.Path)), m.Size)
				assert.Equal(t, int64(1), m.Revision)
			}
			assert.Equal(t, tc.want, got)
			assert.Empty(t, p.Next)
		})
	}
	t.Run("paged", func(t *testing.T) {
		var got []string
		opts := store.ListOptions{Limit: 3}
		for range 10 {
			p, err := s.List(ctx, alice, "", opts)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(p.Items), 3)
			for _, m := range p.Items {
				got = append(got, m.Path)
			}
			if p.Next == "" {
				break
			}
			opts.After = p.Next
		}
		assert.Equal(t, tests[0].want, got)
	})
	t.Run("exact page boundary", func(t *testing.T) {
		p, err := s.List(ctx, alice, "mission/r1/", store.ListOptions{Limit: 4})
		require.NoError(t, err)
		assert.Len(t, p.Items, 4)
		assert.Empty(t, p.Next, "no further page when the last page is exactly full")
	})
}

func testSearch(t *testing.T, s store.Store) {
	ctx := t.Context()
	add(t, s, alice, "project/go", "Go is a language. go go GO.", store.Attrs{Labels: map[string]string{"k": "v"}}) // 4 matches of "go"
	add(t, s, alice, "memory/lang", "We write Go and Rust; GO fast.", store.Attrs{})                                // 2
	add(t, s, alice, "memory/other", "Rust only here, no match.", store.Attrs{})
	add(t, s, alice, "team/gopher", "A mascot.", store.Attrs{})                   // 1, in the path
	add(t, s, alice, "mission/r1/notes", "go team: go!", store.Attrs{})           // 2
	add(t, s, alice, "mission/r1/más", "Ünïcode ÄRGER über alles", store.Attrs{}) // unicode case folding
	add(t, s, alice, "project/count", "ran 100 times", store.Attrs{})             // wildcards would match
	add(t, s, bob, "project/go", "go go go go go go go go", store.Attrs{})        // another owner

	paths := func(hits []store.Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.Path)
		}
		return out
	}
	tests := []struct {
		name  string
		query string
		opts  store.SearchOptions
		want  []string
	}{
		// BM25: more occurrences first, in a shorter item first.
		{"ranked by BM25", "go", store.SearchOptions{},
			[]string{"project/go", "mission/r1/notes", "memory/lang", "team/gopher"}},
		{"either of two terms counts", "rust mascot", store.SearchOptions{},
			[]string{"team/gopher", "memory/other", "memory/lang"}},
		{"case-insensitive terms", "RUST", store.SearchOptions{}, []string{"memory/other", "memory/lang"}},
		{"unicode case-insensitive", "ärger", store.SearchOptions{}, []string{"mission/r1/más"}},
		{"prefix", "go", store.SearchOptions{Prefix: "mission/"}, []string{"mission/r1/notes"}},
		{"limit", "go", store.SearchOptions{Limit: 2}, []string{"project/go", "mission/r1/notes"}},
		// "what", "is" and "a" are stop words, "go" too short beside
		// "rust": they would match nearly every item.
		{"stop words and short words are left out", "what is a Go rust?", store.SearchOptions{},
			[]string{"memory/other", "memory/lang"}},
		{"a hit has 30% of the terms", "rust mascot language haskell", store.SearchOptions{}, nil},
		{"no match", "haskell", store.SearchOptions{}, nil},
		{"percent is literal", "100%", store.SearchOptions{}, nil},
		{"underscore is literal", "g_", store.SearchOptions{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.Search(ctx, alice, tc.query, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, paths(hits))
		})
	}
	t.Run("matches and snippet", func(t *testing.T) {
		hits, err := s.Search(ctx, alice, "language", store.SearchOptions{})
		require.NoError(t, err)
		require.Len(t, hits, 1)
		assert.Equal(t, 1, hits[0].Matches)
		assert.Contains(t, hits[0].Snippet, "language")
		assert.Equal(t, map[string]string{"k": "v"}, hits[0].Labels, "hits carry metadata")
	})
	t.Run("matches count every term", func(t *testing.T) {
		hits, err := s.Search(ctx, alice, "write rust fast", store.SearchOptions{Prefix: "memory/lang"})
		require.NoError(t, err)
		require.Len(t, hits, 1)
		assert.Equal(t, 3, hits[0].Matches)
		assert.Positive(t, hits[0].Score)
	})
}
