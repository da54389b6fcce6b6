package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/checkpoint/savertest"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
)

// newSaver returns a Saver on pool in a fresh schema.
func newSaver(t testing.TB, pool *pgxpool.Pool) *postgres.Saver {
	t.Helper()
	s := postgres.New(pool, postgres.WithSchema(pgtest.Schema(t, pool, "coorflow_test_")))
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func TestSaver(t *testing.T) {
	pool := pgtest.Pool(t)
	savertest.Run(t, func(t *testing.T) graph.Saver { return newSaver(t, pool) })
}

func TestOpenCreatesTheSchemaAndOwnsThePool(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	s, err := postgres.Open(t.Context(), pgtest.URL(), postgres.WithSchema(schema))
	require.NoError(t, err)

	var version int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT max(version) FROM `+pgx.Identifier{schema}.Sanitize()+`.checkpoint_schema`).Scan(&version))
	assert.Equal(t, 3, version)

	require.NoError(t, s.PutCheckpoint(t.Context(), graph.CheckpointRecord{Thread: "t", ID: "c1"}, nil))
	require.NoError(t, s.Close())
	_, err = s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t"})
	assert.ErrorContains(t, err, "closed")
}

func TestNewCreatesSchemaOnFirstUseAndLeavesPoolOpen(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	s := postgres.New(pool, postgres.WithSchema(schema))

	var exists bool
	query := `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`
	require.NoError(t, pool.QueryRow(t.Context(), query, schema).Scan(&exists))
	assert.False(t, exists, "New does no I/O")

	_, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	require.NoError(t, pool.QueryRow(t.Context(), query, schema).Scan(&exists))
	assert.True(t, exists)

	require.NoError(t, s.Close())
	assert.NoError(t, pool.Ping(t.Context()), "Close leaves a caller-owned pool open")
}

func TestConcurrentFirstUseCreatesTheSchemaOnce(t *testing.T) {
	// Savers on one schema stand for processes that start at once.
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	const savers = 6
	errs := make([]error, savers)
	var wg sync.WaitGroup
	for i := range savers {
		wg.Go(func() {
			s := postgres.New(pool, postgres.WithSchema(schema))
			errs[i] = s.PutCheckpoint(t.Context(), graph.CheckpointRecord{Thread: fmt.Sprint(i), ID: "c1"}, nil)
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	var versions int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema}.Sanitize()+`.checkpoint_schema`).Scan(&versions))
	assert.Equal(t, 3, versions, "each migration applied once")
	threads, err := postgres.New(pool, postgres.WithSchema(schema)).Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	assert.Len(t, threads, savers)
}

func TestNewerSchemaIsRefused(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	_, err := postgres.New(pool, postgres.WithSchema(schema)).Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{schema}.Sanitize()+`.checkpoint_schema (version) VALUES (7)`)
	require.NoError(t, err)

	_, err = postgres.New(pool, postgres.WithSchema(schema)).Threads(t.Context(), graph.ThreadListOptions{})
	require.ErrorIs(t, err, postgres.ErrSchemaTooNew)
	assert.ErrorContains(t, err, "version 7")
}

func TestSchemaNameIsQuoted(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_") + `"; DROP TABLE x; --`
	t.Cleanup(func() {
		_, err := pool.Exec(context.WithoutCancel(t.Context()), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		assert.NoError(t, err)
	})
	s := postgres.New(pool, postgres.WithSchema(schema))
	require.NoError(t, s.PutCheckpoint(t.Context(), graph.CheckpointRecord{Thread: "t", ID: "c1"}, nil))
	got, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t"})
	require.NoError(t, err)
	assert.Equal(t, "c1", got.ID)
}

func TestFailedPutIsRolledBackWhole(t *testing.T) {
	// PostgreSQL text cannot hold NUL, so the server refuses the second
	// blob of the put.
	s := newSaver(t, pgtest.Pool(t))
	err := s.PutCheckpoint(t.Context(), graph.CheckpointRecord{Thread: "t", ID: "c1"}, []graph.Blob{
		{Channel: "messages", Version: "1"},
		{Channel: "bad\x00channel", Version: "1"},
	})
	require.ErrorContains(t, err, "SQLSTATE 22021", "the server refused the blob")

	_, err = s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t"})
	require.ErrorIs(t, err, graph.ErrNotFound)
	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	assert.Empty(t, threads)
	blobs, err := s.Blobs(t.Context(), "t", "", []string{"messages"})
	require.NoError(t, err)
	assert.Empty(t, blobs)
}

func TestWithoutWithSchemaTheCurrentSchemaIsUsed(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	require.NoError(t, err)

	// search_path names a schema that does not exist yet: there is no
	// current schema, and the Saver says how to name one.
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	other, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(other.Close)
	_, err = postgres.New(other).Threads(t.Context(), graph.ThreadListOptions{})
	assert.ErrorContains(t, err, "WithSchema")

	_, err = pool.Exec(t.Context(), `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	require.NoError(t, postgres.New(other).PutCheckpoint(t.Context(), graph.CheckpointRecord{Thread: "t", ID: "c1"}, nil))
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema}.Sanitize()+`.checkpoints`).Scan(&n))
	assert.Equal(t, 1, n)
}
