package tools_test

import (
	"encoding/json"
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

// runPython runs code through the python tool and returns the result.
func runPython(t *testing.T, cfg tools.PythonConfig, code string) tools.Result {
	t.Helper()
	args, err := json.Marshal(map[string]string{"code": code})
	require.NoError(t, err)
	return tools.Run(t.Context(), tools.Python(cfg), args, tools.RunOptions{})
}

func TestPythonReportsExitCodeAndOutput(t *testing.T) {
	requirePython(t)
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
			res := runPython(t, tools.PythonConfig{}, tt.code)
			require.Equal(t, tools.StatusOK, res.Status, res.Text())
			assert.Equal(t, tt.want, res.Output)
		})
	}
}

func TestPythonExceptionShowsTheTraceback(t *testing.T) {
	requirePython(t)
	res := runPython(t, tools.PythonConfig{}, "x = 1\nprint(x / 0)")
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.True(t, strings.HasPrefix(res.Output, "exit code: 1\noutput:\nTraceback (most recent call last):\n"), res.Output)
	assert.Contains(t, res.Output, `main.py", line 2, in <module>`)
	assert.True(t, strings.HasSuffix(res.Output, "ZeroDivisionError: division by zero\n"), res.Output)
}

func TestPythonRunsInAFreshDirectoryThatIsRemoved(t *testing.T) {
	requirePython(t)
	parent := t.TempDir()
	res := runPython(t, tools.PythonConfig{TempDir: parent},
		"import os\nopen('scratch.txt', 'w').write('x')\nprint(os.getcwd())\nprint(sorted(os.listdir('.')))")
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
}

func TestPythonTruncatesLongOutput(t *testing.T) {
	requirePython(t)
	res := runPython(t, tools.PythonConfig{MaxOutput: 10}, `print("x" * 100)`)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "exit code: 0\noutput:\nxxxxxxxxxx\n[output truncated: showing the first 10 of 101 bytes]", res.Output)
}

func TestPythonDefaultOutputCapIs64KiB(t *testing.T) {
	requirePython(t)
	res := runPython(t, tools.PythonConfig{}, `print("y" * 100000)`)
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.True(t, strings.HasSuffix(res.Output, "\n[output truncated: showing the first 65536 of 100001 bytes]"))
	assert.Equal(t, 64<<10, tools.DefaultPythonMaxOutput)
}

func TestPythonEnvironmentWithholdsSecrets(t *testing.T) {
	requirePython(t)
	t.Setenv("COORFLOW_TEST_API_KEY", "s3cret")
	res := runPython(t, tools.PythonConfig{Env: []string{"EXTRA=1"}},
		"import os\nprint(os.environ.get('COORFLOW_TEST_API_KEY'))\nprint(os.environ['EXTRA'])\nprint(os.environ['TMPDIR'] == os.getcwd())")
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "exit code: 0\noutput:\nNone\n1\nTrue\n", res.Output)
}

func TestPythonRejectsEmptyCode(t *testing.T) {
	res := runPython(t, tools.PythonConfig{}, "")
	require.Equal(t, tools.StatusFailed, res.Status)
	var ae *tools.ArgumentError
	require.ErrorAs(t, res.Err, &ae)
	assert.Equal(t, []tools.ArgumentProblem{{Field: "/code", Message: "length must be >= 1, but got 0"}}, ae.Problems)
}

func TestPythonMissingInterpreter(t *testing.T) {
	res := runPython(t, tools.PythonConfig{Interpreter: "/nonexistent/python3"}, "print(1)")
	require.Equal(t, tools.StatusFailed, res.Status)
	assert.Equal(t, `Error: tool "python" failed: python: start /nonexistent/python3: fork/exec /nonexistent/python3: no such file or directory`, res.Text())
}

func TestPythonAsksRunForMoreThanItsOwnTimeout(t *testing.T) {
	assert.Equal(t, 35*time.Second, tools.Python(tools.PythonConfig{}).Timeout())
	assert.Equal(t, 7*time.Second, tools.Python(tools.PythonConfig{Timeout: 2 * time.Second}).Timeout())
}
