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

// TestAWorkerRefusesARunThatRecordsAnotherCodeExecution: a worker started
// with --allow-code-exec refuses the steps of a run --temporal that
// records code execution off (its models would be shown another python
// tool than the run records, and its replay would diverge), saying what
// to change; run --temporal --allow-code-exec runs there, records the
// sandbox, and replays without divergence.
func TestAWorkerRefusesARunThatRecordsAnotherCodeExecution(t *testing.T) {
	url := freshDatabase(t)
	srv := temporaltest.Start(t, temporaltest.Options{})
	startWorker(t, newCLI(t), "--temporal", srv.HostPort, "--queue", "exec", "--demo", "--allow-code-exec", "--db", url, "../../examples/coor")

	c := newCLI(t)
	c.db = url
	code, _, stderr := c.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "exec", "--input", coorInput)
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, stderr, "this worker runs code (worker --allow-code-exec), but the run was started for workers that do not (code execution off)")

	code, stdout, stderr := c.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "exec", "--allow-code-exec", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	id := runOf(t, stdout)
	assert.Equal(t, runs.CodeExecSandbox, recordedEnv(t, c, id).CodeExec)
	replayNoDivergence(t, c, id)
}
