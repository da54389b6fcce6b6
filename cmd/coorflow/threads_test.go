package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThreadsListSaysWhereEachThreadStandsAndRmRemovesItsRuns: a thread
// waiting for its review and a finished one are told apart in threads
// list, and threads rm takes the thread's recorded runs with it.
func TestThreadsListSaysWhereEachThreadStandsAndRmRemovesItsRuns(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/research", "--input", "How fast is SQLite?")
	require.Equal(t, exitInterrupted, code, stderr)
	waiting := threadOf(t, stdout)
	runs := c.listRuns("--thread", waiting)
	require.Len(t, runs, 1)
	waitingRun := runs[0].ID
	code, stdout, stderr = c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	done, doneRun := threadOf(t, stdout), runOf(t, stdout)

	code, list, stderr := c.run("threads", "list")
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `^THREAD +WORKFLOW +STATUS +LAST RUN +CHECKPOINTS +UPDATED\n`, list)
	assert.Regexp(t, `(?m)^`+waiting+` +research +waiting +`+waitingRun+` +\d+ `, list)
	assert.Regexp(t, `(?m)^`+done+` +coor +done +`+doneRun+` +\d+ `, list)

	require.Len(t, c.listRuns("--thread", done), 1)
	code, stdout, stderr = c.run("threads", "rm", done)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "removed thread "+done+" and its 1 recorded run\n", stdout)
	assert.Empty(t, c.listRuns("--thread", done), "runs list shows no run of a removed thread")
	code, _, stderr = c.run("runs", "show", doneRun)
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, stderr, doneRun)

	first := c.listRuns("--thread", waiting)
	require.Len(t, first, 1, "the other thread keeps its run")
	code, list, _ = c.run("threads", "list")
	require.Equal(t, exitOK, code)
	assert.NotRegexp(t, regexp.MustCompile(`(?m)^`+done), list)
}
