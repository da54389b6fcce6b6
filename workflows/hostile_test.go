//go:build unix

package workflows_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/workflows"
)

// aliasedPrompt returns a file whose nodes alias one prompt of size
// bytes: small on disk, large once aliases expand.
func aliasedPrompt(nodes, size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: coorflow/v1\nname: wf\nstate: {a: {type: string}}\nnodes:\n")
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

// TestAliasesOfALongTextAreBoundedByBytes holds finding 7 of issue 26: a
// 1.1 MB file whose 1,000 nodes aliased one 1 MiB prompt took 16.7 s to
// validate, under the cap on aliased entries. Aliases may now add at most
// 4 MiB of text; the problem is at the alias that passed it.
func TestAliasesOfALongTextAreBoundedByBytes(t *testing.T) {
	data := aliasedPrompt(8, 1<<20)
	assert.Equal(t, []string{
		"w.yaml:10:38: nodes.n5.prompt: aliases expand the file by more than 4 MiB of text (this alias *p is where the limit was reached): " +
			"anchors and aliases may repeat entries, not multiply them; write the entries out or use fewer aliases",
	}, parseProblems(t, "w.yaml", data))

	start := time.Now()
	parseProblems(t, "w.yaml", aliasedPrompt(1000, 1<<20))
	t.Logf("the review's file (1,000 aliases of 1 MiB) is refused in %v", time.Since(start))
}

// TestAliasesOfAShortTextStillLoad: a prompt of a few KiB shared by a
// hundred nodes is what anchors are for.
func TestAliasesOfAShortTextStillLoad(t *testing.T) {
	_, err := workflows.Parse("w.yaml", aliasedPrompt(100, 4<<10))
	require.NoError(t, err)
}

// demoFile is a workflow whose demo script is script.
func demoFile(script string) string {
	return fmt.Sprintf(`apiVersion: coorflow/v1
name: wf
state: {answer: {type: string}}
nodes:
  a: {type: llm, prompt: "hi", output: answer}
edges:
  - {from: start, to: a}
  - {from: a, to: end}
demo:
  script: %q
`, script)
}

// TestTheDemoScriptIsAFileOfTheWorkflowsOwn holds finding 4 of issue 26:
// demo.script was read from any path, whole (/dev/zero took 1.6 GiB in
// 3.5 s), an error showed the first line of /etc/passwd, and validate
// said ok. The script must now be a regular file of at most 4 MiB in the
// workflow's directory tree, after resolving links; loading the file
// (what validate, graph, run and serve do) reads and checks it, and no
// error quotes it.
func TestTheDemoScriptIsAFileOfTheWorkflowsOwn(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "passwd.yaml"), []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.yaml"), make([]byte, 5<<20), 0o600))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link.yaml")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o600))
	outside := "is outside the workflow's directory " + dir
	tail := ": a workflow may only use files in its own directory tree; move the file there, " +
		"or let the program that loads the workflow allow its directory (coorflow --include-root DIR, workflows.WithIncludeRoot)"
	cases := []struct{ script, want string }{
		{"/dev/zero", "demo script /dev/zero " + outside + " (it is /dev/zero)" + tail},
		{"/etc/passwd", "demo script /etc/passwd " + outside + " (it is /etc/passwd)" + tail},
		{"../../../../../../../etc/passwd", "demo script ../../../../../../../etc/passwd " + outside + " (it is /etc/passwd)" + tail},
		{"link.yaml", "demo script link.yaml " + outside + " (it is /etc/passwd)" + tail},
		{"fifo.yaml", "demo script fifo.yaml is a named pipe, not a file: a demo script is a YAML file next to the workflow"},
		{"big.yaml", "demo script big.yaml is larger than 4 MiB (5242880 bytes): a demo script holds a few replies"},
		{"passwd.yaml", "demo script passwd.yaml: scripted: invalid script: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str into scripted.fileScript"},
	}
	for _, c := range cases {
		t.Run(c.script, func(t *testing.T) {
			path := filepath.Join(dir, "wf.yaml")
			require.NoError(t, os.WriteFile(path, []byte(demoFile(c.script)), 0o600))
			done := make(chan []string)
			go func() { done <- loadProblems(t, path) }()
			select {
			case got := <-done:
				require.Len(t, got, 1)
				assert.Contains(t, got[0], ":10:11: demo.script: ")
				assert.True(t, strings.HasSuffix(got[0], c.want), "%s\nwant it to end in\n%s", got[0], c.want)
				assert.NotContains(t, got[0], "root:x")
			case <-t.Context().Done():
				t.Fatal("the load never ended")
			}
		})
	}
}

// TestADemoScriptInTheWorkflowsDirectoryPlays: the confined script is
// the one a run plays.
func TestADemoScriptInTheWorkflowsDirectoryPlays(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "demo"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "demo", "script.yaml"), []byte("default: {text: scripted hello}\n"), 0o600))
	path := filepath.Join(dir, "wf.yaml")
	require.NoError(t, os.WriteFile(path, []byte(demoFile("demo/../demo/script.yaml")), 0o600))
	f, err := workflows.Load(path)
	require.NoError(t, err)
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	require.True(t, ms.Demo)
	m, err := ms.Model(llm.TierBasic)
	require.NoError(t, err)
	out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	require.NoError(t, err)
	assert.Equal(t, "scripted hello", out)
}

// loadProblems loads the file at path and returns the problems a user
// sees.
func loadProblems(t *testing.T, path string) []string {
	_, err := workflows.Load(path)
	var fe *workflows.FileError
	if !errors.As(err, &fe) {
		return []string{fmt.Sprint(err)}
	}
	var out []string
	for _, p := range fe.Problems {
		out = append(out, p.String())
	}
	return out
}

// TestASubgraphFileIsARegularFileOfAFewMiB: a subgraph file is read
// whole, like the demo script, so a named pipe in the workflow's
// directory (from an archive) would have hung validate, and a huge file
// filled memory; both are now problems at the include.
func TestASubgraphFileIsARegularFileOfAFewMiB(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.yaml"), make([]byte, 5<<20), 0o600))
	for file, want := range map[string]string{
		"fifo.yaml": "subgraph file fifo.yaml is a named pipe, not a file: a subgraph file is a YAML file next to the workflow",
		"big.yaml":  "subgraph file big.yaml is larger than 4 MiB (5242880 bytes): a workflow file is a few KiB",
	} {
		path := writeFile(t, dir, "workflow.yaml", subgraphFile(file))
		assert.Equal(t, []string{path + ":4:29: nodes.s.file: " + want}, loadProblems(t, path))
	}
}
