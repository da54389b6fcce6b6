//go:build temporal

package main

import (
	"os"
	"path/filepath"
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

// TestARunOnTemporalCarriesItsConfigToTheWorkers: run --temporal --config
// gives the workers' nodes the run's config, which the file's expressions
// read.
func TestARunOnTemporalCarriesItsConfigToTheWorkers(t *testing.T) {
	url := freshDatabase(t)
	srv := temporaltest.Start(t, temporaltest.Options{})
	path := filepath.Join(t.TempDir(), "configured.yaml")
	require.NoError(t, os.WriteFile(path, []byte(configuredFile), 0o600))
	startWorker(t, newCLI(t), "--temporal", srv.HostPort, "--queue", "cfg", "--db", url, path)

	c := newCLI(t)
	c.db = url
	code, stdout, stderr := c.run("run", path, "--temporal", srv.HostPort, "--queue", "cfg", "--input", "ada", "--config", "shout=true", "--config", "greeting=hi")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "HI ADA")
}
