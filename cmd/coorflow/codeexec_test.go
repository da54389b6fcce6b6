package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pythonFile is a workflow whose one node runs its input as code with
// the python tool and answers with the tool's text.
const pythonFile = "../../workflows/testdata/run/python.yaml"

// whoAmI prints whether the code runs as nobody, and a variable of the
// test process's environment if it can see it.
const whoAmI = "import os\nprint(os.getuid() == 65534, os.environ.get('COORFLOW_TEST_SECRET'))"

// serveAndRun serves pythonFile with extra flags, prints nothing of its
// own, and returns the line of serve's start-up output that starts with
// "code execution:" and the body of a run of code.
func serveAndRun(t *testing.T, code string, flags ...string) (line, body string) {
	c := newCLI(t)
	c.env["COORFLOW_TOKEN"] = "secret"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	c.ctx, c.stdout = ctx, pw
	done := make(chan int, 1)
	go func() {
		code, _, _ := c.run(append([]string{"serve", pythonFile, "--addr", "127.0.0.1:0"}, flags...)...)
		_ = pw.Close()
		done <- code
	}()
	// Read serve's output to its end; the first line has the address.
	first := make(chan string, 1)
	read := make(chan []string, 1)
	go func() {
		var all []string
		for lines := bufio.NewScanner(pr); lines.Scan(); {
			if all = append(all, lines.Text()); len(all) == 1 {
				first <- lines.Text()
			}
		}
		close(first)
		read <- all
	}()
	addr := regexp.MustCompile(`http://[0-9.:]+`).FindString(<-first)
	require.NotEmpty(t, addr, "serve did not start")

	in, err := json.Marshal(map[string]any{"input": map[string]string{"input": code}})
	require.NoError(t, err)
	for _, step := range []struct{ path, body string }{
		{"/v1/threads", `{"workflow": "python", "thread_id": "t1"}`},
		{"/v1/threads/t1/runs/wait", string(in)},
	} {
		req, err := http.NewRequestWithContext(t.Context(), "POST", addr+step.path, strings.NewReader(step.body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
	}
	cancel()
	assert.Equal(t, exitOK, <-done)
	for _, l := range <-read {
		if strings.HasPrefix(l, "code execution:") {
			line = l
		}
	}
	return line, body
}

// TestServeRunsNoCodeByDefault covers issue 11, finding 1: a caller whose
// run reaches the python tool gets a refusal, not a shell on the server.
func TestServeRunsNoCodeByDefault(t *testing.T) {
	ran := t.TempDir() + "/ran"
	line, body := serveAndRun(t, "open('"+ran+"', 'w').write('ran')")
	assert.Equal(t, "code execution: off: the python tool refuses to run code (--allow-code-exec runs it in a bubblewrap sandbox)", line)
	assert.Contains(t, body, `Error: tool \"python\" failed: code execution is disabled on this server; the operator can enable it with --allow-code-exec`)
	assert.NoFileExists(t, ran)
}

func TestServeAllowCodeExecRunsCodeInTheSandbox(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not on PATH (apt-get install bubblewrap); the sandbox test needs it")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 for the sandbox to run")
	}
	t.Setenv("COORFLOW_TEST_SECRET", "s3cret")
	line, body := serveAndRun(t, whoAmI, "--allow-code-exec")
	assert.Equal(t, "code execution: on, in a bubblewrap sandbox (no network, no file of this host but the system's, limited memory, CPU time and processes)", line)
	assert.Contains(t, body, `"answer":"exit code: 0\noutput:\nTrue None"`, "the code ran as nobody, without the server's environment")
}

// TestRunRunsTheUsersCodeDirectlyWithAScrubbedEnvironment: the command
// line trusts its user's file, but not with its environment.
func TestRunRunsTheUsersCodeDirectlyWithAScrubbedEnvironment(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH")
	}
	t.Setenv("COORFLOW_TEST_SECRET", "s3cret")
	c := newCLI(t)
	code, stdout, stderr := c.run("run", pythonFile, "--input", "import os\nprint(os.environ.get('COORFLOW_TEST_SECRET'), os.getuid() == os.geteuid())")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "\nexit code: 0\noutput:\nNone True\n")
}
