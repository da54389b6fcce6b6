package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/sqlite"
)

// firstSchema is what releases before the version table created: item
// metadata in columns, no store_schema table.
var firstSchema = []string{
	`CREATE TABLE store_items (
		owner TEXT NOT NULL, path TEXT NOT NULL, content TEXT NOT NULL, folded TEXT NOT NULL,
		priority TEXT NOT NULL, trust TEXT NOT NULL, sensitivity TEXT NOT NULL, load_trigger TEXT NOT NULL,
		vis_scope TEXT NOT NULL, vis_id TEXT NOT NULL, content_type TEXT NOT NULL, size INTEGER NOT NULL,
		created INTEGER NOT NULL, updated INTEGER NOT NULL, revision INTEGER NOT NULL,
		PRIMARY KEY (owner, path)
	) WITHOUT ROWID`,
	`CREATE TABLE store_revisions (
		owner TEXT NOT NULL, path TEXT NOT NULL, revision INTEGER NOT NULL, content TEXT NOT NULL,
		PRIMARY KEY (owner, path, revision)
	) WITHOUT ROWID`,
}

func execAll(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	for _, stmt := range stmts {
		_, err := db.ExecContext(t.Context(), stmt)
		require.NoError(t, err, stmt)
	}
}

func TestOpensADatabaseOfTheFirstSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	created := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	execAll(t, path, append(firstSchema,
		`INSERT INTO store_items VALUES ('alice', 'mission/r1/plan', '{"a":1,"b":1}', 'mission/r1/plan'||char(10)||'{"a":1,"b":1}', 'critical', 'model', 'internal',
			'always', 'task', 't1', 'json', 13, `+itoa(created.UnixMicro())+`, `+itoa(created.UnixMicro())+`, 2)`,
		`INSERT INTO store_items VALUES ('alice', 'project/readme', 'hello', 'project/readme'||char(10)||'hello', 'normal', 'tool', 'secret',
			'index', 'public', '', 'text', 5, 0, 0, 1)`,
		`INSERT INTO store_revisions VALUES ('alice', 'mission/r1/plan', 1, '{"a":0,"b":1}')`,
	)...)

	for range 2 { // the second open finds the schema up to date
		s := open(t, path, store.Config{})
		it, err := s.Get(t.Context(), "alice", "mission/r1/plan")
		require.NoError(t, err)
		assert.Equal(t, store.Meta{Path: "mission/r1/plan", Attrs: store.Attrs{
			Labels:     map[string]string{"priority": "critical", "trust": "model", "sensitivity": "internal", "trigger": "always"},
			Visibility: store.TaskScoped("t1"), ContentType: store.ContentJSON,
		}, Size: 13, Created: created, Updated: created, Revision: 2}, it.Meta)
		readme, err := s.Get(t.Context(), "alice", "project/readme")
		require.NoError(t, err)
		assert.Equal(t, "secret", readme.Labels["sensitivity"])
		require.NoError(t, s.Close())
	}

	s := open(t, path, store.Config{})
	m, err := s.Edit(t.Context(), "alice", "mission/r1/plan", store.Replace(1, `{"a":0,"b":2}`))
	require.NoError(t, err, "the kept revision is still a merge base")
	assert.Equal(t, int64(3), m.Revision)
	assert.Equal(t, "critical", m.Labels["priority"])
	it, err := s.Get(t.Context(), "alice", "mission/r1/plan")
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1,"b":2}`, it.Content)
	hits, err := s.Search(t.Context(), "alice", "HELLO", store.SearchOptions{})
	require.NoError(t, err)
	require.Len(t, hits, 1, "search still finds the old rows")
	assert.Equal(t, "project/readme", hits[0].Path)
}

func TestRefusesASchemaNewerThanItKnows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	s := open(t, path, store.Config{})
	_, err := s.Add(t.Context(), "alice", "project/a", "kept", store.Attrs{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	execAll(t, path, `INSERT INTO store_schema (version) VALUES (99)`)

	_, err = sqlite.Open(t.Context(), path)
	require.ErrorIs(t, err, sqlite.ErrSchemaTooNew)
	assert.EqualError(t, err, "sqlite: open store in "+path+": sqlite: store schema is newer than this version supports: the database is at version 99, this package knows up to 3")

	execAll(t, path, `DELETE FROM store_schema WHERE version = 99`)
	s = open(t, path, store.Config{})
	it, err := s.Get(t.Context(), "alice", "project/a")
	require.NoError(t, err)
	assert.Equal(t, "kept", it.Content)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestTheFullTextIndexFollowsEditsAndDeletes(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "fts.db"), store.Config{})
	m, err := s.Add(t.Context(), "alice", "project/readme", "hello world", store.Attrs{})
	require.NoError(t, err)
	_, err = s.Add(t.Context(), "bob", "project/readme", "goodbye fsync", store.Attrs{})
	require.NoError(t, err)
	m, err = s.Edit(t.Context(), "alice", "project/readme", store.Replace(m.Revision, "goodbye fsync"))
	require.NoError(t, err)
	search := func(q string) []string {
		hits, err := s.Search(t.Context(), "alice", q, store.SearchOptions{})
		require.NoError(t, err)
		var paths []string
		for _, h := range hits {
			paths = append(paths, h.Path)
		}
		return paths
	}
	assert.Empty(t, search("hello"), "the old content is no longer indexed")
	for _, q := range []string{"FSYNC", "bye fs", "ye", "readme"} { // "ye" is too short for trigrams
		assert.Equal(t, []string{"project/readme"}, search(q), q)
	}
	require.NoError(t, s.Delete(t.Context(), "alice", "project/readme", m.Revision))
	assert.Empty(t, search("fsync"), "a deleted item is gone from the index, and bob's is not alice's")
}
