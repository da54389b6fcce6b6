package workflows_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/workflows"
)

// writeFile writes a file under dir, making its directories.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// subgraphFile is a workflow whose only node includes file.
func subgraphFile(file string) string {
	return fmt.Sprintf(`apiVersion: coorflow/v1
name: wf
nodes:
  s: {type: subgraph, file: %q}
edges:
  - {from: start, to: s}
  - {from: s, to: end}
`, file)
}

const leafFile = `apiVersion: coorflow/v1
name: leaf
nodes:
  a: {type: llm, prompt: "hi", output: answer}
edges:
  - {from: start, to: a}
  - {from: a, to: end}
state: {answer: {type: string}}
`

// goLeaf is a workflow of one go node, which calls the function leaf.
const goLeaf = `apiVersion: coorflow/v1
name: leaf
nodes:
  a: {type: go, func: leaf}
edges:
  - {from: start, to: a}
  - {from: a, to: end}
`

// diamond writes files d0.yaml ... d<levels-1>.yaml, each but the last
// including the next one width times, and returns the path of d0.yaml.
func diamond(t testing.TB, dir string, levels, width int) string {
	t.Helper()
	for i := range levels - 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: coorflow/v1\nname: d%d\nnodes:\n", i)
		for j := range width {
			fmt.Fprintf(&b, "  s%d: {type: subgraph, file: d%d.yaml}\n", j, i+1)
		}
		b.WriteString("edges:\n  - {from: start, to: s0}\n")
		for j := 1; j < width; j++ {
			fmt.Fprintf(&b, "  - {from: s%d, to: s%d}\n", j-1, j)
		}
		fmt.Fprintf(&b, "  - {from: s%d, to: end}\n", width-1)
		writeFile(t, dir, fmt.Sprintf("d%d.yaml", i), b.String())
	}
	writeFile(t, dir, fmt.Sprintf("d%d.yaml", levels-1), goLeaf)
	return filepath.Join(dir, "d0.yaml")
}

// realDir is dir with its symbolic links resolved, as problems name it.
func realDir(t *testing.T, dir string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	return real
}

// TestSubgraphFilesOutsideTheWorkflowsDirectoryAreProblems holds the
// confinement half of finding 3 of issue 11: a file could include
// ../../etc/passwd, an absolute path or a symbolic link leading out of
// its directory.
func TestSubgraphFilesOutsideTheWorkflowsDirectoryAreProblems(t *testing.T) {
	root := t.TempDir()
	dir, other := filepath.Join(root, "wf"), filepath.Join(root, "other")
	outside := writeFile(t, other, "leaf.yaml", leafFile)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.yaml")))
	inDir, inOther := realDir(t, dir), realDir(t, other)
	how := ": a workflow may only use files in its own directory tree; move the file there, or let the program that loads the workflow allow its directory (coorflow --include-root DIR, workflows.WithIncludeRoot)"
	cases := []struct {
		name, file, want string
	}{
		{"parent directories", "../other/leaf.yaml",
			`nodes.s.file: subgraph file ../other/leaf.yaml is outside the workflow's directory ` + inDir + ` (it is ` + inOther + `/leaf.yaml)` + how},
		{"system file", "../../../../../../../../etc/passwd",
			`nodes.s.file: subgraph file ../../../../../../../../etc/passwd is outside the workflow's directory ` + inDir + ` (it is /etc/passwd)` + how},
		{"absolute path", outside,
			`nodes.s.file: subgraph file ` + outside + ` is outside the workflow's directory ` + inDir + ` (it is ` + inOther + `/leaf.yaml)` + how},
		{"symbolic link", "link.yaml",
			`nodes.s.file: subgraph file link.yaml is outside the workflow's directory ` + inDir + ` (it is ` + inOther + `/leaf.yaml)` + how},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, dir, "workflow.yaml", subgraphFile(c.file))
			assert.Equal(t, []string{path + ":4:29: " + c.want}, problemsOf(t, path))
		})
	}
	t.Run("allowed root", func(t *testing.T) {
		path := writeFile(t, dir, "workflow.yaml", subgraphFile("../other/leaf.yaml"))
		f, err := workflows.Load(path, workflows.WithIncludeRoot(other))
		require.NoError(t, err)
		assert.True(t, f.NeedsModels(), "the included file's llm node is part of the workflow")
	})
}

// TestSubgraphCyclesAndOversizedTreesAreProblemsAtTheInclude holds the
// budget half of finding 3: a diamond of files including one another was
// loaded once per path (7 files of 300 bytes took 27.6 s and 2 GB); now
// each file is loaded once, and a tree that describes more than 10,000
// nodes or includes more than 100 files is refused where it grows too
// large.
func TestSubgraphCyclesAndOversizedTreesAreProblemsAtTheInclude(t *testing.T) {
	t.Run("cycle", func(t *testing.T) {
		dir := t.TempDir()
		a := writeFile(t, dir, "a.yaml", subgraphFile("b.yaml"))
		writeFile(t, dir, "b.yaml", subgraphFile("a.yaml"))
		b := filepath.Join(dir, "b.yaml")
		assert.Equal(t, []string{
			a + ":4:29: nodes.s.file: subgraph file b.yaml is invalid (1 problems, below)",
			b + ":4:29: nodes.s.file: subgraph file a.yaml includes itself (through 2 files)",
		}, problemsOf(t, a))
	})
	t.Run("too many nodes", func(t *testing.T) {
		dir := t.TempDir()
		top := diamond(t, dir, 7, 5) // d1.yaml counts 7,030 nodes, two of them 14,060
		over := "brings the workflow to more than 10000 nodes, counting the nodes of each subgraph once per inclusion: include fewer files or include them fewer times"
		assert.Equal(t, []string{
			top + ":5:30: nodes.s1.file: subgraph file d1.yaml " + over,
			top + ":6:30: nodes.s2.file: subgraph file d1.yaml " + over,
			top + ":7:30: nodes.s3.file: subgraph file d1.yaml " + over,
			top + ":8:30: nodes.s4.file: subgraph file d1.yaml " + over,
		}, problemsOf(t, top))
	})
	t.Run("too many files", func(t *testing.T) {
		dir := t.TempDir()
		for i := range 101 {
			writeFile(t, dir, fmt.Sprintf("c%d.yaml", i), subgraphFile(fmt.Sprintf("c%d.yaml", i+1)))
		}
		writeFile(t, dir, "c101.yaml", leafFile)
		problems := problemsOf(t, filepath.Join(dir, "c0.yaml"))
		c100 := filepath.Join(dir, "c100.yaml")
		assert.Contains(t, problems, c100+":4:29: nodes.s.file: subgraph file c101.yaml is one file too many: a workflow may include at most 100 files; merge some of them")
	})
}

// TestADiamondOfSubgraphFilesLoadsCompilesAndRuns shows that a file
// included many times within the node budget loads, compiles (once) and
// runs at each of its inclusions.
func TestADiamondOfSubgraphFilesLoadsCompilesAndRuns(t *testing.T) {
	var calls atomic.Int64
	funcs := map[string]graph.NodeFunc{"leaf": func(context.Context, graph.State) (graph.Command, error) {
		calls.Add(1)
		return graph.Command{}, nil
	}}
	f, err := workflows.Load(diamond(t, t.TempDir(), 7, 4), workflows.WithFuncs(funcs)) // 4^6 = 4,096 leaves
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil, graph.StepLimit(100))
	require.NoError(t, err)
	assert.Equal(t, int64(4096), calls.Load())
}

// BenchmarkLoadDiamond loads a diamond of 7 files of about 300 bytes,
// each including the next 4 times.
func BenchmarkLoadDiamond(b *testing.B) {
	top := diamond(b, b.TempDir(), 7, 4)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := workflows.Load(top, workflows.WithUnregistered()); err != nil {
			b.Fatal(err)
		}
	}
}
