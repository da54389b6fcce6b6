package postgres

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	dbmigrate "github.com/coorflow/coorflow/internal/migrate"
	"github.com/coorflow/coorflow/internal/pgtest"
)

// A schema of version 2, written by the version before put_checkpoint_after,
// is upgraded on first use, and a thread stored there goes on.
func TestAThreadOfSchemaVersion2GoesOn(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	require.NoError(t, dbmigrate.Postgres(ctx, pool, schema, schemaMigrations.Lock, schemaMigrations.Table, migrations[:2], ErrSchemaTooNew))
	q := newQueries(pgx.Identifier{schema}.Sanitize())
	_, err := pool.Exec(ctx, q.putFirst, "t", "", "c1", "", 0, "input", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), []byte("m"),
		[]string{"messages"}, []string{"c1"}, []string{""}, [][]byte{[]byte(`["hi"]`)})
	require.NoError(t, err)

	s := New(pool, WithSchema(schema))
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	c2 := graph.CheckpointRecord{Thread: "t", ID: "c2", ParentID: "c1", Step: 1, Source: graph.SourceLoop}
	require.NoError(t, s.PutCheckpoint(ctx, c2, []graph.Blob{{Channel: "messages", Version: "c2", Base: "c1", Data: []byte(`["hello"]`)}}))
	var version int
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(version) FROM `+pgx.Identifier{schema}.Sanitize()+`.checkpoint_schema`).Scan(&version))
	assert.Equal(t, 3, version)

	newest, err := s.GetCheckpoint(ctx, graph.CheckpointRef{Thread: "t"})
	require.NoError(t, err)
	assert.Equal(t, "c2", newest.ID)
	got, err := s.BlobsAt(ctx, "t", "", map[string]string{"messages": "c2"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{
		{Channel: "messages", Version: "c1", Data: []byte(`["hi"]`)},
		{Channel: "messages", Version: "c2", Base: "c1", Data: []byte(`["hello"]`)},
	}, got)
	err = s.PutCheckpoint(ctx, graph.CheckpointRecord{Thread: "t", ID: "c3", ParentID: "c1", Step: 1, Source: graph.SourceLoop}, nil)
	var conflict *graph.CheckpointConflictError
	require.ErrorAs(t, err, &conflict, "c1 is no longer the head")
	assert.Equal(t, "c2", conflict.Newest)
}
