//go:build linux

package tools_test

import (
	"context"
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

// spawnAndSleep starts a child `sleep 3600`, writes the pids of the
// interpreter and of the child to pidFile (atomically), then sleeps.
func spawnAndSleep(pidFile string) string {
	return "import os, subprocess, time\nchild = subprocess.Popen(['sleep', '3600'])\n" +
		fmt.Sprintf("open(%q + '.tmp', 'w').write(f'{os.getpid()} {child.pid}')\nos.rename(%q + '.tmp', %q)\n", pidFile, pidFile, pidFile) +
		"time.sleep(3600)"
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

// waitForPids waits for the code to write its pids: the event the test
// synchronizes on, however slowly the machine starts python.
func waitForPids(t *testing.T, pidFile string, done <-chan callResult) []int {
	t.Helper()
	var (
		text  string
		ended *callResult
	)
	require.Eventually(t, func() bool {
		select {
		case r := <-done:
			ended = &r
			return true
		default:
		}
		b, err := os.ReadFile(pidFile)
		text = string(b)
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the code never wrote its pids")
	require.Nil(t, ended, "the call ended before the code wrote its pids")
	return parsePids(t, text)
}

// requireAllDead waits for the kernel to finish killing pids (SIGKILL to
// a process group is delivered at once but takes effect asynchronously).
func requireAllDead(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		assert.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 10*time.Millisecond, "process %d still alive", pid)
	}
}

type callResult struct {
	out string
	err error
}

// callAsync calls tool with code in a goroutine; the result arrives on the
// channel. The test waits for it before it ends.
func callAsync(t *testing.T, ctx context.Context, tool tools.Tool, code string) <-chan callResult {
	t.Helper()
	args := pythonArgs(t, code)
	done := make(chan callResult, 1)
	go func() {
		out, err := tool.Call(ctx, args)
		done <- callResult{out, err}
	}()
	return done
}

// TestPythonTimeoutKillsTheProcessGroup (sandbox off): the timeout fires
// once the code and its child are known to run (issue 15: it used to be a
// real three-second timeout that a loaded machine could beat).
func TestPythonTimeoutKillsTheProcessGroup(t *testing.T) {
	requirePython(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	tool := tools.Python(direct(tools.PythonConfig{Timeout: 3 * time.Second}))
	timeout := make(chan time.Time)
	tools.PythonTimesOutOn(tool, timeout)

	done := callAsync(t, t.Context(), tool, spawnAndSleep(pidFile))
	pids := waitForPids(t, pidFile, done)
	require.True(t, alive(pids[0]) && alive(pids[1]), "both processes run before the timeout")

	close(timeout)
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, "timed out after 3s: the process and its children were killed\n(no output)", r.out)
	requireAllDead(t, pids)
}

func TestPythonCancelKillsTheProcessGroup(t *testing.T) {
	requirePython(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := callAsync(t, ctx, tools.Python(direct(tools.PythonConfig{})), spawnAndSleep(pidFile))
	pids := waitForPids(t, pidFile, done)
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
	res := runPython(t, direct(tools.PythonConfig{}),
		"import os, subprocess\nchild = subprocess.Popen(['sleep', '3600'])\nprint(os.getpid(), child.pid)")
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	head := "exit code: 0\noutput:\n"
	require.True(t, strings.HasPrefix(res.Output, head), res.Output)
	requireAllDead(t, parsePids(t, strings.TrimPrefix(res.Output, head)))
}
