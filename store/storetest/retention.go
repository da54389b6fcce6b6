package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
)

func testPrune(t *testing.T, s store.Store) {
	ctx := t.Context()
	// Three runs, written in order r1, r2, r3, each with a board; r1 and r2
	// also have an archived transcript.
	for _, run := range []string{"r1", "r2", "r3"} {
		add(t, s, alice, "mission/"+run+"/plan", "plan "+run, store.Attrs{})
		add(t, s, alice, "mission/"+run+"/outputs/o", "output "+run, store.Attrs{})
	}
	add(t, s, alice, "memory/transcripts/r1/part-1", "transcript r1", store.Attrs{})
	add(t, s, alice, "memory/transcripts/r2/part-1", "transcript r2", store.Attrs{})
	last := add(t, s, alice, "mission/r3/progress", "done", store.Attrs{})
	keep := []string{"mission/README", "memory/facts", "project/readme", "team/roster"}
	for _, p := range keep {
		add(t, s, alice, p, "not a run", store.Attrs{})
	}
	add(t, s, bob, "mission/r1/plan", "bob's run", store.Attrs{})

	paths := func(prefix string) []string {
		t.Helper()
		p, err := s.List(ctx, alice, prefix, store.ListOptions{Limit: store.MaxListLimit})
		require.NoError(t, err)
		var out []string
		for _, m := range p.Items {
			out = append(out, m.Path)
		}
		return out
	}

	t.Run("recent runs are kept", func(t *testing.T) {
		rep, err := s.Prune(ctx, alice, store.RetentionPolicy{})
		require.NoError(t, err)
		assert.Empty(t, rep.Runs)
		assert.Equal(t, 3, rep.Kept)
		assert.Len(t, paths(""), 13)
	})

	t.Run("dry run removes nothing", func(t *testing.T) {
		rep, err := s.Prune(ctx, alice, store.RetentionPolicy{Now: last.Updated.Add(8 * 24 * time.Hour), DryRun: true})
		require.NoError(t, err)
		assert.Len(t, rep.Runs, 3)
		assert.Equal(t, 9, rep.Items)
		assert.Len(t, paths(""), 13)
	})

	t.Run("beyond the newest runs", func(t *testing.T) {
		rep, err := s.Prune(ctx, alice, store.RetentionPolicy{MaxRuns: 2})
		require.NoError(t, err)
		require.Len(t, rep.Runs, 1)
		r := rep.Runs[0]
		assert.Equal(t, "r1", r.Run)
		assert.Equal(t, "count", r.Reason)
		assert.ElementsMatch(t, []string{"mission/r1/outputs/o", "mission/r1/plan", "memory/transcripts/r1/part-1"}, r.Paths)
		assert.Equal(t, 3, rep.Items)
		assert.Equal(t, 2, rep.Kept)
		assert.Empty(t, paths("mission/r1/"))
		assert.Empty(t, paths("memory/transcripts/r1/"))
		assert.NotEmpty(t, paths("mission/r2/"))
	})

	t.Run("older than the age limit", func(t *testing.T) {
		now := last.Updated.Add(store.DefaultMaxAge + time.Minute)
		rep, err := s.Prune(ctx, alice, store.RetentionPolicy{Now: now})
		require.NoError(t, err)
		require.Len(t, rep.Runs, 2)
		assert.Equal(t, "r2", rep.Runs[0].Run, "oldest first")
		assert.Equal(t, "r3", rep.Runs[1].Run)
		for _, r := range rep.Runs {
			assert.Equal(t, "age", r.Reason)
			assert.False(t, r.LastActivity.IsZero())
		}
		assert.Equal(t, last.Updated, rep.Runs[1].LastActivity, "a run's last activity is its newest update")
		assert.Equal(t, 6, rep.Items)
		assert.Equal(t, []string{"memory/facts", "mission/README", "project/readme", "team/roster"}, paths(""),
			"items outside runs are kept")
	})

	t.Run("other owners are untouched", func(t *testing.T) {
		_, err := s.Get(ctx, bob, "mission/r1/plan")
		require.NoError(t, err)
	})

	t.Run("custom prefixes", func(t *testing.T) {
		for i := range 3 {
			add(t, s, alice, fmt.Sprintf("team/runs/x%d/log", i), "log", store.Attrs{})
		}
		rep, err := s.Prune(ctx, alice, store.RetentionPolicy{MaxRuns: 1, Prefixes: []string{"team/runs/"}})
		require.NoError(t, err)
		assert.Len(t, rep.Runs, 2)
		assert.Equal(t, []string{"team/runs/x2/log"}, paths("team/runs/"))
	})

	t.Run("bad prefix", func(t *testing.T) {
		_, err := s.Prune(ctx, alice, store.RetentionPolicy{Prefixes: []string{"mission"}})
		assert.ErrorIs(t, err, store.ErrInvalid)
		_, err = s.Prune(ctx, alice, store.RetentionPolicy{Prefixes: []string{"tmp/"}})
		assert.ErrorIs(t, err, store.ErrInvalidPath)
	})
}
