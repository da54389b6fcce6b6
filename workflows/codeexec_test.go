package workflows_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/workflows"
)

// runPythonFile runs testdata/run/python.yaml, whose one node runs code
// with the python tool, and returns its answer.
func runPythonFile(t *testing.T, env workflows.Env, code string) (string, error) {
	t.Helper()
	f, err := workflows.Load("testdata/run/python.yaml")
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), env)
	require.NoError(t, err, "a file that declares python compiles whether code execution is on or off")
	in, err := f.Input(r, "input", code)
	require.NoError(t, err)
	_, final, err := runPath(t, r, in)
	answer, _ := final.Value("answer")
	s, _ := answer.(string)
	return s, err
}

// whoAmI prints whether the code runs as nobody, and a variable of this
// process's environment if it can see it.
const whoAmI = "import os\nprint(os.getuid() == 65534, os.environ.get('COORFLOW_TEST_SECRET'))"

// TestCodeExecutionIsOffUnlessTheProgramTurnsItOn covers issue 11,
// finding 1, for programs that compile files (server.New's users): with
// the zero Env the python tool refuses.
func TestCodeExecutionIsOffUnlessTheProgramTurnsItOn(t *testing.T) {
	t.Setenv("COORFLOW_TEST_SECRET", "s3cret")
	ran := t.TempDir() + "/ran"
	_, err := runPythonFile(t, workflows.Env{}, "open('"+ran+"', 'w').write('ran')")
	assert.EqualError(t, err, `graph: node "compute" (step 0, attempt 1): workflows: node "compute": tool python failed: `+
		`Error: tool "python" failed: code execution is disabled on this server; the operator can enable it with --allow-code-exec`)
	assert.NoFileExists(t, ran)
}

func TestCodeExecutionInTheSandbox(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not on PATH (apt-get install bubblewrap); the sandbox test needs it")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 for the sandbox to run")
	}
	t.Setenv("COORFLOW_TEST_SECRET", "s3cret")
	answer, err := runPythonFile(t, workflows.Env{Python: &tools.PythonConfig{}}, whoAmI)
	require.NoError(t, err)
	assert.Equal(t, "exit code: 0\noutput:\nTrue None", answer)
}

func TestCodeExecutionWithTheSandboxOff(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH")
	}
	t.Setenv("COORFLOW_TEST_SECRET", "s3cret")
	answer, err := runPythonFile(t, workflows.Env{Python: &tools.PythonConfig{Sandbox: tools.SandboxConfig{Mode: tools.SandboxOff}}}, whoAmI)
	require.NoError(t, err)
	assert.Equal(t, "exit code: 0\noutput:\nFalse None", answer, "the environment is scrubbed all the same")
}
