//go:build temporal

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/temporaltest"
	"github.com/coorflow/coorflow/runs"
)

// TestARunOnTemporalReplaysWithTheWorkersEnvironment: the nodes of run
// --temporal run on the workers, which compile code execution off (no
// --allow-code-exec): the run compiles and records that environment, and
// its replay does not diverge, where it used to compile code execution on
// and diverge at every agent the python tool is given to.
func TestARunOnTemporalReplaysWithTheWorkersEnvironment(t *testing.T) {
	url := freshDatabase(t)
	srv := temporaltest.Start(t, temporaltest.Options{})
	startWorker(t, newCLI(t), "--temporal", srv.HostPort, "--queue", "env", "--demo", "--db", url, "../../examples/coor")

	c := newCLI(t)
	c.db = url
	code, stdout, stderr := c.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "env", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	id := runOf(t, stdout)
	assert.Equal(t, runs.CodeExecOff, recordedEnv(t, c, id).CodeExec)
	replayNoDivergence(t, c, id)
}
