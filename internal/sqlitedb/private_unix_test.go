//go:build unix

package sqlitedb_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/sqlitedb"
)

// TestOpenCreatesFilesOnlyItsUserCanRead runs with umask 0, where SQLite
// would create the database, -wal and -shm files 0644 and a directory
// 0777: every backend's Open goes through sqlitedb.Open, so each gets
// 0600 files in 0700 directories.
func TestOpenCreatesFilesOnlyItsUserCanRead(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "a", "b", "x.db")
	db := open(t, path, sqlitedb.Options{})
	_, err := db.ExecContext(t.Context(), `CREATE TABLE t (x)`) // makes the -wal and -shm files
	require.NoError(t, err)

	for _, dir := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
		assert.Equal(t, os.FileMode(0o700), mode(t, dir), dir)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		assert.Equal(t, os.FileMode(0o600), mode(t, f), f)
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Mode().Perm()
}
