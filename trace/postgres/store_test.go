package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/postgres"
	"github.com/coorflow/coorflow/trace/tracetest"
)

// connString is the test server: COORFLOW_TEST_POSTGRES, or the local one.
func connString() string {
	if s := os.Getenv("COORFLOW_TEST_POSTGRES"); s != "" {
		return s
	}
	return "postgres://postgres@127.0.0.1:5432/test"
}

// testPool connects to the test server, and skips the test only when it
// cannot connect at all.
func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, connString())
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		t.Skipf("postgres: cannot connect to %s (set COORFLOW_TEST_POSTGRES): %v", connString(), err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// freshSchema returns the name of a schema no test uses, dropped with
// everything in it when the test ends.
func freshSchema(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "coorflow_trace_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		_, err := pool.Exec(context.WithoutCancel(t.Context()), `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
		assert.NoError(t, err, "drop schema %s", name)
	})
	return name
}

func TestStore(t *testing.T) {
	pool := testPool(t)
	tracetest.Run(t, func(t *testing.T) trace.Store {
		s := postgres.New(pool, postgres.WithSchema(freshSchema(t, pool)))
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		return s
	})
}

func TestOpenCreatesTheTablesAndOwnsThePool(t *testing.T) {
	pool := testPool(t)
	schema := freshSchema(t, pool)
	s, err := postgres.Open(t.Context(), connString(), postgres.WithSchema(schema))
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
	pool := testPool(t)
	schema := freshSchema(t, pool)
	s := postgres.New(pool, postgres.WithSchema(schema))
	_, err := s.Runs(t.Context(), trace.RunQuery{})
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{schema, "trace_schema"}.Sanitize()+` (version) VALUES (99)`)
	require.NoError(t, err)
	_, err = postgres.Open(t.Context(), connString(), postgres.WithSchema(schema))
	assert.ErrorIs(t, err, postgres.ErrSchemaTooNew)
}
