package board_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
)

const bob = "bob"

func addItem(t *testing.T, s store.Store, owner, path, content string) store.Meta {
	t.Helper()
	m, err := s.Add(t.Context(), owner, path, content, store.Attrs{})
	require.NoError(t, err, "add %s", path)
	return m
}

func TestPrune(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store, _ *board.Board) {
		ctx := t.Context()
		// Three runs, written in order r1, r2, r3, each with a board; r1 and
		// r2 also have an archived transcript.
		for _, run := range []string{"r1", "r2", "r3"} {
			addItem(t, s, "alice", "mission/"+run+"/plan", "plan "+run)
			addItem(t, s, "alice", "mission/"+run+"/outputs/o", "output "+run)
		}
		addItem(t, s, "alice", "memory/transcripts/r1/part-1", "transcript r1")
		addItem(t, s, "alice", "memory/transcripts/r2/part-1", "transcript r2")
		last := addItem(t, s, "alice", "mission/r3/progress", "done")
		for _, p := range []string{"mission/README", "memory/facts", "project/readme", "team/roster"} {
			addItem(t, s, "alice", p, "not a run")
		}
		addItem(t, s, bob, "mission/r1/plan", "bob's run")

		paths := func(prefix string) []string {
			t.Helper()
			p, err := s.List(ctx, "alice", prefix, store.ListOptions{Limit: store.MaxListLimit})
			require.NoError(t, err)
			var out []string
			for _, m := range p.Items {
				out = append(out, m.Path)
			}
			return out
		}

		t.Run("recent runs are kept", func(t *testing.T) {
			rep, err := board.Prune(ctx, s, "alice", board.RetentionPolicy{})
			require.NoError(t, err)
			assert.Empty(t, rep.Runs)
			assert.Equal(t, 3, rep.Kept)
			assert.Len(t, paths(""), 13)
		})

		t.Run("dry run removes nothing", func(t *testing.T) {
			rep, err := board.Prune(ctx, s, "alice", board.RetentionPolicy{Now: last.Updated.Add(8 * 24 * time.Hour), DryRun: true})
			require.NoError(t, err)
			assert.Len(t, rep.Runs, 3)
			assert.Equal(t, 9, rep.Items)
			assert.Len(t, paths(""), 13)
		})

		t.Run("beyond the newest runs", func(t *testing.T) {
			rep, err := board.Prune(ctx, s, "alice", board.RetentionPolicy{MaxRuns: 2})
			require.NoError(t, err)
			require.Len(t, rep.Runs, 1)
			r := rep.Runs[0]
			assert.Equal(t, "r1", r.Run)
			assert.Equal(t, board.PrunedForCount, r.Reason)
			assert.ElementsMatch(t, []string{"mission/r1/outputs/o", "mission/r1/plan", "memory/transcripts/r1/part-1"}, r.Paths)
			assert.Equal(t, 3, rep.Items)
			assert.Equal(t, 2, rep.Kept)
			assert.Empty(t, paths("mission/r1/"))
			assert.Empty(t, paths("memory/transcripts/r1/"))
			assert.NotEmpty(t, paths("mission/r2/"))
		})

		t.Run("older than the age limit", func(t *testing.T) {
			now := last.Updated.Add(board.DefaultMaxAge + time.Minute)
			rep, err := board.Prune(ctx, s, "alice", board.RetentionPolicy{Now: now})
			require.NoError(t, err)
			require.Len(t, rep.Runs, 2)
			assert.Equal(t, "r2", rep.Runs[0].Run, "oldest first")
			assert.Equal(t, "r3", rep.Runs[1].Run)
			for _, r := range rep.Runs {
				assert.Equal(t, board.PrunedForAge, r.Reason)
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
				addItem(t, s, "alice", fmt.Sprintf("team/runs/x%d/log", i), "log")
			}
			rep, err := board.Prune(ctx, s, "alice", board.RetentionPolicy{MaxRuns: 1, Prefixes: []string{"team/runs/"}})
			require.NoError(t, err)
			assert.Len(t, rep.Runs, 2)
			assert.Equal(t, []string{"team/runs/x2/log"}, paths("team/runs/"))
		})
	})
}

func TestPruneRefusesBadInput(t *testing.T) {
	s := memory.New(store.Config{})
	addItem(t, s, "alice", "mission/r1/plan", "p")
	tests := []struct {
		name   string
		owner  string
		policy board.RetentionPolicy
		want   error
		msg    string
	}{
		{"prefix without a slash", "alice", board.RetentionPolicy{Prefixes: []string{"mission"}}, store.ErrInvalid,
			`board: prune: store: invalid argument: run prefix "mission" must end in a slash`},
		{"malformed prefix", "alice", board.RetentionPolicy{Prefixes: []string{"mission//"}}, store.ErrInvalidPath,
			`board: prune: run prefix: store: invalid path: "mission/" has an empty segment`},
		{"no owner", "", board.RetentionPolicy{MaxRuns: -1, MaxAge: 1}, store.ErrInvalid,
			`board: prune: store: list "mission/": invalid argument: empty owner id`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := board.Prune(t.Context(), s, tc.owner, tc.policy)
			require.ErrorIs(t, err, tc.want)
			assert.EqualError(t, err, tc.msg)
			_, err = s.Get(t.Context(), "alice", "mission/r1/plan")
			assert.NoError(t, err, "nothing was removed")
		})
	}
}

func TestPruneThroughAReadOnlyStore(t *testing.T) {
	s := memory.New(store.Config{})
	addItem(t, s, "alice", "mission/r1/plan", "p")
	ro := store.ReadOnly(s)
	rep, err := board.Prune(t.Context(), ro, "alice", board.RetentionPolicy{MaxRuns: -1, MaxAge: 1, DryRun: true})
	require.NoError(t, err, "a dry run only reads")
	require.Len(t, rep.Runs, 1)

	_, err = board.Prune(t.Context(), ro, "alice", board.RetentionPolicy{MaxRuns: -1, MaxAge: 1})
	require.ErrorIs(t, err, store.ErrReadOnly)
	assert.EqualError(t, err, `board: prune run "r1": store: delete "mission/r1/plan" (owner "alice"): this store is read-only`)
	_, err = s.Get(t.Context(), "alice", "mission/r1/plan")
	assert.NoError(t, err)
}

// clock is a settable time source for store.Config.Now.
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
		addItem(t, s, "o", "mission/"+r.run+"/plan", "p")
	}
	now := c.Now().Add(day)

	rep, err := board.Prune(t.Context(), s, "o", board.RetentionPolicy{Now: now})
	require.NoError(t, err)
	var removed []string
	for _, r := range rep.Runs {
		removed = append(removed, r.Run)
		assert.Equal(t, board.PrunedForAge, r.Reason)
	}
	assert.Equal(t, []string{"r-10d", "r-8d"}, removed, "a run exactly 7 days old is kept")
	assert.Equal(t, 2, rep.Kept)

	rep, err = board.Prune(t.Context(), s, "o", board.RetentionPolicy{Now: now, MaxAge: 36 * time.Hour})
	require.NoError(t, err)
	require.Len(t, rep.Runs, 1)
	assert.Equal(t, "r-7d", rep.Runs[0].Run)

	rep, err = board.Prune(t.Context(), s, "o", board.RetentionPolicy{Now: now.Add(1000 * day), MaxAge: -1})
	require.NoError(t, err)
	assert.Empty(t, rep.Runs, "a negative age keeps runs of any age")
}

func TestPruneDefaultRunCount(t *testing.T) {
	c := &clock{now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	s := memory.New(store.Config{Now: c.Now})
	for i := range board.DefaultMaxRuns + 2 {
		c.Advance(time.Second)
		addItem(t, s, "o", fmt.Sprintf("mission/run-%04d/progress", i), "")
	}
	rep, err := board.Prune(t.Context(), s, "o", board.RetentionPolicy{Now: c.Now()})
	require.NoError(t, err)
	require.Len(t, rep.Runs, 2)
	assert.Equal(t, "run-0000", rep.Runs[0].Run)
	assert.Equal(t, "run-0001", rep.Runs[1].Run)
	assert.Equal(t, board.PrunedForCount, rep.Runs[0].Reason)
	assert.Equal(t, board.DefaultMaxRuns, rep.Kept)
}

// staleList reports every listed item at revision 1 and a time long ago,
// as a List that ran before later writes would.
type staleList struct{ store.Store }

func (s staleList) List(ctx context.Context, owner, prefix string, opts store.ListOptions) (store.Page, error) {
	p, err := s.Store.List(ctx, owner, prefix, opts)
	for i := range p.Items {
		p.Items[i].Revision = 1
		p.Items[i].Updated = time.Unix(0, 0)
	}
	return p, err
}

func TestPruneKeepsItemsWrittenOrDeletedSinceItListed(t *testing.T) {
	s := memory.New(store.Config{})
	addItem(t, s, "o", "mission/r1/plan", "p")
	addItem(t, s, "o", "mission/r1/notes", "n")
	_, err := s.Edit(t.Context(), "o", "mission/r1/notes", store.Replace(1, "newer"))
	require.NoError(t, err)
	gone := addItem(t, s, "o", "mission/r1/gone", "g")
	listed := staleList{s}
	// Deleted after the listing: Prune's own delete finds nothing.
	deleting := deleteOnList{Store: listed, path: "mission/r1/gone", rev: gone.Revision}

	rep, err := board.Prune(t.Context(), deleting, "o", board.RetentionPolicy{MaxRuns: -1, MaxAge: 1})
	require.NoError(t, err)
	require.Len(t, rep.Runs, 1)
	assert.Equal(t, []string{"mission/r1/plan"}, rep.Runs[0].Paths)
	it, err := s.Get(t.Context(), "o", "mission/r1/notes")
	require.NoError(t, err, "the item edited since the listing is kept")
	assert.Equal(t, "newer", it.Content)
}

// deleteOnList deletes one item right after each listing, as another
// writer would between Prune's listing and its deletes.
type deleteOnList struct {
	store.Store
	path string
	rev  int64
}

func (d deleteOnList) List(ctx context.Context, owner, prefix string, opts store.ListOptions) (store.Page, error) {
	p, err := d.Store.List(ctx, owner, prefix, opts)
	if err == nil {
		_ = d.Store.Delete(ctx, owner, d.path, d.rev)
	}
	return p, err
}
