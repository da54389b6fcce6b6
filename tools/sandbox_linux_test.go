//go:build linux

package tools_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/tools"
)

// The escapes of issue 11, finding 1, each tried from inside the sandbox.
// Every test here fails when the code runs unconfined (the sandbox off,
// as on main before the sandbox): check with
// COORFLOW_TEST_SANDBOX_OFF=1 go test -run Sandbox ./tools.

// sandboxed is the configuration these tests run the code with.
func sandboxed(t *testing.T, cfg tools.PythonConfig) tools.PythonConfig {
	t.Helper()
	if os.Getenv("COORFLOW_TEST_SANDBOX_OFF") != "" {
		return direct(cfg)
	}
	requireSandbox(t)
	return cfg
}

// marker returns a string no other process has in its command line.
func marker(t *testing.T) string {
	t.Helper()
	return "coorflow-sandbox-test-" + rand.Text()
}

// processesWith returns the live processes of this host whose command
// line contains marker.
func processesWith(t *testing.T, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(cmdline), marker) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processesIn returns the processes of this host in the PID namespace ns
// ("pid:[4026532181]").
func processesIn(t *testing.T, ns string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && link == ns {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hostUID is the real uid of pid as this host sees it.
func hostUID(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			return uid
		}
	}
	require.FailNow(t, "no Uid line", "%s", status)
	return -1
}

// session is the session id of pid, as this host numbers it.
func session(t *testing.T, pid int) string {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	require.Greater(t, len(fields), 3, s)
	return fields[3] // state, ppid, pgrp, session
}

// waitForProcesses waits until at least n processes carry marker, or the
// call ends; it returns them.
func waitForProcesses(t *testing.T, marker string, n int, done <-chan callResult) []int {
	t.Helper()
	var (
		pids  []int
		ended *callResult
	)
	require.Eventually(t, func() bool {
		select {
		case r := <-done:
			ended = &r
			return true
		default:
		}
		pids = processesWith(t, marker)
		return len(pids) >= n
	}, time.Minute, 10*time.Millisecond, "fewer than %d processes ever carried the marker", n)
	require.Nil(t, ended, "the call ended before the code's processes were seen")
	return pids
}

// TestSandboxHidesTheParentsEnvironment: the code cannot read this
// process's environment, neither its own nor through /proc.
func TestSandboxHidesTheParentsEnvironment(t *testing.T) {
	secret := "s3cret-" + rand.Text()
	t.Setenv("COORFLOW_TEST_SECRET", secret)
	cfg := sandboxed(t, tools.PythonConfig{})
	code := fmt.Sprintf(`import os
print("environ:", sorted(os.environ))
for name, pid in (("parent", os.getppid()), ("init", 1), ("test", %d)):
    try:
        print(name + ":", open("/proc/%%d/environ" %% pid, "rb").read())
    except OSError as e:
        print(name + ":", type(e).__name__)
leaked = []
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            leaked += [p] if b"COORFLOW_TEST_SECRET" in open("/proc/" + p + "/environ", "rb").read() else []
        except OSError:
            pass
print("leaked:", leaked)
`, os.Getpid())
	res := runPython(t, cfg, code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.NotContains(t, res.Output, secret)
	assert.Equal(t, "exit code: 0\noutput:\n"+
		"environ: ['HOME', 'LANG', 'PATH', 'PWD', 'PYTHONDONTWRITEBYTECODE', 'PYTHONIOENCODING', 'PYTHONUNBUFFERED', 'TMPDIR']\n"+
		// The parent is the sandbox's init, pid 1, started with the same
		// empty environment, and undumpable: the code reads none of it.
		"parent: PermissionError\n"+
		"init: PermissionError\n"+
		"test: FileNotFoundError\n"+
		"leaked: []\n", res.Output)
}

// TestSandboxHidesTheServersFiles: a database in the server's data
// directory, the working directory and the home directories are absent.
func TestSandboxHidesTheServersFiles(t *testing.T) {
	cfg := sandboxed(t, tools.PythonConfig{})
	data := t.TempDir()
	db := filepath.Join(data, "coorflow.db")
	require.NoError(t, os.WriteFile(db, []byte("SQLite format 3\x00 every owner's threads"), 0o644))
	wd, err := os.Getwd()
	require.NoError(t, err)
	code := fmt.Sprintf(`import os
for p in (%q, %q, %q, "/root", "/home", "/work", "/var", "/run", "/sys"):
    try:
        print(p, "listed" if os.path.isdir(p) and os.listdir(p) is not None else open(p, "rb").read())
    except OSError as e:
        print(p, type(e).__name__)
print(sorted(os.listdir("/")))
`, db, data, wd)
	res := runPython(t, cfg, code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.NotContains(t, res.Output, "every owner's threads")
	assert.Equal(t, "exit code: 0\noutput:\n"+
		db+" FileNotFoundError\n"+data+" FileNotFoundError\n"+wd+" FileNotFoundError\n"+
		"/root FileNotFoundError\n/home FileNotFoundError\n/work FileNotFoundError\n/var FileNotFoundError\n"+
		"/run FileNotFoundError\n/sys FileNotFoundError\n"+
		systemRoot(t)+"\n", res.Output)
}

// systemRoot is what the sandbox's / holds: the system's directories
// and links, and its own /dev, /etc, /proc and /tmp.
func systemRoot(t *testing.T) string {
	t.Helper()
	names := []string{"'dev'", "'etc'", "'proc'", "'tmp'", "'usr'"}
	for _, d := range []string{"bin", "lib", "lib32", "lib64", "libx32", "sbin"} {
		if _, err := os.Stat("/" + d); err == nil {
			names = append(names, "'"+d+"'")
		}
	}
	slices.Sort(names)
	return "[" + strings.Join(names, ", ") + "]"
}

// TestSandboxConfinesWrites: the code writes only to its /tmp, and only
// within the limits of file and directory size.
func TestSandboxConfinesWrites(t *testing.T) {
	cfg := sandboxed(t, tools.PythonConfig{Sandbox: tools.SandboxConfig{Limits: tools.SandboxLimits{FileSize: 1 << 20, TempSize: 4 << 20}}})
	outside := t.TempDir()
	code := fmt.Sprintf(`import os
def write(p, n=1):
    try:
        with open(p, "wb") as f:
            for _ in range(n):
                f.write(b"x" * (1 << 20))
        return "written"
    except OSError as e:
        return os.strerror(e.errno)
for p in (%q, "/escaped", "/usr/escaped", "/etc/escaped", "/dev/escaped", "/proc/escaped"):
    print(p, write(p))
print("/tmp/ok", write("/tmp/ok"))
print("/tmp/big", write("/tmp/big", 2))
for i in range(10):
    err = write("/tmp/f%%d" %% i)
    if err != "written":
        print("/tmp filled after", i, "more MiB:", err)
        break
`, filepath.Join(outside, "escaped"))
	res := runPython(t, cfg, code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written outside the sandbox")
	assert.Equal(t, "exit code: 0\noutput:\n"+
		filepath.Join(outside, "escaped")+" No such file or directory\n"+
		"/escaped Read-only file system\n/usr/escaped Read-only file system\n/etc/escaped Read-only file system\n"+
		"/dev/escaped Read-only file system\n/proc/escaped No such file or directory\n"+
		"/tmp/ok written\n"+
		"/tmp/big File too large\n"+ // FileSize: 1 MiB
		"/tmp filled after 1 more MiB: No space left on device\n", res.Output) // TempSize: 4 MiB, 2 used by ok and big
}

// TestSandboxTimeoutKillsASetsidGrandchild: a grandchild in a session of
// its own, double-forked away from the code, which keeps trying to write
// a file, is gone when the call returns after the timeout, with every
// other process of the sandbox.
func TestSandboxTimeoutKillsASetsidGrandchild(t *testing.T) {
	cfg := sandboxed(t, tools.PythonConfig{Timeout: time.Hour})
	mark := marker(t)
	escaped := filepath.Join(t.TempDir(), "escaped")
	code := fmt.Sprintf(`import os, sys, time
escapee = """import os, sys, time
os.write(int(sys.argv[1]), b"1")
while True:
    for p in (%q, "/tmp/escaped"):
        try:
            open(p, "a").write("still here")
        except OSError:
            pass
    time.sleep(0.01)
"""
r, w = os.pipe()
os.set_inheritable(w, True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", escapee, str(w), %q])
    os._exit(0)
os.close(w)
os.read(r, 1)
print("the grandchild runs", flush=True)
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)", %q])
`, escaped, mark, mark)
	tool := tools.Python(cfg)
	timeout := make(chan time.Time)
	tools.PythonTimesOutOn(tool, timeout)
	done := callAsync(t, t.Context(), tool, code)

	t.Cleanup(func() { killMarked(t, mark) })
	// The grandchild, then the code once it has printed, carry the marker.
	pids := waitForProcesses(t, mark, 2, done)
	require.Len(t, pids, 2)
	sessions := map[string]bool{}
	for _, pid := range pids {
		sessions[session(t, pid)] = true
		if os.Geteuid() == 0 && cfg.Sandbox.Mode == tools.SandboxRequired {
			assert.Equal(t, 65534, hostUID(t, pid), "the code runs as nobody on this host too")
		}
	}
	require.Len(t, sessions, 2, "the grandchild has a session of its own")
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pids[0]))
	require.NoError(t, err)

	close(timeout)
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, "timed out after 1h0m0s: the process and its children were killed\noutput:\nthe grandchild runs\n", r.out)
	// No waiting: when the call returns, the sandbox is gone.
	assert.Empty(t, processesWith(t, mark), "the grandchild outlived the call")
	assert.Empty(t, processesIn(t, ns), "processes of the sandbox's PID namespace outlived the call")
	assert.NoFileExists(t, escaped)
}

// TestSandboxBoundsAForkBomb: a fork bomb reaches the process limit and
// no further; the call times out and every process of it is gone; this
// host can still start processes.
func TestSandboxBoundsAForkBomb(t *testing.T) {
	const limit = 16
	cfg := sandboxed(t, tools.PythonConfig{Timeout: time.Hour, Sandbox: tools.SandboxConfig{Limits: tools.SandboxLimits{Processes: limit}}})
	if cfg.Sandbox.Mode == tools.SandboxOff {
		t.Skip("a fork bomb is not run unconfined")
	}
	mark := marker(t)
	code := fmt.Sprintf(`import os, sys, time
if len(sys.argv) == 1:
    os.execv(sys.executable, [sys.executable, "main.py", %q])
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
`, mark)
	tool := tools.Python(cfg)
	timeout := make(chan time.Time)
	tools.PythonTimesOutOn(tool, timeout)
	done := callAsync(t, t.Context(), tool, code)

	// The limit counts the sandbox's init too.
	t.Cleanup(func() { killMarked(t, mark) })
	pids := waitForProcesses(t, mark, limit-1, done)
	assert.Len(t, pids, limit-1, "the bomb stops at the limit")
	assert.LessOrEqual(t, len(processesWith(t, mark)), limit-1, "the bomb stays at the limit")

	close(timeout)
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, "timed out after 1h0m0s: the process and its children were killed\n(no output)", r.out)
	assert.Empty(t, processesWith(t, mark), "processes of the bomb outlived the call")
	out, err := exec.Command("true").CombinedOutput()
	assert.NoError(t, err, "this host starts processes: %s", out)
}

// TestSandboxBoundsMemory: a memory hog gets a MemoryError at the
// address-space limit.
func TestSandboxBoundsMemory(t *testing.T) {
	cfg := sandboxed(t, tools.PythonConfig{Sandbox: tools.SandboxConfig{Limits: tools.SandboxLimits{Memory: 256 << 20}}})
	res := runPython(t, cfg, `hog = []
while len(hog) < 2048:  # 2 GiB
    hog.append(bytearray(1 << 20))
print("allocated", len(hog), "MiB")`)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.True(t, strings.HasPrefix(res.Output, "exit code: 1\noutput:\nTraceback (most recent call last):\n"), res.Output)
	assert.True(t, strings.HasSuffix(res.Output, "\nMemoryError\n"), res.Output)
}

// TestSandboxBoundsCPUTime: code that spins is killed at its CPU-time
// limit, with a result that names the signal; the tool's own timeout
// never fires.
func TestSandboxBoundsCPUTime(t *testing.T) {
	cfg := sandboxed(t, tools.PythonConfig{Timeout: time.Hour, Sandbox: tools.SandboxConfig{Limits: tools.SandboxLimits{CPU: time.Second}}})
	if cfg.Sandbox.Mode == tools.SandboxOff {
		t.Skip("without the sandbox the code spins until the timeout")
	}
	tool := tools.Python(cfg)
	tools.PythonTimesOutOn(tool, nil) // never
	res := tools.Run(t.Context(), tool, pythonArgs(t, "while True:\n    pass"), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "exit code: 152 (killed by signal 24: CPU time limit exceeded)\n(no output)", res.Output)
}

// TestSandboxHasNoNetwork: a listener of this host is out of reach
// unless the network is allowed.
func TestSandboxHasNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var accepted atomic.Int32
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-served })
	port := ln.Addr().(*net.TCPAddr).Port
	code := fmt.Sprintf(`import socket
try:
    socket.create_connection(("127.0.0.1", %d), timeout=30).close()
    print("connected")
except OSError as e:
    print(type(e).__name__)
`, port)

	res := runPython(t, sandboxed(t, tools.PythonConfig{}), code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "exit code: 0\noutput:\nConnectionRefusedError\n", res.Output, "the sandbox's loopback is its own")
	assert.Zero(t, accepted.Load())

	// The same code reaches the listener when the network is allowed.
	res = runPython(t, sandboxed(t, tools.PythonConfig{Sandbox: tools.SandboxConfig{Network: true}}), code)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "exit code: 0\noutput:\nconnected\n", res.Output)
}

// TestSandboxRefusesWithoutBubblewrap: where the sandbox cannot be set
// up, nothing runs and the error says why.
func TestSandboxRefusesWithoutBubblewrap(t *testing.T) {
	requirePython(t)
	ran := filepath.Join(t.TempDir(), "ran")
	code := fmt.Sprintf("open(%q, 'w').write('unconfined')", ran)

	t.Run("missing", func(t *testing.T) {
		res := runPython(t, tools.PythonConfig{Sandbox: tools.SandboxConfig{Bwrap: "/nonexistent/bwrap"}}, code)
		require.Equal(t, tools.StatusFailed, res.Status)
		assert.Equal(t, `Error: tool "python" failed: python: code not run: the sandbox cannot be set up: `+
			`exec: "/nonexistent/bwrap": stat /nonexistent/bwrap: no such file or directory (install bubblewrap: apt-get install bubblewrap)`, res.Text())
		var se *tools.SandboxError
		require.ErrorAs(t, res.Err, &se)
		assert.Equal(t, "python", se.Tool)
		assert.True(t, errors.Is(res.Err, tools.ErrSandboxUnavailable))
		assert.NoFileExists(t, ran)

		err := tools.CheckSandbox(t.Context(), tools.PythonConfig{Sandbox: tools.SandboxConfig{Bwrap: "/nonexistent/bwrap"}})
		require.ErrorAs(t, err, &se)
		assert.EqualError(t, err, `tools: python: code not run: the sandbox cannot be set up: `+
			`exec: "/nonexistent/bwrap": stat /nonexistent/bwrap: no such file or directory (install bubblewrap: apt-get install bubblewrap)`)
	})
	t.Run("no namespaces", func(t *testing.T) {
		// A bwrap that fails the way it does where user namespaces are
		// not allowed.
		fake := filepath.Join(worldReadableDir(t), "bwrap")
		require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"), 0o755))
		res := runPython(t, tools.PythonConfig{Sandbox: tools.SandboxConfig{Bwrap: fake}}, code)
		require.Equal(t, tools.StatusFailed, res.Status)
		assert.Equal(t, `Error: tool "python" failed: python: code not run: the sandbox cannot be set up: `+
			`bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.`, res.Text())
		assert.True(t, errors.Is(res.Err, tools.ErrSandboxUnavailable))
		assert.NoFileExists(t, ran)
	})
}

// worldReadableDir is a temporary directory that nobody (the user bwrap
// runs as when this process is root) can read.
func worldReadableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "coorflow-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	return dir
}

func TestCheckSandbox(t *testing.T) {
	requireSandbox(t)
	assert.NoError(t, tools.CheckSandbox(t.Context(), tools.PythonConfig{}))
}

// killMarked kills the processes a failed test left behind.
func killMarked(t *testing.T, marker string) {
	for _, pid := range processesWith(t, marker) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}
