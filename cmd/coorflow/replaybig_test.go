package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/trace"
)

// bigWorkflow writes a workflow of calls llm nodes in a row, each of which
// the demo script answers with a text of size bytes and the next is asked
// with, and returns its directory.
func bigWorkflow(t *testing.T, calls, size int) string {
	t.Helper()
	var wf, demo strings.Builder
	wf.WriteString("apiVersion: coorflow/v1\nname: big\ninput: question\noutput: n1\n" +
		"models:\n  basic: {provider: openai, model: gpt-4o-mini}\ndemo:\n  script: demo.yaml\nstate:\n  question: {type: string}\n")
	for i := 1; i <= calls; i++ {
		fmt.Fprintf(&wf, "  n%d: {type: string}\n", i)
	}
	wf.WriteString("nodes:\n")
	demo.WriteString("agents:\n")
	for i := 1; i <= calls; i++ {
		prompt := "{{ state.question }}"
		if i > 1 {
			prompt = fmt.Sprintf("{{ state.n%d }}", i-1)
		}
		fmt.Fprintf(&wf, "  call%d:\n    type: llm\n    prompt: \"Part %d of %s\"\n    output: n%d\n", i, i, prompt, i)
		fmt.Fprintf(&demo, "  call%d:\n    - text: \"%d%s\"\n", i, i, strings.Repeat("x", size))
	}
	wf.WriteString("edges:\n  - {from: start, to: call1}\n")
	for i := 1; i < calls; i++ {
		fmt.Fprintf(&wf, "  - {from: call%d, to: call%d}\n", i, i+1)
	}
	fmt.Fprintf(&wf, "  - {from: call%d, to: end}\n", calls)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workflow.yaml"), []byte(wf.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.yaml"), []byte(demo.String()), 0o644))
	return dir
}

// TestReplayOfARunLargerThanAPageOfEvents: a run whose model calls'
// bodies pass a page of events (trace.DefaultEventBytes) replays without
// divergence, every call answered, from SQLite and from PostgreSQL: the
// replay reads the recording a page at a time, not its first page only.
func TestReplayOfARunLargerThanAPageOfEvents(t *testing.T) {
	// A demo script holds 4 MiB at most: the requests, which carry the
	// responses before, make the rest.
	const calls, size = 6, 600 << 10
	require.Greater(t, (2*calls-1)*size, trace.DefaultEventBytes, "the bodies pass a page")
	dir := bigWorkflow(t, calls, size)
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			c := newCLI(t)
			var dbArgs []string
			if db == "postgres" {
				dbArgs = []string{"--db", freshDatabase(t)}
			}
			code, stdout, stderr := c.run(append([]string{"run", dir, "--input", "the question"}, dbArgs...)...)
			require.Equal(t, exitOK, code, stderr)
			id := runOf(t, stdout)
			code, stdout, stderr = c.run(append([]string{"replay", id}, dbArgs...)...)
			require.Equal(t, exitOK, code, "%s%s", stdout, stderr)
			assert.Equal(t, fmt.Sprintf("replay of run %s: done (recorded done), %d of %d model calls answered from the recording; no divergence\n", id, calls, calls), stdout)
		})
	}
}
