package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memory"
)

// clock is a settable time source for Config.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestSizeWarnings(t *testing.T) {
	big := strings.Repeat("x", store.DefaultWarnSize+1)
	exact := strings.Repeat("x", store.DefaultWarnSize)
	tests := []struct {
		name  string
		cfg   store.Config
		write func(t *testing.T, s store.Store)
		want  []string // paths warned about
	}{
		{"always over the default limit", store.Config{}, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/big", big, store.Attrs{Trigger: store.TriggerAlways})
			require.NoError(t, err)
		}, []string{"project/big"}},
		{"exactly the limit", store.Config{}, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/exact", exact, store.Attrs{Trigger: store.TriggerAlways})
			require.NoError(t, err)
		}, nil},
		{"index and search items are not injected", store.Config{}, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/i", big, store.Attrs{Trigger: store.TriggerIndex})
			require.NoError(t, err)
			_, err = s.Add(t.Context(), "o", "project/s", big, store.Attrs{Trigger: store.TriggerSearch})
			require.NoError(t, err)
		}, nil},
		{"an edit that grows an item", store.Config{WarnSize: 10}, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "mission/r/plan", "small", store.Attrs{Trigger: store.TriggerAlways})
			require.NoError(t, err)
			_, err = s.Edit(t.Context(), "o", "mission/r/plan", store.SearchReplace(1, "small", "not so small"))
			require.NoError(t, err)
		}, []string{"mission/r/plan"}},
		{"an edit that makes a large item always loaded", store.Config{WarnSize: 3}, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "memory/m", "four", store.Attrs{})
			require.NoError(t, err)
			_, err = s.Edit(t.Context(), "o", "memory/m", store.SetAttrs(1, store.Attrs{Trigger: store.TriggerAlways}))
			require.NoError(t, err)
		}, []string{"memory/m"}},
		{"turned off", store.Config{WarnSize: -1}, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/big", big, store.Attrs{Trigger: store.TriggerAlways})
			require.NoError(t, err)
		}, nil},
		{"failed writes do not warn", store.Config{WarnSize: 1}, func(t *testing.T, s store.Store) {
			_, err := s.Add(t.Context(), "o", "project/a", "ab", store.Attrs{Trigger: store.TriggerAlways})
			require.NoError(t, err)
			_, err = s.Add(t.Context(), "o", "project/a", "abc", store.Attrs{Trigger: store.TriggerAlways})
			require.ErrorIs(t, err, store.ErrExists)
			_, err = s.Edit(t.Context(), "o", "project/a", store.Replace(7, "abcd"))
			require.ErrorIs(t, err, store.ErrConflict)
		}, []string{"project/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []store.Warning
			cfg := tc.cfg
			cfg.OnWarning = func(_ context.Context, w store.Warning) { got = append(got, w) }
			s := memory.New(cfg)
			tc.write(t, s)
			var paths []string
			for _, w := range got {
				paths = append(paths, w.Path)
				assert.Equal(t, "o", w.Owner)
				assert.Equal(t, store.TriggerAlways, w.Trigger)
				assert.Greater(t, w.Size, w.Limit)
				assert.Contains(t, w.String(), w.Path)
			}
			assert.Equal(t, tc.want, paths)
		})
	}
}

func TestPruneByAge(t *testing.T) {
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := memory.New(store.Config{Now: c.Now})
	day := 24 * time.Hour
	// Runs last active 10, 8, 7 and 1 days before "now".
	for _, r := range []struct {
		run string
		at  time.Duration
	}{{"r-10d", 0}, {"r-8d", 2 * day}, {"r-7d", day}, {"r-1d", 6 * day}} {
		c.Advance(r.at)
		_, err := s.Add(t.Context(), "o", "mission/"+r.run+"/plan", "p", store.Attrs{})
		require.NoError(t, err)
	}
	now := c.Now().Add(day)

	rep, err := s.Prune(t.Context(), "o", store.RetentionPolicy{Now: now})
	require.NoError(t, err)
	var removed []string
	for _, r := range rep.Runs {
		removed = append(removed, r.Run)
		assert.Equal(t, "age", r.Reason)
	}
	assert.Equal(t, []string{"r-10d", "r-8d"}, removed, "a run exactly 7 days old is kept")
	assert.Equal(t, 2, rep.Kept)

	rep, err = s.Prune(t.Context(), "o", store.RetentionPolicy{Now: now, MaxAge: 36 * time.Hour})
	require.NoError(t, err)
	require.Len(t, rep.Runs, 1)
	assert.Equal(t, "r-7d", rep.Runs[0].Run)

	rep, err = s.Prune(t.Context(), "o", store.RetentionPolicy{Now: now.Add(1000 * day), MaxAge: -1})
	require.NoError(t, err)
	assert.Empty(t, rep.Runs, "a negative age keeps runs of any age")
}

func TestPruneDefaultRunCount(t *testing.T) {
	c := &clock{now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	s := memory.New(store.Config{Now: c.Now})
	for i := range store.DefaultMaxRuns + 2 {
		c.Advance(time.Second)
		_, err := s.Add(t.Context(), "o", fmt.Sprintf("mission/run-%04d/progress", i), "", store.Attrs{})
		require.NoError(t, err)
	}
	rep, err := s.Prune(t.Context(), "o", store.RetentionPolicy{})
	require.NoError(t, err)
	require.Len(t, rep.Runs, 2)
	assert.Equal(t, "run-0000", rep.Runs[0].Run)
	assert.Equal(t, "run-0001", rep.Runs[1].Run)
	assert.Equal(t, "count", rep.Runs[0].Reason)
	assert.Equal(t, store.DefaultMaxRuns, rep.Kept)
}

func TestPruneSkipsItemsWrittenMeanwhile(t *testing.T) {
	// Prune lists, then deletes in a transaction that re-reads each item;
	// an item edited in between is kept. Simulate the race with a backend
	// whose List returns a stale revision.
	s := store.New(staleList{memBackend()}, store.Config{})
	_, err := s.Add(t.Context(), "o", "mission/r1/plan", "p", store.Attrs{})
	require.NoError(t, err)
	_, err = s.Add(t.Context(), "o", "mission/r1/notes", "n", store.Attrs{})
	require.NoError(t, err)
	_, err = s.Edit(t.Context(), "o", "mission/r1/notes", store.Replace(1, "newer"))
	require.NoError(t, err)
	rep, err := s.Prune(t.Context(), "o", store.RetentionPolicy{MaxRuns: -1, MaxAge: 1})
	require.NoError(t, err)
	require.Len(t, rep.Runs, 1)
	assert.Equal(t, []string{"mission/r1/plan"}, rep.Runs[0].Paths)
	_, err = s.Get(t.Context(), "o", "mission/r1/notes")
	assert.NoError(t, err)
}

func TestASizeWarningWithoutAnObserverIsARunEvent(t *testing.T) {
	s := memory.New(store.Config{WarnSize: 16})
	g := graph.New("warn")
	g.AddNode("write", func(ctx context.Context, st graph.State) (graph.Command, error) {
		_, err := s.Add(ctx, "acme", "project/big", strings.Repeat("x", 64), store.Attrs{Trigger: store.TriggerAlways})
		return graph.Command{}, err
	})
	g.AddEdge(graph.Start, "write")
	g.AddEdge("write", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	var warnings []store.Warning
	for ev, err := range r.Stream(t.Context(), nil, graph.Events(graph.EventWarning)) {
		require.NoError(t, err)
		warnings = append(warnings, ev.Data.(store.Warning))
		assert.Equal(t, "warn/write", ev.Path)
	}
	require.Len(t, warnings, 1)
	assert.Equal(t, store.Warning{Owner: "acme", Path: "project/big", Revision: 1, Trigger: store.TriggerAlways, Size: 64, Limit: 16}, warnings[0])
}
