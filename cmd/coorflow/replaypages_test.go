package main

import (
	"database/sql"
	"encoding/json"
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

// modelCallSeq is the event of the n-th model call (from 1) of run id in
// the SQLite file at path.
func modelCallSeq(t *testing.T, path, id string, n int) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var seq int64
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT seq FROM trace_events WHERE run_id = ? AND kind = 'model_call' ORDER BY seq LIMIT 1 OFFSET ?`,
		id, n-1).Scan(&seq))
	return seq
}

// TestReplaySaysWhichRecordedCallItCannotRead: a recorded model call
// whose response the database no longer holds fails the replay when the
// call is answered, and the error names the run, the path, the call and
// its event.
func TestReplaySaysWhichRecordedCallItCannotRead(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", bigWorkflow(t, 3, 10), "--input", "the question")
	require.Equal(t, exitOK, code, stderr)
	id := runOf(t, stdout)
	seq := modelCallSeq(t, c.db, id, 2)
	execSQL(t, c.db, fmt.Sprintf(`UPDATE trace_events SET response = NULL WHERE run_id = '%s' AND seq = %d`, id, seq))

	code, stdout, stderr = c.run("replay", id)
	assert.Equal(t, exitFailed, code)
	assert.Empty(t, stdout)
	assert.Equal(t, fmt.Sprintf("coorflow: trace: replay of run %q: recorded model call 1 of big/call2 (event %d) cannot be read: the store holds no response of it\n", id, seq), stderr)
}

// TestEvalReplayRunsOnTheModelsWhatItCannotRead: the trials of an eval run
// whose recorded responses the database no longer holds cannot be
// replayed: each says why and runs on the models.
func TestEvalReplayRunsOnTheModelsWhatItCannotRead(t *testing.T) {
	chdirRoot(t)
	c := newCLI(t)
	ds := smallDataset(t)
	code, out, stderr := c.run("eval", "examples/coor", ds)
	require.Equal(t, 0, code, stderr)
	a := evalRunID.FindStringSubmatch(out)[1]
	execSQL(t, c.db, `UPDATE trace_events SET response = NULL WHERE kind = 'model_call'`)

	code, out, stderr = c.run("eval", "examples/coor", ds, "--replay", a, "--json")
	require.Equal(t, 0, code, stderr)
	var res struct {
		Cases []struct {
			Case   string `json:"case"`
			Trials []struct {
				Replayed bool   `json:"replayed"`
				Diverged string `json:"diverged"`
				Status   string `json:"status"`
				Spend    struct {
					Calls int `json:"calls"`
				} `json:"spend"`
			} `json:"trials"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.NotEmpty(t, res.Cases)
	for _, cs := range res.Cases {
		tr := cs.Trials[0]
		assert.False(t, tr.Replayed, cs.Case)
		assert.Regexp(t, `^trace: replay of run "r-[0-9a-f]+": recorded model call 1 of coor/coordinator \(event \d+\) cannot be read: the store holds no response of it$`, tr.Diverged, cs.Case)
		assert.Equal(t, "passed", tr.Status, cs.Case)
		assert.Positive(t, tr.Spend.Calls, "%s ran on the models", cs.Case)
	}
}
