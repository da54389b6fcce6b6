package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
)

func content(t *testing.T, s store.Store, owner, path string) store.Item {
	t.Helper()
	it, err := s.Get(t.Context(), owner, path)
	require.NoError(t, err, "get %s", path)
	return it
}

func testEditReplace(t *testing.T, s store.Store) {
	m1 := add(t, s, alice, "project/a", "one", store.Attrs{Labels: map[string]string{"priority": "high"}})
	m2, err := s.Edit(t.Context(), alice, "project/a", store.Replace(1, "two, longer"))
	require.NoError(t, err)
	assert.Equal(t, int64(2), m2.Revision)
	assert.Equal(t, int64(len("two, longer")), m2.Size)
	assert.Equal(t, m1.Created, m2.Created, "created time is kept")
	assert.False(t, m2.Updated.Before(m1.Updated), "updated time moves forward")
	assert.Equal(t, map[string]string{"priority": "high"}, m2.Labels, "attributes are kept")

	m3, err := s.Edit(t.Context(), alice, "project/a", store.Replace(2, ""))
	require.NoError(t, err)
	assert.Equal(t, int64(3), m3.Revision)
	got := content(t, s, alice, "project/a")
	assert.Empty(t, got.Content)
	assert.Equal(t, m3, got.Meta)

	_, err = s.Edit(t.Context(), alice, "project/missing", store.Replace(1, "x"))
	require.ErrorIs(t, err, store.ErrNotFound)
	assert.Contains(t, err.Error(), "project/missing")
}

func testEditSearchReplace(t *testing.T, s store.Store) {
	tests := []struct {
		name     string
		content  string
		old, new string
		want     string
		err      error
		msg      string
	}{
		{name: "unique", content: "alpha beta gamma", old: "beta", new: "BETA", want: "alpha BETA gamma"},
		{name: "delete text", content: "keep drop keep2", old: " drop", new: "", want: "keep keep2"},
		{name: "multi-line", content: "a\nb\nc\n", old: "b\nc", new: "x", want: "a\nx\n"},
		{name: "no match", content: "alpha beta", old: "delta", err: store.ErrNoMatch, msg: `"delta" does not occur`},
		{name: "case matters", content: "alpha beta", old: "BETA", err: store.ErrNoMatch, msg: "does not occur"},
		{name: "two matches", content: "x = 1; x = 1", old: "x = 1", err: store.ErrAmbiguous, msg: "occurs 2 times"},
		{name: "overlapping matches", content: "aaa", old: "aa", err: store.ErrAmbiguous, msg: "occurs 2 times"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fmt.Sprintf("project/sr%d", i)
			add(t, s, alice, path, tc.content, store.Attrs{})
			m, err := s.Edit(t.Context(), alice, path, store.SearchReplace(1, tc.old, tc.new))
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Contains(t, err.Error(), tc.msg)
				assert.Contains(t, err.Error(), path)
				got := content(t, s, alice, path)
				assert.Equal(t, tc.content, got.Content, "a failed edit changes nothing")
				assert.Equal(t, int64(1), got.Revision)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, int64(2), m.Revision)
			assert.Equal(t, tc.want, content(t, s, alice, path).Content)
		})
	}
}

func testEditAttrs(t *testing.T, s store.Store) {
	add(t, s, alice, "memory/fact", "the sky is blue", store.Attrs{Labels: map[string]string{"priority": "low", "source": "web"}})
	m, err := s.Edit(t.Context(), alice, "memory/fact", store.SetAttrs(1, store.Attrs{
		Labels: map[string]string{"trigger": "always", "source": ""}, Visibility: store.TaskScoped("t1"),
	}))
	require.NoError(t, err)
	assert.Equal(t, int64(2), m.Revision)
	assert.Equal(t, map[string]string{"priority": "low", "trigger": "always"}, m.Labels,
		"labels are set, an empty value removes one, the others are kept")
	assert.Equal(t, store.TaskScoped("t1"), m.Visibility)
	assert.Equal(t, store.ContentText, m.ContentType, "zero fields keep their value")
	got := content(t, s, alice, "memory/fact")
	assert.Equal(t, "the sky is blue", got.Content)
	assert.Equal(t, m, got.Meta)

	m, err = s.Edit(t.Context(), alice, "memory/fact", store.SetAttrs(2, store.Attrs{Labels: map[string]string{"priority": "", "trigger": ""}}))
	require.NoError(t, err)
	assert.Nil(t, m.Labels, "no label left")
	assert.Nil(t, content(t, s, alice, "memory/fact").Labels)

	m, err = s.Edit(t.Context(), alice, "memory/fact",
		store.Replace(3, `{"sky":"blue"}`).WithAttrs(store.Attrs{ContentType: store.ContentJSON}))
	require.NoError(t, err)
	assert.Equal(t, store.ContentJSON, m.ContentType)

	_, err = s.Edit(t.Context(), alice, "memory/fact", store.SetAttrs(4, store.Attrs{ContentType: store.ContentText}))
	require.NoError(t, err)
	_, err = s.Edit(t.Context(), alice, "memory/fact",
		store.Replace(5, "not json").WithAttrs(store.Attrs{ContentType: store.ContentJSON}))
	require.ErrorIs(t, err, store.ErrInvalid, "content and content type are checked together")
}

func testStaleRevision(t *testing.T, s store.Store) {
	ctx := t.Context()
	add(t, s, alice, "project/doc", "v1", store.Attrs{})
	_, err := s.Edit(ctx, alice, "project/doc", store.Replace(1, "v2"))
	require.NoError(t, err)

	tests := []struct {
		name string
		call func() error
		op   string
		rev  int64
	}{
		{"replace", func() error { _, err := s.Edit(ctx, alice, "project/doc", store.Replace(1, "mine")); return err }, "edit", 1},
		{"search-replace", func() error {
			_, err := s.Edit(ctx, alice, "project/doc", store.SearchReplace(1, "v", "w"))
			return err
		}, "edit", 1},
		{"attributes", func() error {
			_, err := s.Edit(ctx, alice, "project/doc", store.SetAttrs(1, store.Attrs{Labels: map[string]string{"priority": "low"}}))
			return err
		}, "edit", 1},
		{"future revision", func() error { _, err := s.Edit(ctx, alice, "project/doc", store.Replace(9, "x")); return err }, "edit", 9},
		{"delete", func() error { return s.Delete(ctx, alice, "project/doc", 1) }, "delete", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, store.ErrConflict)
			var ce *store.ConflictError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.op, ce.Op)
			assert.Equal(t, "project/doc", ce.Path)
			assert.Equal(t, alice, ce.Owner)
			assert.Equal(t, tc.rev, ce.Revision)
			assert.Equal(t, int64(2), ce.Current)
			assert.Equal(t, "v2", ce.Content)
			assert.Contains(t, err.Error(), fmt.Sprintf("based on revision %d, current is 2", tc.rev))
			got := content(t, s, alice, "project/doc")
			assert.Equal(t, "v2", got.Content, "never a silent overwrite")
			assert.Equal(t, int64(2), got.Revision)
		})
	}
}

func jsonFields(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m), "content %s", s)
	return m
}

func testJSONMerge(t *testing.T, s store.Store) {
	const base = `{"title":"plan","steps":["a"],"owner":"ann","done":false}`
	tests := []struct {
		name   string
		ours   string     // the concurrent change that made revision 2
		theirs store.Edit // the edit based on revision 1
		want   map[string]any
		clash  []string
	}{
		{
			name:   "different fields merge",
			ours:   `{"title":"plan v2","steps":["a"],"owner":"ann","done":false}`,
			theirs: store.Replace(1, `{"title":"plan","steps":["a","b"],"owner":"ann","done":false}`),
			want:   map[string]any{"title": "plan v2", "steps": []any{"a", "b"}, "owner": "ann", "done": false},
		},
		{
			name:   "added and removed fields merge",
			ours:   `{"title":"plan","steps":["a"],"done":false,"note":"n"}`,
			theirs: store.Replace(1, `{"title":"plan","steps":["a"],"owner":"ann","done":true,"extra":1}`),
			want:   map[string]any{"title": "plan", "steps": []any{"a"}, "done": true, "note": "n", "extra": float64(1)},
		},
		{
			name:   "same change on both sides",
			ours:   `{"title":"same","steps":["a"],"owner":"ann","done":false}`,
			theirs: store.Replace(1, `{"title":"same","steps":["a"],"owner":"ann","done":false}`),
			want:   map[string]any{"title": "same", "steps": []any{"a"}, "owner": "ann", "done": false},
		},
		{
			name:   "formatting is not a change",
			ours:   `{"title":"plan","steps":["a"],"owner":"bob","done":false}`,
			theirs: store.Replace(1, "{\n  \"done\": true,\n  \"owner\": \"ann\",\n  \"steps\": [ \"a\" ],\n  \"title\": \"plan\"\n}"),
			want:   map[string]any{"title": "plan", "steps": []any{"a"}, "owner": "bob", "done": true},
		},
		{
			name:   "search-replace applied to the base",
			ours:   `{"title":"plan","steps":["a"],"owner":"ann","done":false,"x":2}`,
			theirs: store.SearchReplace(1, `"done":false`, `"done":true`),
			want:   map[string]any{"title": "plan", "steps": []any{"a"}, "owner": "ann", "done": true, "x": float64(2)},
		},
		{
			name:   "same field changed differently",
			ours:   `{"title":"ours","steps":["a"],"owner":"ann","done":false}`,
			theirs: store.Replace(1, `{"title":"theirs","steps":["a"],"owner":"ann","done":false}`),
			clash:  []string{"title"},
		},
		{
			name:   "several clashes are all named",
			ours:   `{"title":"x","steps":[],"owner":"ann","done":true}`,
			theirs: store.Replace(1, `{"title":"y","steps":["b"],"owner":"ann","done":null}`),
			clash:  []string{"done", "steps", "title"},
		},
		{
			name:   "removed on one side, changed on the other",
			ours:   `{"title":"plan","steps":["a"],"done":false}`,
			theirs: store.Replace(1, `{"title":"plan","steps":["a"],"owner":"zed","done":false}`),
			clash:  []string{"owner"},
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fmt.Sprintf("mission/r1/plan%d", i)
			add(t, s, alice, path, base, jsonAttrs())
			_, err := s.Edit(t.Context(), alice, path, store.Replace(1, tc.ours))
			require.NoError(t, err)

			m, err := s.Edit(t.Context(), alice, path, tc.theirs)
			if tc.clash != nil {
				require.ErrorIs(t, err, store.ErrConflict)
				var ce *store.ConflictError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tc.clash, ce.Fields)
				assert.Equal(t, int64(2), ce.Current)
				assert.JSONEq(t, tc.ours, ce.Content)
				assert.JSONEq(t, tc.ours, content(t, s, alice, path).Content, "unchanged after a clash")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, int64(3), m.Revision)
			assert.Equal(t, tc.want, jsonFields(t, content(t, s, alice, path).Content))
		})
	}

	t.Run("text items never merge", func(t *testing.T) {
		add(t, s, alice, "project/text", "a\nb\n", store.Attrs{})
		_, err := s.Edit(t.Context(), alice, "project/text", store.Replace(1, "a\nb\nc\n"))
		require.NoError(t, err)
		_, err = s.Edit(t.Context(), alice, "project/text", store.SearchReplace(1, "a", "A"))
		var ce *store.ConflictError
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, ce.Reason, "only JSON objects are merged")
	})
	t.Run("json arrays never merge", func(t *testing.T) {
		add(t, s, alice, "project/list", `[1]`, jsonAttrs())
		_, err := s.Edit(t.Context(), alice, "project/list", store.Replace(1, `[1,2]`))
		require.NoError(t, err)
		_, err = s.Edit(t.Context(), alice, "project/list", store.Replace(1, `[1,3]`))
		var ce *store.ConflictError
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, ce.Reason, "not a JSON object")
	})
	t.Run("stale attribute edits never merge", func(t *testing.T) {
		add(t, s, alice, "project/obj", `{"a":1}`, jsonAttrs())
		_, err := s.Edit(t.Context(), alice, "project/obj", store.Replace(1, `{"a":1,"b":2}`))
		require.NoError(t, err)
		_, err = s.Edit(t.Context(), alice, "project/obj", store.SetAttrs(1, store.Attrs{Labels: map[string]string{"priority": "high"}}))
		assert.ErrorIs(t, err, store.ErrConflict)
	})
	t.Run("a chain of merges", func(t *testing.T) {
		add(t, s, alice, "project/chain", `{}`, jsonAttrs())
		for i := range 5 {
			// Every edit is based on revision 1 and adds its own field.
			_, err := s.Edit(t.Context(), alice, "project/chain", store.Replace(1, fmt.Sprintf(`{"f%d":%d}`, i, i)))
			require.NoError(t, err, "edit %d", i)
		}
		got := content(t, s, alice, "project/chain")
		assert.Equal(t, int64(6), got.Revision)
		assert.Len(t, jsonFields(t, got.Content), 5)
	})
}

func testJSONMergeBaseGone(t *testing.T, s store.Store) {
	add(t, s, alice, "project/obj", `{"n":0}`, jsonAttrs())
	rev := int64(1)
	for i := range store.DefaultKeepRevisions + 2 {
		m, err := s.Edit(t.Context(), alice, "project/obj", store.Replace(rev, fmt.Sprintf(`{"n":%d}`, i+1)))
		require.NoError(t, err)
		rev = m.Revision
	}
	_, err := s.Edit(t.Context(), alice, "project/obj", store.Replace(1, `{"n":0,"other":true}`))
	var ce *store.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "revision 1 is no longer kept")

	// A recent base is still kept and merges.
	_, err = s.Edit(t.Context(), alice, "project/obj", store.Replace(rev-1, fmt.Sprintf(`{"n":%d,"other":true}`, rev-2)))
	require.NoError(t, err)
	got := jsonFields(t, content(t, s, alice, "project/obj").Content)
	assert.Equal(t, map[string]any{"n": float64(rev - 1), "other": true}, got)
}

func testDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	add(t, s, alice, "memory/old", `{"a":1}`, jsonAttrs())
	_, err := s.Edit(ctx, alice, "memory/old", store.Replace(1, `{"a":2}`))
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, alice, "memory/old", 2))

	_, err = s.Get(ctx, alice, "memory/old")
	require.ErrorIs(t, err, store.ErrNotFound)
	assert.Contains(t, err.Error(), `"memory/old"`)
	err = s.Delete(ctx, alice, "memory/old", 2)
	assert.ErrorIs(t, err, store.ErrNotFound, "deleting twice")

	m := add(t, s, alice, "memory/old", `{"b":1}`, jsonAttrs())
	assert.Equal(t, int64(1), m.Revision, "a new item starts again at revision 1")
	_, err = s.Edit(ctx, alice, "memory/old", store.Replace(1, `{"b":2}`))
	require.NoError(t, err)
	// The deleted item's past revisions are gone: revision 1 now means the
	// new item's first revision, so this merges against {"b":1}.
	_, err = s.Edit(ctx, alice, "memory/old", store.Replace(1, `{"b":1,"c":3}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"b": float64(2), "c": float64(3)}, jsonFields(t, content(t, s, alice, "memory/old").Content))
}

// isConflict reports whether err is a revision conflict.
func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }
