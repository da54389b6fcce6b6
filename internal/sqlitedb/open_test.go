package sqlitedb_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/sqlitedb"
)

// open opens path with o and closes it when t ends.
func open(t *testing.T, path string, o sqlitedb.Options) *sql.DB {
	t.Helper()
	db, err := sqlitedb.Open(path, o)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, db.Close()) })
	return db
}

func TestOpenRefusesDatabasesInMemory(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file::memory:?cache=shared", "file:x?mode=memory"} {
		_, err := sqlitedb.Open(path, sqlitedb.Options{})
		require.ErrorIs(t, err, sqlitedb.ErrNeedFile, "path %q", path)
		assert.EqualError(t, err, `sqlite: open "`+path+`": need a file`)
	}
}

func TestOpenSetsThePragmasOnEveryConnection(t *testing.T) {
	tests := []struct {
		name string
		o    sqlitedb.Options
		busy string
	}{
		{"default", sqlitedb.Options{}, "10000"},
		{"busy timeout", sqlitedb.Options{BusyTimeout: 1500 * time.Millisecond}, "1500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := open(t, filepath.Join(t.TempDir(), "p.db"), tt.o)
			// Two connections at once: the pragmas are not the first one's.
			ctx := t.Context()
			conns := make([]*sql.Conn, 2)
			for i := range conns {
				c, err := db.Conn(ctx)
				require.NoError(t, err)
				defer c.Close()
				conns[i] = c
			}
			_, err := conns[0].ExecContext(ctx, `CREATE TABLE t (x)`)
			require.NoError(t, err)
			for _, c := range conns {
				for pragma, want := range map[string]string{
					"journal_mode": "wal", "busy_timeout": tt.busy, "synchronous": "1", "foreign_keys": "1", "page_size": "1024",
				} {
					var got string
					require.NoError(t, c.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got))
					assert.Equal(t, want, got, pragma)
				}
			}
		})
	}
}

func TestOpenEscapesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?#% name.db")
	db := open(t, path, sqlitedb.Options{})
	_, err := db.ExecContext(t.Context(), `CREATE TABLE t (x)`)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Positive(t, fi.Size(), "the table is in the file of that name")
}

func TestOpenLeavesAnExistingFileAsItIs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kept.db")
	require.NoError(t, os.WriteFile(path, nil, 0o640))
	require.NoError(t, os.Chmod(path, 0o640))
	open(t, path, sqlitedb.Options{})
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "tightening is the caller's policy (the CLI does it with a notice)")
}

func TestOpenFailsWhereTheDirectoryCannotBeMade(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	path := filepath.Join(file, "sub", "x.db")
	_, err := sqlitedb.Open(path, sqlitedb.Options{})
	require.Error(t, err)
	assert.ErrorContains(t, err, "sqlite: open "+path+": mkdir "+file+": not a directory")
}
