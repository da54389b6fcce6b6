package metaprompt_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
)

func newCache() store.Store { return memory.New(store.Config{}) }

// cached returns the cache entries of alice by path.
func cached(t *testing.T, s store.Store) map[string]store.Item {
	t.Helper()
	page, err := s.List(t.Context(), "alice", metaprompt.CachePrefix, store.ListOptions{})
	require.NoError(t, err)
	out := map[string]store.Item{}
	for _, m := range page.Items {
		it, err := s.Get(t.Context(), "alice", m.Path)
		require.NoError(t, err)
		out[m.Path] = it
	}
	return out
}

func TestExpandCachesPrompts(t *testing.T) {
	b := researcher()
	model := replies(b, goodPrompt)
	cache := newCache()
	e := expander(t, model, "gpt-4o", cache)

	first, err := e.Expand(t.Context(), b)
	require.NoError(t, err)
	assert.False(t, first.Cached)
	require.Len(t, model.Calls(), 1)

	entries := cached(t, cache)
	require.Len(t, entries, 1)
	it, ok := entries[metaprompt.CachePrefix+first.Key]
	require.True(t, ok, "stored under team/metaprompts/<key>")
	assert.Equal(t, store.ContentJSON, it.ContentType)
	assert.Equal(t, board.TrustModel, board.PromptOf(it.Meta).Trust)
	assert.Equal(t, board.TriggerSearch, board.PromptOf(it.Meta).Trigger)
	var ent metaprompt.Entry
	require.NoError(t, json.Unmarshal([]byte(it.Content), &ent))
	assert.Equal(t, "gpt-4o", ent.Model)
	assert.Equal(t, goodPrompt, ent.Prompt)
	assert.Equal(t, fixedTime, ent.Created)
	assert.Equal(t, "market_researcher", ent.Brief.Name)
	assert.Equal(t, b.Task, ent.Brief.Task)

	second, err := e.Expand(t.Context(), b)
	require.NoError(t, err)
	assert.Len(t, model.Calls(), 1, "a cache hit makes no model call")
	assert.Equal(t, metaprompt.Prompt{Text: goodPrompt, Model: "gpt-4o", Key: first.Key, Created: fixedTime,
		Cached: true, Tokens: first.Tokens}, second)

	// Spacing and tool order do not change the brief.
	same := researcher()
	same.Task = "  " + same.Task + "\n"
	same.Tools[0], same.Tools[1] = same.Tools[1], same.Tools[0]
	third, err := e.Expand(t.Context(), same)
	require.NoError(t, err)
	assert.True(t, third.Cached)
	assert.Len(t, model.Calls(), 1)
}

func TestCacheMissesForAnotherModelOrBrief(t *testing.T) {
	b := researcher()
	other := researcher()
	other.Locale = "de-DE"
	model := replies(b, goodPrompt, goodPrompt)
	otherModel := replies(other, goodPrompt)
	cache := newCache()

	_, err := expander(t, model, "gpt-4o", cache).Expand(t.Context(), b)
	require.NoError(t, err)
	p, err := expander(t, model, "deepseek-r1", cache).Expand(t.Context(), b)
	require.NoError(t, err)
	assert.False(t, p.Cached, "the same brief with another model is another entry")
	assert.Len(t, model.Calls(), 2)
	p, err = expander(t, otherModel, "gpt-4o", cache).Expand(t.Context(), other)
	require.NoError(t, err)
	assert.False(t, p.Cached)
	assert.Len(t, otherModel.Calls(), 1)

	assert.Len(t, cached(t, cache), 3)
}

func TestKey(t *testing.T) {
	b := researcher()
	k := metaprompt.Key(b, "gpt-4o")
	assert.Len(t, k, 64)
	assert.Regexp(t, "^[0-9a-f]{64}$", k)
	assert.NotEqual(t, k, metaprompt.Key(b, "gpt-4o-mini"))

	pinned := b
	pinned.Pinned = "You do it."
	assert.Equal(t, k, metaprompt.Key(pinned, "gpt-4o"), "Pinned is not part of the key")

	for name, change := range map[string]func(*metaprompt.Brief){
		"name":         func(b *metaprompt.Brief) { b.Name = "analyst" },
		"role":         func(b *metaprompt.Brief) { b.Role = "analyst" },
		"capabilities": func(b *metaprompt.Brief) { b.Capabilities = "reads" },
		"contribution": func(b *metaprompt.Brief) { b.Contribution = "a table" },
		"locale":       func(b *metaprompt.Brief) { b.Locale = "fr-FR" },
		"task":         func(b *metaprompt.Brief) { b.Task = "Count bikes." },
		"tools":        func(b *metaprompt.Brief) { b.Tools = b.Tools[:1] },
		"tool text":    func(b *metaprompt.Brief) { b.Tools[0].Description = "Search." },
	} {
		c := researcher()
		change(&c)
		assert.NotEqual(t, k, metaprompt.Key(c, "gpt-4o"), name)
	}
}

func TestExpandReplacesAStaleCacheEntry(t *testing.T) {
	tests := []struct {
		name, content string
	}{
		{"not json", "oops"},
		{"fails the check", `{"brief":{"name":"market_researcher"},"model":"gpt-4o","prompt":"# Bad"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := researcher()
			model := replies(b, goodPrompt)
			cache := newCache()
			path := metaprompt.CachePrefix + metaprompt.Key(b, "gpt-4o")
			_, err := cache.Add(t.Context(), "alice", path, tt.content, store.Attrs{})
			require.NoError(t, err)

			p, err := expander(t, model, "gpt-4o", cache).Expand(t.Context(), b)
			require.NoError(t, err)
			assert.False(t, p.Cached)
			assert.Len(t, model.Calls(), 1)
			it, err := cache.Get(t.Context(), "alice", path)
			require.NoError(t, err)
			assert.Equal(t, int64(2), it.Revision)
			assert.Contains(t, it.Content, `"prompt":`)
		})
	}
}

func TestExpandReportsCacheFailures(t *testing.T) {
	b := researcher()
	model := replies(b, goodPrompt)
	e := expander(t, model, "gpt-4o", store.ReadOnly(newCache()))
	_, err := e.Expand(t.Context(), b)
	assert.ErrorIs(t, err, metaprompt.ErrCache)
	assert.ErrorIs(t, err, store.ErrReadOnly)
	assert.ErrorContains(t, err, "metaprompt: cache: write team/metaprompts/")
}
