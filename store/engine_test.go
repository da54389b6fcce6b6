package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
