package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/postgres"
)

func TestOpensASchemaOfTheFirstRelease(t *testing.T) {
	schema, pool := freshSchema(t)
	q := pgx.Identifier{schema}.Sanitize()
	created := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	// What releases before the version table created: item metadata in
	// columns, no store_schema table.
	for _, stmt := range []string{
		`CREATE SCHEMA ` + q,
		`CREATE TABLE ` + q + `.store_items (
			owner text NOT NULL, path text COLLATE "C" NOT NULL, content text NOT NULL,
			priority text NOT NULL, trust text NOT NULL, sensitivity text NOT NULL, load_trigger text NOT NULL,
			vis_scope text NOT NULL, vis_id text NOT NULL, content_type text NOT NULL, size bigint NOT NULL,
			created timestamptz NOT NULL, updated timestamptz NOT NULL, revision bigint NOT NULL,
			PRIMARY KEY (owner, path))`,
		`CREATE TABLE ` + q + `.store_revisions (
			owner text NOT NULL, path text COLLATE "C" NOT NULL, revision bigint NOT NULL, content text NOT NULL,
			PRIMARY KEY (owner, path, revision))`,
		`INSERT INTO ` + q + `.store_revisions VALUES ('alice', 'mission/r1/plan', 1, '{"a":0,"b":1}')`,
	} {
		_, err := pool.Exec(t.Context(), stmt)
		require.NoError(t, err, stmt)
	}
	_, err := pool.Exec(t.Context(), `INSERT INTO `+q+`.store_items VALUES
		('alice', 'mission/r1/plan', '{"a":1,"b":1}', 'critical', 'model', 'internal', 'always', 'task', 't1', 'json', 13, $1, $1, 2),
		('alice', 'project/readme', 'hello', 'normal', 'tool', 'secret', 'index', 'public', '', 'text', 5, $1, $1, 1)`, created)
	require.NoError(t, err)

	for range 2 { // the second open finds the schema up to date
		s := open(t, pool, schema)
		it, err := s.Get(t.Context(), "alice", "mission/r1/plan")
		require.NoError(t, err)
		assert.Equal(t, store.Meta{Path: "mission/r1/plan", Attrs: store.Attrs{
			Labels:     map[string]string{"priority": "critical", "trust": "model", "sensitivity": "internal", "trigger": "always"},
			Visibility: store.TaskScoped("t1"), ContentType: store.ContentJSON,
		}, Size: 13, Created: created, Updated: created, Revision: 2}, it.Meta)
		readme, err := s.Get(t.Context(), "alice", "project/readme")
		require.NoError(t, err)
		assert.Equal(t, "secret", readme.Labels["sensitivity"])
	}

	s := open(t, pool, schema)
	m, err := s.Edit(t.Context(), "alice", "mission/r1/plan", store.Replace(1, `{"a":0,"b":2}`))
	require.NoError(t, err, "the kept revision is still a merge base")
	assert.Equal(t, "critical", m.Labels["priority"])
	it, err := s.Get(t.Context(), "alice", "mission/r1/plan")
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1,"b":2}`, it.Content)
	hits, err := s.Search(t.Context(), "alice", "HELLO", store.SearchOptions{})
	require.NoError(t, err)
	require.Len(t, hits, 1)
	assert.Equal(t, "project/readme", hits[0].Path)
}

func TestRefusesASchemaNewerThanItKnows(t *testing.T) {
	schema, pool := freshSchema(t)
	s := open(t, pool, schema)
	_, err := s.Add(t.Context(), "alice", "project/a", "kept", store.Attrs{})
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{schema}.Sanitize()+`.store_schema (version) VALUES (99)`)
	require.NoError(t, err)

	err = postgres.New(pool, postgres.WithSchema(schema)).Migrate(t.Context())
	require.ErrorIs(t, err, postgres.ErrSchemaTooNew)
	assert.EqualError(t, err, `postgres: open schema "`+schema+`": postgres: store schema is newer than this version supports: schema `+
		schema+` is at version 99, this package knows up to 3`)
	it, err := s.Get(t.Context(), "alice", "project/a")
	require.NoError(t, err)
	assert.Equal(t, "kept", it.Content)
}

func TestSearchHasATrigramIndexWhenTheServerHasPgTrgm(t *testing.T) {
	schema, pool := freshSchema(t)
	var available bool
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm')`).Scan(&available))
	if !available {
		t.Skip("this PostgreSQL server has no pg_trgm: search reads every item")
	}
	s := open(t, pool, schema)
	_, err := s.Add(t.Context(), "alice", "notes/fsync", "fsync on macOS does not flush the disk cache", store.Attrs{})
	require.NoError(t, err)
	var index string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'store_items_trgm'`, schema).Scan(&index))
	assert.Contains(t, index, "gin_trgm_ops")
	hits, err := s.Search(t.Context(), "alice", "MACOS", store.SearchOptions{})
	require.NoError(t, err)
	require.Len(t, hits, 1)
	assert.Equal(t, "notes/fsync", hits[0].Path)
}
