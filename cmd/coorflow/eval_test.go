package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/openaitest"
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

// TestEvalCompareAsksAJudgeInBothOrders compares two eval runs with a
// judge on an OpenAI-wire server that prefers the longer answer: each
// case both runs answered is asked about twice, A first and then B first.
func TestEvalCompareAsksAJudgeInBothOrders(t *testing.T) {
	chdirRoot(t)
	c := newCLI(t)
	ds := smallDataset(t)
	var mu sync.Mutex
	var firsts []string
	srv := openaitest.NewFunc(func(req openaitest.ChatRequest) openaitest.Response {
		p := req.Messages[len(req.Messages)-1].Text()
		first, second := promptSection(p, "first_answer"), promptSection(p, "second_answer")
		mu.Lock()
		firsts = append(firsts, first)
		mu.Unlock()
		w := "tie"
		switch {
		case len(first) > len(second):
			w = "first"
		case len(second) > len(first):
			w = "second"
		}
		return openaitest.Text(`{"winner": "` + w + `", "reason": "the longer one"}`)
	})
	defer srv.Close()
	code, out, stderr := c.run("eval", "examples/coor", ds)
	require.Equal(t, 0, code, stderr)
	a := evalRunID.FindStringSubmatch(out)[1]
	code, out, stderr = c.run("eval", "examples/coor", ds)
	require.Equal(t, 0, code, stderr)
	b := evalRunID.FindStringSubmatch(out)[1]
	c.env["OPENAI_API_KEY"], c.env["OPENAI_BASE_URL"] = "sk-test", srv.BaseURL()
	code, out, stderr = c.run("eval", "compare", a, b, "--judge", "openai:gpt-4o-mini", "--json")
	require.Equal(t, 0, code, stderr)
	var cmp struct {
		Cases []struct {
			Case  string `json:"case"`
			Judge struct {
				Winner     string `json:"winner"`
				Consistent bool   `json:"consistent"`
			} `json:"judge"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &cmp))
	require.Len(t, cmp.Cases, 2)
	for _, cs := range cmp.Cases {
		assert.Equal(t, "tie", cs.Judge.Winner, "%s: the demo model answers the same twice", cs.Case)
		assert.True(t, cs.Judge.Consistent, out)
	}
	assert.Len(t, firsts, 4, "two cases, each in both orders")
}

// promptSection returns the text between <name> and </name> in a prompt.
func promptSection(prompt, name string) string {
	_, after, ok := strings.Cut(prompt, "<"+name+">\n")
	if !ok {
		return ""
	}
	text, _, _ := strings.Cut(after, "\n</"+name+">")
	return text
}
