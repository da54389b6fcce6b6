package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// environChild is set in the environment of the copy of the test binary
// that TestTokensReadFromTheEnvironmentLeaveNoTraceInProc starts.
const environChild = "COORFLOW_TEST_ENVIRON_CHILD"

// TestTokensReadFromTheEnvironmentLeaveNoTraceInProc is part of the
// regression test of security finding 9 (issue 11): os.Unsetenv alone
// leaves the tokens in /proc/PID/environ, which a tool run by the server
// (same user) could read. A copy of this test binary plays the server:
// it reads its tokens, then waits while this test reads its
// /proc/PID/environ and its child's environment.
func TestTokensReadFromTheEnvironmentLeaveNoTraceInProc(t *testing.T) {
	if os.Getenv(environChild) == "1" {
		environChildMain()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTokensReadFromTheEnvironmentLeaveNoTraceInProc$")
	cmd.Env = append(os.Environ(), environChild+"=1", "COORFLOW_TOKENS=tok-SECRET-1=alice,tok-SECRET-2=bob", "COORFLOW_TOKEN=tok-SECRET-3")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr lockedBuffer // written by a goroutine of cmd while the test reads it
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "the child reports: %s", stderr.String())
	assert.Equal(t, "tokens 2; its child sees none", lines.Text())

	environ, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ")
	require.NoError(t, err)
	// Booleans, not the environment, in the failure messages.
	assert.False(t, bytes.Contains(environ, []byte("SECRET")), "/proc/PID/environ of the process that read the tokens shows them")
	assert.True(t, bytes.Contains(environ, []byte(environChild+"=1\x00")), "the rest of the environment is left alone")
	assert.True(t, bytes.Contains(environ, []byte("\x00COORFLOW_TOKENS=\x00")), "the variable is there, its value wiped")

	require.NoError(t, stdin.Close())
	_, _ = io.Copy(io.Discard, stdout)
	require.NoError(t, cmd.Wait(), stderr.String())
}

// environChildMain reads the tokens as serve does, starts a process that
// prints its environment, says what it found, and waits for stdin to close.
func environChildMain() {
	var errOut bytes.Buffer
	a := &app{getenv: os.Getenv, unsetenv: unsetenv, stderr: &errOut}
	tokens, err := a.tokens("", nil)
	if err != nil || errOut.Len() > 0 {
		fmt.Fprintln(os.Stderr, err, errOut.String())
		os.Exit(1)
	}
	env, err := exec.Command("env").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sees := "none"
	if bytes.Contains(env, []byte("SECRET")) {
		sees = "the tokens"
	}
	fmt.Printf("tokens %d; its child sees %s\n", len(tokens), sees)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
