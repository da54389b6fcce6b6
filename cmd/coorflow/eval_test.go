package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var evalRunID = regexp.MustCompile(`(?m)^eval run (e-[0-9a-f]+) kept in`)

// chdirRoot runs the test from the module's root, where the README's
// commands run.
func chdirRoot(t *testing.T) {
	t.Chdir("../..")
}

// smallDataset is examples/eval/coor.yaml cut to its first two cases.
func smallDataset(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("examples/eval/coor.yaml")
	require.NoError(t, err)
	text, _, _ := strings.Cut(string(b), "  - id: queue")
	path := filepath.Join(t.TempDir(), "small.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestEvalRunsTheCoorExampleOfflineAndKeepsTheEvalRun(t *testing.T) {
	chdirRoot(t)
	c := newCLI(t)
	ds := smallDataset(t)
	code, out, stderr := c.run("eval", "examples/coor", ds, "--repeats", "2", "--label", "baseline", "-v")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `sqlite-postgres\s+2/2 100% \[34-100\]\s+1.00 \[1.00-1.00\]`, out)
	assert.Regexp(t, `TOTAL\s+4/4 100%`, out)
	assert.Contains(t, stderr, "running offline on the scripted demo model")
	assert.Regexp(t, `eval e-[0-9a-f]+: redis-memcached #2 passed in`, stderr)
	id := evalRunID.FindStringSubmatch(out)
	require.NotNil(t, id, out)

	code, out, stderr = c.run("eval", "show", id[1], "--json")
	require.Equal(t, 0, code, stderr)
	var res struct {
		Label string `json:"label"`
		Total struct {
			Trials, Passed, Agents, Steps int
		} `json:"total"`
		Cases []struct {
			Case   string `json:"case"`
			Trials []struct {
				Runs []string `json:"runs"`
			} `json:"trials"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "baseline", res.Label)
	assert.Equal(t, 4, res.Total.Passed)
	assert.Equal(t, 8, res.Total.Agents, "each case builds its two agents afresh")
	var run string
	for _, cs := range res.Cases {
		if cs.Case == "sqlite-postgres" {
			run = cs.Trials[0].Runs[0]
		}
	}
	code, out, stderr = c.run("runs", "show", run)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "Compare SQLite and PostgreSQL", "each trial links to its recorded run")

	code, out, _ = c.run("eval", "list")
	require.Equal(t, 0, code)
	assert.Contains(t, out, id[1])
}

func TestEvalCompareShowsWhatChangedAndGatesExitOne(t *testing.T) {
	chdirRoot(t)
	c := newCLI(t)
	ds := smallDataset(t)
	variant := filepath.Join(t.TempDir(), "two-steps.yaml")
	b, err := os.ReadFile("examples/eval/coor-two-steps.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(variant, b, 0o600))
	code, out, stderr := c.run("eval", "examples/coor", ds, "--label", "v1")
	require.Equal(t, 0, code, stderr)
	a := evalRunID.FindStringSubmatch(out)[1]
	code, out, stderr = c.run("eval", "examples/eval/coor-two-steps.yaml", ds, "--label", "two-steps", "--include-root", "examples/coor")
	require.Equal(t, 0, code, stderr)
	b2 := evalRunID.FindStringSubmatch(out)[1]

	code, out, stderr = c.run("eval", "compare", a, b2)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `sqlite-postgres\s+worse\s+1/1→0/1`, out)
	assert.Regexp(t, `redis-memcached\s+same`, out)
	code, _, stderr = c.run("eval", "compare", a, b2, "--max-regressions", "0", "--fail-under", "0.9")
	assert.Equal(t, 1, code)
	assert.Equal(t, "coorflow: gate crossed: the pass rate 50.0% is under 90.0% (--fail-under); 1 case(s) got worse, more than 0 (--max-regressions)\n", stderr)
	code, _, stderr = c.run("eval", "compare", a, "e-nothere")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no eval run e-nothere")
}

func TestEvalReportsABadDatasetAtItsLine(t *testing.T) {
	chdirRoot(t)
	c := newCLI(t)
	path := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte("graders:\n  - expr: len(state.plan.stepz) > 1\ncases:\n  - input: q\n    graders: [{regex: '(('}]\n"), 0o600))
	code, out, stderr := c.run("eval", "examples/coor", path)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Len(t, lines, 2, stderr)
	assert.Contains(t, lines[0], path+":2:26: graders[0].expr: unknown field stepz")
	assert.Contains(t, lines[0], "stepz")
	assert.Equal(t, path+":5:23: cases[0].graders[0].regex: not a valid regular expression: missing closing ): `((`", lines[1])
}

// TestEvalReplayAnswersFromTheRecordingsAndRerunsWhatDiverged evaluates
// the coor example, then replays that eval run: with the same workflow no
// case diverges and no model is called; with the two-step variant the
// case whose plan no longer fits diverges and runs again.
func TestEvalReplayAnswersFromTheRecordingsAndRerunsWhatDiverged(t *testing.T) {
	chdirRoot(t)
	c := newCLI(t)
	ds := smallDataset(t)
	code, out, stderr := c.run("eval", "examples/coor", ds)
	require.Equal(t, 0, code, stderr)
	a := evalRunID.FindStringSubmatch(out)[1]

	type trial struct {
		Replayed bool   `json:"replayed"`
		Diverged string `json:"diverged"`
		Status   string `json:"status"`
		Spend    struct {
			Calls int `json:"calls"`
		} `json:"spend"`
	}
	var res struct {
		ReplayOf string `json:"replay_of"`
		Cases    []struct {
			Case   string  `json:"case"`
			Trials []trial `json:"trials"`
		} `json:"cases"`
	}
	code, out, stderr = c.run("eval", "examples/coor", ds, "--replay", a, "--json")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, a, res.ReplayOf)
	for _, cs := range res.Cases {
		tr := cs.Trials[0]
		assert.True(t, tr.Replayed, "%s: %s", cs.Case, tr.Diverged)
		assert.Empty(t, tr.Diverged)
		assert.Equal(t, "passed", tr.Status)
		assert.Zero(t, tr.Spend.Calls, "no model call")
	}

	code, out, stderr = c.run("eval", "examples/eval/coor-two-steps.yaml", ds, "--include-root", "examples/coor", "--replay", a, "--json")
	require.Equal(t, 0, code, stderr)
	res.Cases = nil
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	got := map[string]trial{}
	for _, cs := range res.Cases {
		got[cs.Case] = cs.Trials[0]
	}
	sp := got["sqlite-postgres"]
	assert.False(t, sp.Replayed)
	assert.Contains(t, sp.Diverged, "model call 1 of coor/planner asked something else", "the planner's prompt says 2 steps now")
	assert.Contains(t, sp.Diverged, "at most 2 steps")
	assert.Positive(t, sp.Spend.Calls, "what diverged ran on the models")
	assert.Equal(t, "error", sp.Status)
}
