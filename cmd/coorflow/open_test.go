package main

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// execSQL runs stmt on the SQLite file at path, as another program would.
func execSQL(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(t.Context(), stmt)
	require.NoError(t, err)
}

func TestADatabaseOfANewerVersionIsRefusedAndKept(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	id := threadOf(t, stdout)
	execSQL(t, c.db, `INSERT INTO store_schema (version) VALUES (99)`)

	code, _, stderr = c.run("threads", "show", id)
	assert.Equal(t, exitFailed, code)
	assert.Equal(t, "coorflow: sqlite: store schema is newer than this version supports: the database is at version 99, "+
		"this package knows up to 3 (opening "+c.db+")\n", stderr)

	code, stdout, stderr = c.run("threads", "list")
	assert.Equal(t, exitFailed, code, "a database that cannot be opened is not an empty one")
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "store schema is newer than this version supports")

	execSQL(t, c.db, `DELETE FROM store_schema WHERE version = 99`)
	code, stdout, stderr = c.run("threads", "list")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, id, "the thread is still there")
	assert.Len(t, c.listRuns(), 1, "and its run")
}

func TestARunGoesOnUnrecordedWhenTheRecordedRunsAreOfANewerVersion(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	execSQL(t, c.db, `INSERT INTO trace_schema (version) VALUES (99)`)

	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "coorflow: runs are not recorded: the recorded runs in "+c.db+
		": sqlite: trace schema is newer than this version supports: the database is at version 99, this package knows up to 1\n")
	id := threadOf(t, stdout)

	execSQL(t, c.db, `DELETE FROM trace_schema WHERE version = 99`)
	code, stdout, stderr = c.run("threads", "show", id)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "status      done\n", "the run was saved")
	assert.Len(t, c.listRuns(), 1, "though not recorded: only the first run is")
}

func TestThreadsListOfAMissingDatabaseSaysThereAreNone(t *testing.T) {
	c := newCLI(t)
	missing := t.TempDir() + "/none.db"
	code, stdout, stderr := c.run("threads", "list", "--db", missing)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "no threads (no database at "+missing+")\n", stdout)
}
