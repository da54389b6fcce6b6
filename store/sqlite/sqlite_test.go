package sqlite_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/sqlitedb"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/sqlite"
	"github.com/coorflow/coorflow/store/storetest"
)

func open(t *testing.T, path string, cfg store.Config) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, sqlite.WithConfig(cfg))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"), store.Config{})
	})
}

func TestOpenWithoutPath(t *testing.T) {
	_, err := sqlite.Open(t.Context(), "")
	require.ErrorIs(t, err, store.ErrInvalid)
	assert.Contains(t, err.Error(), "no database path")
}

func TestOpenRefusesADatabaseInMemory(t *testing.T) {
	_, err := sqlite.Open(t.Context(), ":memory:")
	require.ErrorIs(t, err, sqlitedb.ErrNeedFile)
	assert.EqualError(t, err, `sqlite: open ":memory:": need a file; for a store in memory use store/memory`)
}

func TestNewCreatesTablesOnFirstUseAndLeavesDBOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := sqlitedb.Open(path, sqlitedb.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	s := sqlite.New(db, sqlite.WithConfig(store.Config{KeepRevisions: -1}))

	var tables int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE type = 'table'`).Scan(&tables))
	assert.Zero(t, tables, "New does no I/O")

	_, err = s.Add(t.Context(), "alice", "project/a", "kept", store.Attrs{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, db.PingContext(t.Context()), "Close leaves a caller-owned db open")
	_, err = s.Get(t.Context(), "alice", "project/a")
	assert.ErrorContains(t, err, "sqlite: store is closed")

	again := sqlite.New(db)
	defer again.Close()
	it, err := again.Get(t.Context(), "alice", "project/a")
	require.NoError(t, err)
	assert.Equal(t, "kept", it.Content)
}

func TestPersistsAcrossOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?#% name.db")
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	_, err = s.Add(t.Context(), "alice", "memory/fact", `{"k":1}`, store.Attrs{ContentType: store.ContentJSON})
	require.NoError(t, err)
	_, err = s.Edit(t.Context(), "alice", "memory/fact", store.Replace(1, `{"k":2}`))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s2 := open(t, path, store.Config{})
	it, err := s2.Get(t.Context(), "alice", "memory/fact")
	require.NoError(t, err)
	assert.JSONEq(t, `{"k":2}`, it.Content)
	assert.Equal(t, int64(2), it.Revision)
	// The kept base of revision 1 survived too: a stale edit still merges.
	_, err = s2.Edit(t.Context(), "alice", "memory/fact", store.Replace(1, `{"k":1,"n":true}`))
	require.NoError(t, err)
	it, err = s2.Get(t.Context(), "alice", "memory/fact")
	require.NoError(t, err)
	assert.JSONEq(t, `{"k":2,"n":true}`, it.Content)
}

// TestConcurrentWritersOnTwoHandles writes from many goroutines through two
// Stores opened on the same file, so that writers meet in SQLite's lock and
// not only in the Store's own queue: none may see SQLITE_BUSY.
func TestConcurrentWritersOnTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	handles := []*sqlite.Store{open(t, path, store.Config{}), open(t, path, store.Config{})}
	_, err := handles[0].Add(t.Context(), "alice", "mission/r1/progress", "", store.Attrs{})
	require.NoError(t, err)

	const writers, each = 16, 8
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		s := handles[i%2]
		wg.Go(func() {
			<-start
			for j := range each {
				if _, err := s.Add(t.Context(), "alice", fmt.Sprintf("memory/w%02d/%02d", i, j), "x", store.Attrs{}); err != nil {
					errs[i] = err
					return
				}
				// A read-modify-write: retried on conflict, never on BUSY.
				for {
					it, err := s.Get(t.Context(), "alice", "mission/r1/progress")
					if err != nil {
						errs[i] = err
						return
					}
					_, err = s.Edit(t.Context(), "alice", "mission/r1/progress",
						store.Replace(it.Revision, it.Content+"+"))
					if err == nil {
						break
					}
					var ce *store.ConflictError
					if !assert.ErrorAs(t, err, &ce) {
						errs[i] = err
						return
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "writer %d", i)
	}
	p, err := handles[1].List(t.Context(), "alice", "memory/", store.ListOptions{Limit: store.MaxListLimit})
	require.NoError(t, err)
	assert.Len(t, p.Items, writers*each)
	it, err := handles[0].Get(t.Context(), "alice", "mission/r1/progress")
	require.NoError(t, err)
	assert.Len(t, it.Content, writers*each)
	assert.Equal(t, int64(writers*each+1), it.Revision)
}

func TestStoreConfigReachesTheStore(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := open(t, filepath.Join(t.TempDir(), "c.db"), store.Config{Now: func() time.Time { return at }, KeepRevisions: -1})
	m, err := s.Add(t.Context(), "alice", "project/doc", `{"a":1}`, store.Attrs{ContentType: store.ContentJSON})
	require.NoError(t, err)
	assert.Equal(t, at, m.Created, "Config.Now")
	_, err = s.Edit(t.Context(), "alice", "project/doc", store.Replace(1, `{"a":2}`))
	require.NoError(t, err)
	_, err = s.Edit(t.Context(), "alice", "project/doc", store.Replace(1, `{"a":1,"b":2}`))
	require.ErrorIs(t, err, store.ErrConflict, "Config.KeepRevisions < 0 keeps no merge base")
}
