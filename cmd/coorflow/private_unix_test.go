//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

// TestTheDatabaseIsTheUsersAlone is the regression test of security
// finding 9 (issue 11) for files: .coorflow/ was created 0755 and the
// database 0644, readable by every user of the machine. It runs with umask
// 0, where SQLite's own default would make the files 0644 and a directory
// 0777.
func TestTheDatabaseIsTheUsersAlone(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	var stderr bytes.Buffer
	a := &app{stderr: &stderr}
	path := filepath.Join(t.TempDir(), "project", ".coorflow", "coorflow.db")
	d, err := a.openDB(t.Context(), path, false)
	require.NoError(t, err)
	_, err = d.traceStore(t.Context()) // every store has written its tables
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), mode(t, filepath.Dir(path)), "the data directory")
	assert.Equal(t, os.FileMode(0o700), mode(t, filepath.Dir(filepath.Dir(path))), "a directory created on the way")
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		assert.Equal(t, os.FileMode(0o600), mode(t, f), f)
	}
	d.Close()
	assert.Empty(t, stderr.String())
}

func TestADatabaseLeftOpenToOthersIsTightened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".coorflow")
	path := filepath.Join(dir, "coorflow.db")
	c := &cli{t: t, db: path, env: map[string]string{}}
	code, _, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	require.NoError(t, os.Chmod(dir, 0o755)) // as an earlier version left them
	require.NoError(t, os.Chmod(path, 0o644))
	shared := filepath.Join(t.TempDir(), "shared")
	require.NoError(t, os.Mkdir(shared, 0o755))
	require.NoError(t, os.Chmod(shared, 0o755))

	code, _, stderr = c.run("threads", "list")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "coorflow: "+dir+" could be read by other users (mode 0755): its mode is now 0700\n"+
		"coorflow: "+path+" could be read by other users (mode 0644): its mode is now 0600\n", stderr)
	assert.Equal(t, os.FileMode(0o700), mode(t, dir))
	assert.Equal(t, os.FileMode(0o600), mode(t, path))
	assert.Len(t, c.listRuns(), 1, "the threads and runs are all there")

	code, _, stderr = c.run("threads", "list")
	require.Equal(t, exitOK, code)
	assert.Empty(t, stderr, "said once")

	c.db = filepath.Join(shared, "team.db")
	code, _, stderr = c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, os.FileMode(0o755), mode(t, shared), "a directory that is not coorflow's own is the user's to set")
	assert.Equal(t, os.FileMode(0o600), mode(t, c.db))
}
