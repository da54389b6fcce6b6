package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/trace"
)

// recordCoor runs examples/coor offline and returns its run id.
func recordCoor(t *testing.T, c *cli) string {
	t.Helper()
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	return runOf(t, stdout)
}

// copyOfCoor copies examples/coor to a new directory with edit applied
// to its workflow.yaml, and returns the directory.
func copyOfCoor(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"workflow.yaml", "demo.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../examples/coor", name))
		require.NoError(t, err)
		text := string(b)
		if name == "workflow.yaml" {
			text = edit(text)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

func TestReplayReproducesARecordedRunOfflineWithoutDivergence(t *testing.T) {
	c := newCLI(t)
	id := recordCoor(t, c)
	code, stdout, stderr := c.run("replay", id)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "replay of run "+id+": done (recorded done), 10 of 10 model calls answered from the recording; no divergence\n", stdout)
	assert.Empty(t, stderr, "the recording says the demo model answered: no notice, no provider")

	code, stdout, _ = c.run("replay", id, "--json")
	require.Equal(t, exitOK, code)
	var rep trace.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.True(t, rep.OK())
	assert.Equal(t, 10, rep.ReplayedCalls)
	assert.Equal(t, trace.StatusDone, rep.Status)

	// A second run reuses the agents the first built: its replay takes
	// them from the recording, whatever the registry holds since.
	again := recordCoor(t, c)
	code, _, stderr = c.run("agents", "edit", "sqlite_analyst", "--description", "Edited after the run.", "--tier", "code")
	require.Equal(t, exitOK, code, stderr)
	prompt := filepath.Join(t.TempDir(), "prompt.md")
	require.NoError(t, os.WriteFile(prompt, []byte("You are edited after the run.\n"), 0o600))
	code, _, stderr = c.run("agents", "edit", "postgres_analyst", "--prompt", "@"+prompt)
	require.Equal(t, exitOK, code, stderr)
	code, stdout, stderr = c.run("replay", again)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "replay of run "+again+": done (recorded done), 6 of 6 model calls answered from the recording; no divergence\n", stdout)

	// A run that paused on a question replays to the same question.
	code, stdout, _ = c.run("run", "../../examples/research", "--input", "How fast is SQLite?", "--json")
	require.Equal(t, exitInterrupted, code)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var res runResult
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &res))
	code, stdout, stderr = c.run("replay", res.RunID)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "replay of run "+res.RunID+": interrupted (recorded interrupted), 2 of 2 model calls answered from the recording; no divergence\n", stdout)
}

func TestReplayPrintsWhereAChangedWorkflowOrInputDiverges(t *testing.T) {
	c := newCLI(t)
	id := recordCoor(t, c)
	changed := copyOfCoor(t, func(s string) string { return strings.Replace(s, "max_steps: 3 ", "max_steps: 4 ", 1) })
	cases := []struct {
		name   string
		args   []string
		first  string // the first line of the report's list
		stderr string
	}{
		{
			name: "a setting that changes the planner's prompt", args: []string{"--workflow", changed},
			first:  `1. model call 1 of coor/planner asked something else (request `,
			stderr: "coorflow: the replay of run " + id + " diverged from its recording (10 divergences; the first at coor/planner)\n",
		},
		{
			name: "another input", args: []string{"--input", "Compare SQLite and DuckDB"},
			first:  `1. model call 1 of coor/coordinator asked something else (request `,
			stderr: "coorflow: the replay of run " + id + " diverged from its recording (11 divergences; the first at coor/coordinator)\n",
		},
	}
	details := map[string]string{
		"a setting that changes the planner's prompt": `message 1 (system) differs at character 508: recorded "…eps.\n- Otherwise give at most 3 steps.`,
		"another input": `message 2 (human) differs at character 20: recorded "Compare SQLite and PostgreSQL for an embedded agent engine", replay "Compare SQLite and DuckDB"`,
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := c.run(append([]string{"replay", id}, tc.args...)...)
			assert.Equal(t, exitFailed, code, "a divergence is exit code 1")
			assert.Equal(t, tc.stderr, stderr)
			lines := strings.Split(stdout, "\n")
			require.GreaterOrEqual(t, len(lines), 3, stdout)
			assert.Contains(t, lines[0], "replay of run "+id+": error (recorded done)")
			assert.True(t, strings.HasPrefix(lines[1], tc.first), lines[1])
			assert.Contains(t, lines[1], strings.ReplaceAll(details[tc.name], "\n", `\n`))
			assert.Contains(t, stdout, "recorded model call 1 of coor/reporter was not made\n")
		})
	}
}

func TestReplayRefusesRunsItCannotReplayAndSaysWhichToReplay(t *testing.T) {
	c := newCLI(t)
	code, stdout, _ := c.run("run", "../../examples/research", "--input", "How fast is SQLite?")
	require.Equal(t, exitInterrupted, code)
	thread := threadOf(t, stdout)
	code, _, stderr := c.run("run", "../../examples/research", "--thread", thread, "--resume", "accept")
	require.Equal(t, exitOK, code, stderr)
	runs := c.listRuns("--thread", thread)
	require.Len(t, runs, 2)
	resumed, first := runs[0].ID, runs[1].ID

	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"replay", resumed}, exitUsage, "coorflow: run " + resumed + " cannot be replayed: it did not start from an input (it answered a question of its thread, thread " +
			thread + "); replay the run that started it from its input: coorflow replay " + first},
		{[]string{"replay", "r-ghost"}, exitFailed, "coorflow: no run r-ghost in " + c.db + " (coorflow runs list shows the recorded runs)"},
		{[]string{"replay"}, exitUsage, "coorflow: replay: give one run id (coorflow runs list shows them)"},
		{[]string{"replay", first, "--workflow", "../../examples/coor"}, exitUsage, "coorflow: run " + first + " ran workflow research; ../../examples/coor is workflow coor"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := c.run(tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.stderr+"\n", stderr)
		})
	}
}
