//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/workflows"
)

// hostileDir copies the review's hostile files (testdata/hostile) to a
// directory of the test's own, with the address of a listener that
// counts the connections it accepts in place of LISTENER, and adds the
// file whose aliases repeat one long prompt (1.1 MB, generated).
func hostileDir(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })

	dir := t.TempDir()
	files, err := filepath.Glob("testdata/hostile/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		b = bytes.ReplaceAll(b, []byte("LISTENER"), []byte(ln.Addr().String()))
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alias_bytes.yaml"), aliasedPrompt(1000, 1<<20), 0o600))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o600))
	return dir, &conns
}

// aliasedPrompt is finding 7's file: nodes that alias one prompt of size
// bytes.
func aliasedPrompt(nodes, size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: coorflow/v1\nname: alias_bytes\nstate: {a: {type: string}}\nnodes:\n")
	fmt.Fprintf(&b, "  n0: {type: llm, output: a, prompt: &p %q}\n", strings.Repeat("x", size))
	for i := 1; i < nodes; i++ {
		fmt.Fprintf(&b, "  n%d: {type: llm, output: a, prompt: *p}\n", i)
	}
	b.WriteString("edges:\n  - {from: start, to: n0}\n")
	for i := 1; i < nodes; i++ {
		fmt.Fprintf(&b, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	fmt.Fprintf(&b, "  - {from: n%d, to: end}\n", nodes-1)
	return []byte(b.String())
}

// inspection is one run of the built command on a file.
type inspection struct {
	code           int
	stdout, stderr string
	took           time.Duration
	maxRSS         int64 // bytes
}

// maxRSSSource is a program that runs a command and writes the most
// memory it held (its maximum resident set, in KiB) to a file. The
// rusage of a child of the test itself would not do: Linux counts in it
// the peak of the process it was started from (the test's, through
// vfork), which is larger than what is measured.
const maxRSSSource = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if err := os.WriteFile(os.Args[1], []byte(fmt.Sprint(ru.Maxrss)), 0o600); err != nil {
		os.Exit(125)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
`

// buildMaxRSS builds maxRSSSource.
func buildMaxRSS(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(maxRSSSource), 0o600))
	bin := filepath.Join(dir, "maxrss")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "main.go")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// inspect runs bin with args in dir, through the maxrss program, bounded
// by a generous deadline, and measures it.
func inspect(t *testing.T, maxrss, bin, dir string, args ...string) inspection {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rss := filepath.Join(t.TempDir(), "maxrss")
	cmd := exec.CommandContext(ctx, maxrss, append([]string{rss, bin}, args...)...)
	cmd.Dir = dir
	// What the review had: keys in the environment, no allowed endpoint.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "COORFLOW_DB=" + filepath.Join(dir, "coorflow.db"),
		"ANTHROPIC_API_KEY=sk-ant-secret", "GOOGLE_API_KEY=google-secret", "OPENAI_API_KEY=sk-openai-secret"}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	require.NoError(t, ctx.Err(), "coorflow %s did not end", strings.Join(args, " "))
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	require.NotEqual(t, 125, code, "maxrss: %s", errOut.String())
	b, err := os.ReadFile(rss)
	require.NoError(t, err)
	kib, err := strconv.ParseInt(string(b), 10, 64)
	require.NoError(t, err)
	return inspection{code: code, stdout: out.String(), stderr: errOut.String(), took: took, maxRSS: kib << 10}
}

// TestInspectingAHostileFileExecutesNothing holds the last "done means"
// of issue 26: every inspection command (validate, graph, schema, tools
// list) on the review's hostile files ends quickly, within a bounded
// memory, and executes nothing: no MCP command leaves its marker, no
// connection reaches the listener the files name.
func TestInspectingAHostileFileExecutesNothing(t *testing.T) {
	bin, maxrss := buildCoorflow(t), buildMaxRSS(t)
	dir, conns := hostileDir(t)
	entries, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	entries = slices.DeleteFunc(entries, func(p string) bool { return filepath.Base(p) == "pipe.yaml" })
	commands := [][]string{{"validate"}, {"validate", "--json"}, {"graph"}, {"schema"}, {"tools", "list"}, {"tools", "list", "--json"}}
	var slowest inspection
	var slowestWhat string
	var largest int64
	for _, e := range entries {
		for _, c := range commands {
			args := append(append([]string{}, c...), filepath.Base(e))
			r := inspect(t, maxrss, bin, dir, args...)
			what := strings.Join(args, " ")
			assert.Contains(t, []int{exitOK, exitUsage}, r.code, "%s: %s", what, r.stderr)
			assert.Less(t, r.maxRSS, int64(100<<20), "%s used %d MiB", what, r.maxRSS>>20)
			assert.Less(t, r.took, 5*time.Second, "%s: a generous bound; it takes well under a second", what)
			assert.NotContains(t, r.stdout+r.stderr, "root:x:", what)
			if r.took > slowest.took {
				slowest, slowestWhat = r, what
			}
			largest = max(largest, r.maxRSS)
		}
	}
	t.Logf("%d commands on %d files: the slowest took %v (%s); the largest used %.1f MiB", len(commands)*len(entries), len(entries),
		slowest.took.Round(time.Millisecond), slowestWhat, float64(largest)/(1<<20))
	_, err = os.Stat(filepath.Join(dir, "executed-by-mcp-command"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no MCP command ran")
	assert.Zero(t, conns.Load(), "nothing connected to the listener the files name")
}

// TestValidateSaysWhatAFileExecutes holds finding 5 of issue 26: a
// file's MCP command ran, and validate said only ok. It now lists what
// the file will execute when it runs: commands, code and URLs.
func TestValidateSaysWhatAFileExecutes(t *testing.T) {
	dir, _ := hostileDir(t)
	c := newCLI(t)
	wf := filepath.Join(dir, "mcp_command.yaml")
	code, stdout, stderr := c.run("validate", wf)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "ok  "+wf+"  (mcp_command: 1 nodes)\n"+
		"    when it runs, it executes:\n"+
		"      command sh -c 'touch executed-by-mcp-command'  (tools.mcp.evil.command, "+wf+":9)\n", stdout)

	wf = filepath.Join(dir, "python_interpreter.yaml")
	code, stdout, stderr = c.run("validate", "--json", wf)
	require.Equal(t, exitOK, code, stderr)
	var got []validation
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Len(t, got, 1)
	assert.Equal(t, []workflows.Effect{
		{Kind: "code", What: "python: code the model writes, run by /bin/sh when the program allows code execution (coorflow --allow-code-exec)",
			File: wf, Line: 7, Path: "tools.python"},
		{Kind: "url", What: "any URL the model asks http_fetch for", File: wf, Line: 8, Path: "tools.http_fetch"},
	}, got[0].Executes)
}

// TestToolsListStartsNoMCPServerUnlessNamed holds finding 5 of issue 26:
// `coorflow tools list` ran a file's MCP command. It now lists the server
// as not started, and starts it only when named with --mcp.
func TestToolsListStartsNoMCPServerUnlessNamed(t *testing.T) {
	dir, conns := hostileDir(t)
	c := newCLI(t)
	marker := filepath.Join(dir, "executed-by-mcp-command")
	wf := filepath.Join(dir, "mcp_command.yaml")
	code, stdout, stderr := c.run("tools", "list", wf)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "evil  (MCP server, not started: it would run the command sh -c 'touch executed-by-mcp-command'; "+
		"to list its tools, run coorflow tools list "+wf+" --mcp evil)\n", stdout)
	assert.NoFileExists(t, marker)

	code, stdout, stderr = c.run("tools", "list", "--json", filepath.Join(dir, "mcp_url.yaml"))
	require.Equal(t, exitOK, code, stderr)
	var tools []toolInfo
	require.NoError(t, json.Unmarshal([]byte(stdout), &tools))
	assert.Equal(t, []toolInfo{{Name: "remote", Server: "remote", NotStarted: true, URL: "http://" + listenerOf(t, dir) + "/mcp"}}, tools)
	assert.Zero(t, conns.Load())

	code, _, stderr = c.run("tools", "list", wf, "--mcp", "evl")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "coorflow: tools list --mcp: "+wf+" has no MCP server \"evl\" (did you mean \"evil\"?)\n", stderr)
	assert.NoFileExists(t, marker)

	// Named, it starts: the command is no MCP server, but it ran.
	code, _, _ = c.run("tools", "list", wf, "--mcp", "evil")
	assert.NotEqual(t, exitOK, code)
	assert.FileExists(t, marker, "--mcp evil started the server's command")
}

// listenerOf reads back the listener's address from a copied file.
func listenerOf(t *testing.T, dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "mcp_url.yaml"))
	require.NoError(t, err)
	_, rest, _ := strings.Cut(string(b), "http://")
	addr, _, _ := strings.Cut(rest, "/")
	return addr
}

// TestRunRefusesADemoScriptFromElsewhere: finding 4 hit plain run
// without a key and run --demo; both load the file, which now refuses
// the script.
func TestRunRefusesADemoScriptFromElsewhere(t *testing.T) {
	dir, _ := hostileDir(t)
	c := newCLI(t)
	wf := filepath.Join(dir, "demo_dev_zero.yaml")
	for _, args := range [][]string{{"run", wf, "--input", "hi"}, {"run", wf, "--demo", "--input", "hi"}} {
		code, _, stderr := c.run(args...)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, stderr, wf+":11:11: demo.script: demo script /dev/zero is outside the workflow's directory")
	}
}
