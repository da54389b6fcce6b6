//go:build linux

package tools_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/tools"
)

// TestSandboxMeasuresItsLimits takes each resource from inside the
// sandbox until it is refused (testdata/sandbox_limits.py) and checks
// that it stopped at its limit; the figures are logged. It runs with
// small limits; COORFLOW_SANDBOX_MEASURE=defaults runs it with the
// default ones, the figures of SECURITY.md (about 1.3 GiB of memory for a
// moment):
//
//	COORFLOW_SANDBOX_MEASURE=defaults go test -run TestSandboxMeasuresItsLimits -v ./tools/
func TestSandboxMeasuresItsLimits(t *testing.T) {
	requireSandbox(t)
	const mib = 1 << 20
	limits := tools.SandboxLimits{Memory: 256 * mib, Processes: 16, FileSize: 8 * mib, TempSize: 16 * mib, OpenFiles: 64}
	if os.Getenv("COORFLOW_SANDBOX_MEASURE") == "defaults" {
		limits = tools.SandboxLimits{}
	}
	script, err := os.ReadFile("testdata/sandbox_limits.py")
	require.NoError(t, err)
	tool := tools.Python(tools.PythonConfig{Timeout: 10 * time.Minute, Sandbox: tools.SandboxConfig{Limits: limits}})
	tools.PythonTimesOutOn(tool, nil) // never: the limits end each part
	res := tools.Run(t.Context(), tool, pythonArgs(t, string(script)), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	head := okOutput("")
	require.True(t, strings.HasPrefix(res.Output, head), res.Output)
	var m struct {
		AllocatedMiB    int      `json:"allocated_mib"`
		ResidentMiB     int      `json:"resident_mib"`
		Forks           int      `json:"forks"`
		ForkError       string   `json:"fork_error"`
		TmpMiB          int      `json:"/tmp_mib"`
		TmpError        string   `json:"/tmp_error"`
		ShmMiB          int      `json:"/dev/shm_mib"`
		ShmError        string   `json:"/dev/shm_error"`
		FileMiB         int      `json:"file_mib"`
		FileError       string   `json:"file_error"`
		Memfd           string   `json:"memfd"`
		Socketpairs     int      `json:"socketpairs"`
		SocketQueuedMiB int      `json:"socket_queued_mib"`
		Pipes           int      `json:"pipes"`
		PipeQueuedMiB   int      `json:"pipe_queued_mib"`
		OpenFiles       int      `json:"open_files"`
		Seccomp         []string `json:"seccomp"`
	}
	out := strings.TrimPrefix(res.Output, head)
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	t.Logf("measured: %s", out)

	// The defaults, where the limits were left zero.
	l := limits
	if l.Memory == 0 {
		l = tools.SandboxLimits{Memory: tools.DefaultSandboxMemory, Processes: tools.DefaultSandboxProcesses,
			FileSize: tools.DefaultSandboxFileSize, TempSize: tools.DefaultSandboxTempSize, OpenFiles: tools.DefaultSandboxOpenFiles}
	}
	memMiB, tempMiB := int(l.Memory/mib), int(l.TempSize/mib)
	assert.Less(t, m.AllocatedMiB, memMiB, "a process allocates less than its address space")
	assert.Greater(t, m.AllocatedMiB, memMiB/2, "and most of it")
	assert.LessOrEqual(t, m.ResidentMiB, memMiB)
	assert.Equal(t, l.Processes-2, m.Forks, "pid 1 and the code count")
	assert.Equal(t, "EAGAIN", m.ForkError)
	for _, fill := range []struct {
		name string
		mib  int
		err  string
	}{{"/tmp", m.TmpMiB, m.TmpError}, {"/dev/shm", m.ShmMiB, m.ShmError}} {
		assert.Equal(t, "No space left on device", fill.err, fill.name)
		assert.True(t, fill.mib == tempMiB || fill.mib == tempMiB-1, "%s held %d MiB of %d", fill.name, fill.mib, tempMiB)
	}
	assert.Equal(t, int(l.FileSize/mib), m.FileMiB)
	assert.Equal(t, "File too large", m.FileError)
	assert.Equal(t, "Operation not permitted", m.Memfd)
	assert.Equal(t, l.OpenFiles, m.OpenFiles)
	assert.LessOrEqual(t, 2*m.Socketpairs, l.OpenFiles)
	assert.LessOrEqual(t, m.SocketQueuedMiB, m.Socketpairs, "at most 1 MiB queued in a socket pair")
	assert.LessOrEqual(t, 2*m.Pipes, l.OpenFiles)
	assert.LessOrEqual(t, m.PipeQueuedMiB, m.Pipes, "at most 1 MiB queued in a pipe")
	assert.Equal(t, []string{"0000000000000000", "1", "2"}, m.Seccomp, "no capabilities, no new privileges, a seccomp filter")
}
