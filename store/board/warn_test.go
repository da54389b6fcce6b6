package board_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
)

func TestWarnLarge(t *testing.T) {
	big := strings.Repeat("x", board.DefaultWarnSize+1)
	exact := strings.Repeat("x", board.DefaultWarnSize)
	always := store.Attrs{Labels: board.Prompt{Trigger: board.TriggerAlways}.Labels()}
	tests := []struct {
		name  string
		limit int64
		write func(t *testing.T, s store.Store)
		want  []string // paths warned about
	}{
		{"always over the default limit", 0, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/big", big, always)
			require.NoError(t, err)
		}, []string{"project/big"}},
		{"exactly the limit", 0, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/exact", exact, always)
			require.NoError(t, err)
		}, nil},
		{"index and search items are not injected", 0, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/i", big, store.Attrs{Labels: board.Prompt{Trigger: board.TriggerIndex}.Labels()})
			require.NoError(t, err)
			_, err = s.Add(t.Context(), "o", "project/s", big, store.Attrs{Labels: board.Prompt{Trigger: board.TriggerSearch}.Labels()})
			require.NoError(t, err)
		}, nil},
		{"an edit that grows an item", 10, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "mission/r/plan", "small", always)
			require.NoError(t, err)
			_, err = s.Edit(t.Context(), "o", "mission/r/plan", store.SearchReplace(1, "small", "not so small"))
			require.NoError(t, err)
		}, []string{"mission/r/plan"}},
		{"an edit that makes a large item always loaded", 3, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "memory/m", "four", store.Attrs{})
			require.NoError(t, err)
			_, err = s.Edit(t.Context(), "o", "memory/m", store.SetAttrs(1, always))
			require.NoError(t, err)
		}, []string{"memory/m"}},
		{"turned off", -1, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/big", big, always)
			require.NoError(t, err)
		}, nil},
		{"failed writes do not warn", 1, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/a", "ab", always)
			require.NoError(t, err)
			_, err = s.Add(t.Context(), "o", "project/a", "abc", always)
			require.ErrorIs(t, err, store.ErrExists)
			_, err = s.Edit(t.Context(), "o", "project/a", store.Replace(7, "abcd"))
			require.ErrorIs(t, err, store.ErrConflict)
		}, []string{"project/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []board.Warning
			s := board.WarnLarge(memory.New(store.Config{}), tc.limit, func(_ context.Context, w board.Warning) { got = append(got, w) })
			tc.write(t, s)
			var paths []string
			for _, w := range got {
				paths = append(paths, w.Path)
				assert.Equal(t, "o", w.Owner)
				assert.Equal(t, board.TriggerAlways, w.Trigger)
				assert.Greater(t, w.Size, w.Limit)
				assert.Contains(t, w.String(), w.Path)
			}
			assert.Equal(t, tc.want, paths)
		})
	}
}

func TestWarnLargeReportsTheWritersContextAndTheWholeWarning(t *testing.T) {
	type key struct{}
	var got []board.Warning
	s := board.WarnLarge(memory.New(store.Config{}), 16, func(ctx context.Context, w board.Warning) {
		assert.Equal(t, "run-7", ctx.Value(key{}), "the writer's context")
		got = append(got, w)
	})
	ctx := context.WithValue(t.Context(), key{}, "run-7")
	_, err := s.Add(ctx, "acme", "project/big", strings.Repeat("x", 64), store.Attrs{Labels: board.Prompt{Trigger: board.TriggerAlways}.Labels()})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, board.Warning{Owner: "acme", Path: "project/big", Revision: 1, Trigger: board.TriggerAlways, Size: 64, Limit: 16}, got[0])
	assert.Equal(t, `board: item "project/big" (owner "acme") is 64 bytes, over the 16-byte limit for items with trigger always`, got[0].String())
}
