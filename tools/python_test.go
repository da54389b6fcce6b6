package tools_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/tools"
)

// requirePython skips the test when python3 is not installed.
func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH; the python tool tests need it")
	}
}

// requireSandbox skips the test when bubblewrap or a system python3 (the
// one the sandbox sees) is not installed. A sandbox that is installed but
// fails is a failure, not a skip.
func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not on PATH (apt-get install bubblewrap); the sandbox tests need it")
	}
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	t.Skip("no python3 in /usr/bin or /usr/local/bin, where the sandbox looks; the sandbox tests need it")
}

// direct is the configuration with the sandbox off.
func direct(cfg tools.PythonConfig) tools.PythonConfig {
	cfg.Sandbox.Mode = tools.SandboxOff
	return cfg
}

// inBothModes runs f with cfg in the sandbox and with the sandbox off.
func inBothModes(t *testing.T, cfg tools.PythonConfig, f func(t *testing.T, cfg tools.PythonConfig)) {
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		f(t, cfg)
	})
	t.Run("direct", func(t *testing.T) {
		requirePython(t)
		f(t, direct(cfg))
	})
}

// runPython runs code through the python tool and returns the result.
func runPython(t *testing.T, cfg tools.PythonConfig, code string) tools.Result {
	t.Helper()
	return tools.Run(t.Context(), tools.Python(cfg), pythonArgs(t, code), tools.RunOptions{})
}

func pythonArgs(t *testing.T, code string) json.RawMessage {
	t.Helper()
	args, err := json.Marshal(map[string]string{"code": code})
	require.NoError(t, err)
	return args
}

func TestPythonReportsExitCodeAndOutput(t *testing.T) {
	tests := []struct {
		name string
		code string
		want string
	}{
		{name: "print", code: `print("hello")`, want: "exit code: 0\noutput:\nhello\n"},
		{
			name: "stdout and stderr in order, non-zero exit",
			code: "import sys\nprint('out')\nprint('err', file=sys.stderr)\nprint('out again')\nsys.exit(3)",
			want: "exit code: 3\noutput:\nout\nerr\nout again\n",
		},
		{name: "no output", code: `x = 1`, want: "exit code: 0\n(no output)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inBothModes(t, tools.PythonConfig{}, func(t *testing.T, cfg tools.PythonConfig) {
				res := runPython(t, cfg, tt.code)
				require.Equal(t, tools.StatusOK, res.Status, res.Text())
				assert.Equal(t, tt.want, res.Output)
			})
		})
	}
}

func TestPythonExceptionShowsTheTraceback(t *testing.T) {
	inBothModes(t, tools.PythonConfig{}, func(t *testing.T, cfg tools.PythonConfig) {
		res := runPython(t, cfg, "x = 1\nprint(x / 0)")
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		assert.True(t, strings.HasPrefix(res.Output, "exit code: 1\noutput:\nTraceback (most recent call last):\n"), res.Output)
		assert.Contains(t, res.Output, `main.py", line 2, in <module>`)
		assert.True(t, strings.HasSuffix(res.Output, "ZeroDivisionError: division by zero\n"), res.Output)
	})
}

func TestPythonRunsInAFreshDirectoryThatIsRemoved(t *testing.T) {
	code := "import os\nopen('scratch.txt', 'w').write('x')\nprint(os.getcwd())\nprint(sorted(os.listdir('.')))"
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		parent := t.TempDir()
		res := runPython(t, tools.PythonConfig{TempDir: parent}, code)
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		assert.Equal(t, "exit code: 0\noutput:\n/tmp\n['main.py', 'scratch.txt']\n", res.Output)
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		assert.Empty(t, entries, "the staged source is removed")
	})
	t.Run("direct", func(t *testing.T) {
		requirePython(t)
		parent := t.TempDir()
		res := runPython(t, direct(tools.PythonConfig{TempDir: parent}), code)
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		lines := strings.Split(strings.TrimSpace(res.Output), "\n")
		require.Len(t, lines, 4, res.Output)
		dir := lines[2]
		assert.Equal(t, parent, filepath.Dir(dir))
		assert.Equal(t, "['main.py', 'scratch.txt']", lines[3])
		assert.NoDirExists(t, dir)
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		assert.Empty(t, entries)
	})
}

func TestPythonTruncatesLongOutput(t *testing.T) {
	inBothModes(t, tools.PythonConfig{MaxOutput: 10}, func(t *testing.T, cfg tools.PythonConfig) {
		res := runPython(t, cfg, `print("x" * 100)`)
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		assert.Equal(t, "exit code: 0\noutput:\nxxxxxxxxxx\n[output truncated: showing the first 10 of 101 bytes]", res.Output)
	})
}

func TestPythonDefaultOutputCapIs64KiB(t *testing.T) {
	inBothModes(t, tools.PythonConfig{}, func(t *testing.T, cfg tools.PythonConfig) {
		res := runPython(t, cfg, `print("y" * 100000)`)
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		assert.True(t, strings.HasSuffix(res.Output, "\n[output truncated: showing the first 65536 of 100001 bytes]"))
		assert.Equal(t, 64<<10, tools.DefaultPythonMaxOutput)
	})
}

// TestPythonEnvironmentWithholdsSecrets: the code sees Env and the names
// PassEnv lists, and no other variable of this process.
func TestPythonEnvironmentWithholdsSecrets(t *testing.T) {
	t.Setenv("COORFLOW_TEST_API_KEY", "s3cret")
	t.Setenv("COORFLOW_TEST_PASSED", "passed on")
	cfg := tools.PythonConfig{Env: []string{"EXTRA=1"}, PassEnv: []string{"COORFLOW_TEST_PASSED", "COORFLOW_TEST_UNSET"}}
	code := "import os\nprint(os.environ.get('COORFLOW_TEST_API_KEY'))\nprint(os.environ['EXTRA'])\n" +
		"print(os.environ['COORFLOW_TEST_PASSED'])\nprint('COORFLOW_TEST_UNSET' in os.environ)\nprint(os.environ['TMPDIR'] == os.getcwd())"
	inBothModes(t, cfg, func(t *testing.T, cfg tools.PythonConfig) {
		res := runPython(t, cfg, code)
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		assert.Equal(t, "exit code: 0\noutput:\nNone\n1\npassed on\nFalse\nTrue\n", res.Output)
	})
}

// TestPythonTimesOut: code that never ends is stopped at the timeout,
// with a result that says so and the output so far.
func TestPythonTimesOut(t *testing.T) {
	code := "import time\nprint('started', flush=True)\ntime.sleep(3600)"
	inBothModes(t, tools.PythonConfig{Timeout: time.Second}, func(t *testing.T, cfg tools.PythonConfig) {
		res := runPython(t, cfg, code)
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		assert.Regexp(t, `^timed out after 1s: the process and its children were killed\n(output:\nstarted\n|\(no output\))$`, res.Output)
		assert.GreaterOrEqual(t, res.Duration, time.Second)
	})
}

func TestPythonRejectsEmptyCode(t *testing.T) {
	res := runPython(t, tools.PythonConfig{}, "")
	require.Equal(t, tools.StatusFailed, res.Status)
	var ae *tools.ArgumentError
	require.ErrorAs(t, res.Err, &ae)
	assert.Equal(t, []tools.ArgumentProblem{{Field: "/code", Message: "length must be >= 1, but got 0"}}, ae.Problems)
}

func TestPythonMissingInterpreter(t *testing.T) {
	t.Run("direct", func(t *testing.T) {
		res := runPython(t, direct(tools.PythonConfig{Interpreter: "/nonexistent/python3"}), "print(1)")
		require.Equal(t, tools.StatusFailed, res.Status)
		assert.Equal(t, `Error: tool "python" failed: python: start /nonexistent/python3: fork/exec /nonexistent/python3: no such file or directory`, res.Text())
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		res := runPython(t, tools.PythonConfig{Interpreter: "/nonexistent/python3"}, "print(1)")
		require.Equal(t, tools.StatusFailed, res.Status)
		assert.True(t, errors.Is(res.Err, tools.ErrSandboxUnavailable), "%v", res.Err)
		assert.Equal(t, `Error: tool "python" failed: python: code not run: the sandbox cannot be set up: bwrap: execvp /nonexistent/python3: No such file or directory`, res.Text())
	})
}

func TestPythonAsksRunForMoreThanItsOwnTimeout(t *testing.T) {
	assert.Equal(t, 35*time.Second, tools.Python(tools.PythonConfig{}).Timeout())
	assert.Equal(t, 7*time.Second, tools.Python(tools.PythonConfig{Timeout: 2 * time.Second}).Timeout())
}

// TestPythonDisabled: where code execution is off, the tool has python's
// name and schema and every call fails with a message that says how to
// turn it on.
func TestPythonDisabled(t *testing.T) {
	tool := tools.PythonDisabled()
	assert.Equal(t, "python", tool.Name())
	assert.JSONEq(t, string(tools.Python(tools.PythonConfig{}).Schema()), string(tool.Schema()))
	res := tools.Run(t.Context(), tool, pythonArgs(t, "print(1)"), tools.RunOptions{})
	require.Equal(t, tools.StatusFailed, res.Status)
	assert.ErrorIs(t, res.Err, tools.ErrCodeExecDisabled)
	assert.Equal(t, `Error: tool "python" failed: code execution is disabled on this server; the operator can enable it with --allow-code-exec`, res.Text())
}
