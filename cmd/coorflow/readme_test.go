package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's YAML and Go blocks are run by TestEveryYAMLAndGoBlockOfTheREADMERuns.
// A comment on the line before a block says what it is:
//
//	<!-- file: PATH -->  the block is the file PATH of the repository (a
//	                     yaml block: all of it; a go block: a part of it),
//	                     which is run: a workflow with --demo, a Go
//	                     program with go run
//	<!-- fragment -->    a part of something, not run
//
// Without a comment, a yaml block is a whole workflow file and is
// validated; a go block is a whole program (package main) and is run.

// readmeBlock is a fenced block of the README.
type readmeBlock struct {
	line int // of the opening fence, from 1
	lang string
	mark string // "fragment", "file: PATH" or ""
	text string
}

var blockMark = regexp.MustCompile(`^<!--\s*(fragment|file:\s*\S+)\s*-->$`)

func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []readmeBlock
	var cur *readmeBlock
	prev := ""
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{line: n, lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
			if m := blockMark.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.mark = strings.Join(strings.Fields(m[1]), " ")
			}
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	require.Nil(t, cur, "a block of %s is not closed", path)
	return out
}

// TestEveryYAMLAndGoBlockOfTheREADMERuns fails when a workflow or a Go
// program the README shows does not load, compile or run.
func TestEveryYAMLAndGoBlockOfTheREADMERuns(t *testing.T) {
	root := filepath.Join("..", "..")
	ran := map[string]int{}
	for _, b := range readmeBlocks(t, filepath.Join(root, "README.md")) {
		if b.lang != "yaml" && b.lang != "go" {
			continue
		}
		name := "README.md:" + strconv.Itoa(b.line)
		if b.mark == "fragment" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ran[b.lang]++
			file, isFile := strings.CutPrefix(b.mark, "file: ")
			if isFile {
				data, err := os.ReadFile(filepath.Join(root, file))
				require.NoError(t, err, "%s names file %s", name, file)
				if b.lang == "yaml" {
					assert.Equal(t, string(data), b.text, "%s must be the whole of %s", name, file)
				} else {
					assert.Contains(t, string(data), b.text, "%s must be a part of %s", name, file)
				}
			}
			switch {
			case b.lang == "yaml" && isFile:
				runREADMEWorkflow(t, filepath.Join(root, file))
			case b.lang == "yaml":
				path := filepath.Join(t.TempDir(), "workflow.yaml")
				require.NoError(t, os.WriteFile(path, []byte(b.text), 0o600))
				code, out, errOut := newCLI(t).run("validate", path)
				require.Equal(t, 0, code, "%s does not validate:\n%s%s", name, out, errOut)
			case isFile:
				goRun(t, root, "./"+filepath.ToSlash(filepath.Dir(file)))
			default:
				require.True(t, strings.HasPrefix(b.text, "package main\n"),
					"%s is not a whole program (package main): mark it <!-- fragment --> or <!-- file: PATH --> of the program it is taken from", name)
				dir, err := os.MkdirTemp("testdata", "readme-")
				require.NoError(t, err)
				t.Cleanup(func() { os.RemoveAll(dir) })
				require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(b.text), 0o600))
				goRun(t, root, "./"+filepath.ToSlash(filepath.Join("cmd", "coorflow", dir)))
			}
		})
	}
	assert.Positive(t, ran["yaml"], "the README's workflow blocks were found")
	assert.Positive(t, ran["go"], "the README's Go blocks were found")
}

// runREADMEWorkflow validates a workflow file and runs it on its demo
// model when it has one.
func runREADMEWorkflow(t *testing.T, path string) {
	t.Helper()
	c := newCLI(t)
	code, out, errOut := c.run("validate", path)
	require.Equal(t, 0, code, "%s does not validate:\n%s%s", path, out, errOut)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if !regexp.MustCompile(`(?m)^demo:`).Match(data) {
		return
	}
	code, out, errOut = c.run("run", path, "--demo", "--input", "the README's example")
	require.Equal(t, 0, code, "%s does not run on its demo model:\n%s%s", path, out, errOut)
}

// goRun runs the Go program pkg, relative to the module's root.
func goRun(t *testing.T, root, pkg string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "run", pkg)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go run %s:\n%s", pkg, out)
}
