package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/sqlitedb"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/sqlite"
	"github.com/coorflow/coorflow/trace/tracetest"
)

func open(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "trace.db"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func TestStore(t *testing.T) {
	tracetest.Run(t, func(t *testing.T) trace.Store { return open(t) })
}

func TestReopenKeepsRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.db")
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, s.CreateRun(t.Context(), trace.RunInfo{ID: "r1", Status: trace.StatusRunning, Start: trace.StartInput}))
	require.NoError(t, s.Close())

	s, err = sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Run(t.Context(), "r1")
	require.NoError(t, err)
	assert.Equal(t, trace.StatusRunning, got.Status)
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name, path, want string
	}{
		{"empty path", "", `sqlite: open "": need a file; for a store in memory use trace/memory`},
		{"in memory", ":memory:", `sqlite: open ":memory:": need a file; for a store in memory use trace/memory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sqlite.Open(t.Context(), tt.path)
			assert.EqualError(t, err, tt.want)
		})
	}
}

func TestClosedStore(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "trace.db"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.CreateRun(t.Context(), trace.RunInfo{ID: "r1"}), trace.ErrClosed)
	_, err = s.Run(t.Context(), "r1")
	assert.ErrorIs(t, err, trace.ErrClosed)
}

func TestNewCreatesTablesOnFirstUseAndLeavesDBOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.db")
	db, err := sqlitedb.Open(path, sqlitedb.Options{})
	require.NoError(t, err)
	defer db.Close()
	s := sqlite.New(db)
	var tables int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE type = 'table'`).Scan(&tables))
	assert.Zero(t, tables, "New does no I/O")

	require.NoError(t, s.Migrate(t.Context()))
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name LIKE 'trace_%'`).Scan(&tables))
	assert.Equal(t, 3, tables, "trace_runs, trace_events, trace_schema")
	require.NoError(t, s.CreateRun(t.Context(), trace.RunInfo{ID: "r1", Status: trace.StatusRunning, Start: trace.StartInput}))
	require.NoError(t, s.Close())
	require.NoError(t, db.PingContext(t.Context()), "Close leaves a caller-owned db open")
	assert.ErrorIs(t, s.CreateRun(t.Context(), trace.RunInfo{ID: "r2"}), trace.ErrClosed)
}

func TestNewRefusesASingleConnection(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "one.db"))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	s := sqlite.New(db)
	assert.ErrorContains(t, s.CreateRun(t.Context(), trace.RunInfo{ID: "r1"}), "one connection")
}
