//go:build linux

package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/tools"
)

// spawnAndSleep prints (or writes to pidFile) the pids of the interpreter and
// of a child `sleep 60`, then sleeps.
func spawnAndSleep(pidFile string) string {
	report := "print(os.getpid(), child.pid, flush=True)"
	if pidFile != "" {
		report = fmt.Sprintf("open(%q + '.tmp', 'w').write(f'{os.getpid()} {child.pid}')\nos.rename(%q + '.tmp', %q)", pidFile, pidFile, pidFile)
	}
	return "import os, subprocess, time\nchild = subprocess.Popen(['sleep', '60'])\n" + report + "\ntime.sleep(60)"
}

// alive reports whether pid is a live process (a zombie counts as dead: it
// has exited and only waits to be reaped by its new parent).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// parsePids reads "pid childpid" and makes sure the processes are killed
// when the test ends, whatever happens.
func parsePids(t *testing.T, s string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(s) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err, "pid in %q", s)
		pids = append(pids, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	require.Len(t, pids, 2)
	return pids
}

// requireAllDead waits for the kernel to finish killing pids.
func requireAllDead(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		assert.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 10*time.Millisecond, "process %d still alive", pid)
	}
}

func TestPythonTimeoutKillsTheProcessGroup(t *testing.T) {
	requirePython(t)
	// Three seconds leave a loaded machine time to start python and print.
	res := runPython(t, tools.PythonConfig{Timeout: 3 * time.Second}, spawnAndSleep(""))
	// The tool's own timeout fires before Run's, so the model gets the output so far.
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	head := "timed out after 3s: the process and its children were killed\noutput:\n"
	require.True(t, strings.HasPrefix(res.Output, head), res.Output)
	pids := parsePids(t, strings.TrimPrefix(res.Output, head))
	assert.GreaterOrEqual(t, res.Duration, 3*time.Second)
	requireAllDead(t, pids)
}

func TestPythonCancelKillsTheProcessGroup(t *testing.T) {
	requirePython(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	args, err := json.Marshal(map[string]string{"code": spawnAndSleep(pidFile)})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type ret struct {
		out string
		err error
	}
	done := make(chan ret, 1)
	go func() {
		out, err := tools.Python(tools.PythonConfig{}).Call(ctx, args)
		done <- ret{out, err}
	}()
	var pids []int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pids = parsePids(t, string(b))
		return true
	}, 10*time.Second, 10*time.Millisecond, "the code never wrote its pids")
	require.True(t, alive(pids[0]) && alive(pids[1]), "both processes run before the cancel")

	cancel()
	r := <-done
	require.ErrorIs(t, r.err, context.Canceled)
	assert.EqualError(t, r.err, "tools: python: context canceled")
	assert.Empty(t, r.out)
	requireAllDead(t, pids)
}

func TestPythonKillsProcessesLeftRunning(t *testing.T) {
	requirePython(t)
	res := runPython(t, tools.PythonConfig{},
		"import os, subprocess\nchild = subprocess.Popen(['sleep', '60'])\nprint(os.getpid(), child.pid)")
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	head := "exit code: 0\noutput:\n"
	require.True(t, strings.HasPrefix(res.Output, head), res.Output)
	requireAllDead(t, parsePids(t, strings.TrimPrefix(res.Output, head)))
}
