package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/postgres"
	"github.com/coorflow/coorflow/trace/tracetest"
)

func TestStore(t *testing.T) {
	pool := pgtest.Pool(t)
	tracetest.Run(t, func(t *testing.T) trace.Store {
		s := postgres.New(pool, postgres.WithSchema(pgtest.Schema(t, pool, "coorflow_trace_test_")))
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		return s
	})
}

func TestOpenCreatesTheTablesAndOwnsThePool(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_trace_test_")
	s, err := postgres.Open(t.Context(), pgtest.URL(), postgres.WithSchema(schema))
	require.NoError(t, err)
	require.NoError(t, s.CreateRun(t.Context(), trace.RunInfo{ID: "r1", Status: trace.StatusRunning, Start: trace.StartInput, StartedAt: time.Now()}))
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, "trace_runs"}.Sanitize()).Scan(&n))
	assert.Equal(t, 1, n)
	require.NoError(t, s.Close())
	_, err = s.Run(t.Context(), "r1")
	assert.ErrorIs(t, err, trace.ErrClosed)
}

func TestSchemaTooNewIsRefused(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_trace_test_")
	s := postgres.New(pool, postgres.WithSchema(schema))
	_, err := s.Runs(t.Context(), trace.RunQuery{})
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{schema, "trace_schema"}.Sanitize()+` (version) VALUES (99)`)
	require.NoError(t, err)
	_, err = postgres.Open(t.Context(), pgtest.URL(), postgres.WithSchema(schema))
	assert.ErrorIs(t, err, postgres.ErrSchemaTooNew)
}
