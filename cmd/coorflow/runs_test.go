package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/trace"
)

var recordedRun = regexp.MustCompile(`(?m)^run (r-[0-9a-f]{8}) recorded · coorflow runs show r-[0-9a-f]{8} · coorflow replay r-[0-9a-f]{8}$`)

// runOf returns the id of the run that coorflow run printed at its end.
func runOf(t *testing.T, stdout string) string {
	t.Helper()
	m := recordedRun.FindStringSubmatch(stdout)
	require.NotNil(t, m, "the run id is printed at the end:\n%s", stdout)
	return m[1]
}

// listRuns returns coorflow runs list --json with args.
func (c *cli) listRuns(args ...string) []trace.RunInfo {
	c.t.Helper()
	code, stdout, stderr := c.run(append([]string{"runs", "list", "--json"}, args...)...)
	require.Equal(c.t, exitOK, code, stderr)
	var runs []trace.RunInfo
	require.NoError(c.t, json.Unmarshal([]byte(stdout), &runs), stdout)
	return runs
}

func TestEveryRunIsRecordedInTheDatabaseAndListedWithItsThread(t *testing.T) {
	c := newCLI(t)
	code, _, _ := c.run("runs", "list")
	require.Equal(t, exitOK, code)

	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	id, thread := runOf(t, stdout), threadOf(t, stdout)

	code, list, stderr := c.run("runs", "list")
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `^RUN +THREAD +WORKFLOW +STATUS +START +STARTED +TOOK\n`+id+`  `+thread+`  coor +done +input +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  [0-9.]+m?s\n$`, list)

	code, show, stderr := c.run("runs", "show", id)
	require.Equal(t, exitOK, code, stderr)
	for _, want := range []string{
		"run         " + id + "\n",
		"thread      " + thread + "\n",
		"status      done\n",
		"owner       default\n",
		"input       input: " + coorInput + "\n",
		"replay it offline: coorflow replay " + id + "\n",
		"fix its plan and agents in a workflow file: coorflow export " + id + " -o FILE\n",
	} {
		assert.Contains(t, show, want)
	}
	assert.Regexp(t, `(?m)^workflow    coor \(/.*/examples/coor/workflow\.yaml\)$`, show)
	assert.Regexp(t, `(?m)^ +3  team +done  built (postgres_analyst, sqlite_analyst|sqlite_analyst, postgres_analyst)$`, show)
	assert.Regexp(t, `(?m)^ +s1 sqlite_analyst +done +1 model call, \d+ tokens, \$0\.0000$`, show)

	code, show, stderr = c.run("runs", "show", id, "--json")
	require.Equal(t, exitOK, code, stderr)
	var tl trace.Timeline
	require.NoError(t, json.Unmarshal([]byte(show), &tl))
	assert.Equal(t, id, tl.Run.ID)
	assert.Equal(t, trace.StartInput, tl.Run.Start)
	assert.NotEmpty(t, tl.Steps)

	// A run that pauses and its resume are two runs of one thread.
	code, stdout, _ = c.run("run", "../../examples/research", "--input", "How fast is SQLite?")
	require.Equal(t, exitInterrupted, code)
	research := threadOf(t, stdout)
	code, _, stderr = c.run("run", "../../examples/research", "--thread", research, "--resume", "accept")
	require.Equal(t, exitOK, code, stderr)
	runs := c.listRuns("--thread", research)
	require.Len(t, runs, 2)
	assert.Equal(t, []string{trace.StatusDone, trace.StatusInterrupted}, []string{runs[0].Status, runs[1].Status}, "newest first")
	assert.Equal(t, []string{trace.StartResume, trace.StartInput}, []string{runs[0].Start, runs[1].Start})
	assert.Nil(t, runs[0].FinalState, "the list leaves out final states")
	assert.Len(t, c.listRuns("--status", "interrupted"), 1)
	assert.Len(t, c.listRuns("--owner", "someone-else"), 0)
	assert.Len(t, c.listRuns("--limit", "1"), 1)
}

// Every agent of the built-in workflows records what each of its model
// calls saw, and runs show counts an agent's model calls as the viewer
// does: the timeline's one count.
func TestEveryAgentOfTheBuiltInWorkflowsHasItsSnapshotsAndOneCount(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	ids := []string{runOf(t, stdout)}
	code, stdout, _ = c.run("run", "../../examples/research", "--input", "How fast is SQLite?")
	require.Equal(t, exitInterrupted, code)
	research := threadOf(t, stdout)
	code, stdout, stderr = c.run("run", "../../examples/research", "--thread", research, "--resume", "accept")
	require.Equal(t, exitOK, code, stderr)
	ids = append(ids, runOf(t, stdout))

	agents := 0
	for _, id := range ids {
		code, show, stderr := c.run("runs", "show", id, "--json")
		require.Equal(t, exitOK, code, stderr)
		var tl trace.Timeline
		require.NoError(t, json.Unmarshal([]byte(show), &tl))
		code, text, stderr := c.run("runs", "show", id)
		require.Equal(t, exitOK, code, stderr)
		for _, st := range tl.Steps {
			for _, n := range st.Nodes {
				for _, a := range n.Agents {
					agents++
					assert.Positive(t, a.ModelCalls, "%s %s", id, a.Name)
					assert.Equal(t, a.ModelCalls, a.Snapshots, "%s %s: a snapshot per model call", id, a.Name)
					calls := fmt.Sprintf("%d model calls", a.ModelCalls)
					if a.ModelCalls == 1 {
						calls = "1 model call"
					}
					assert.Regexp(t, `(?m)^ +(\S+ )?`+regexp.QuoteMeta(a.Name)+` +\S+ +`+calls+`(, .*)?$`, text, "%s %s", id, a.Name)
				}
			}
		}
	}
	assert.GreaterOrEqual(t, agents, 10, "coordinator, planner, builders, step agents, workers, reporters")

	// A builder's time ends with its last call, before the agents it built
	// start: the time bars show the builders together, then the steps.
	code, show, stderr := c.run("runs", "show", ids[0], "--json")
	require.Equal(t, exitOK, code, stderr)
	var tl trace.Timeline
	require.NoError(t, json.Unmarshal([]byte(show), &tl))
	var builders, steps []trace.AgentSummary
	for _, st := range tl.Steps {
		for _, n := range st.Nodes {
			for _, a := range n.Agents {
				switch {
				case strings.HasPrefix(a.Name, "builder:"):
					builders = append(builders, a)
				case a.Run != "":
					steps = append(steps, a)
				}
			}
		}
	}
	require.Len(t, builders, 2)
	require.NotEmpty(t, steps)
	require.NotNil(t, builders[0].End)
	require.NotNil(t, builders[1].End)
	assert.True(t, builders[0].Start.Before(*builders[1].End) && builders[1].Start.Before(*builders[0].End), "the builders ran at the same time")
	for _, b := range builders {
		require.NotNil(t, b.End)
		for _, a := range steps {
			assert.False(t, b.End.After(a.Start), "%s ended before %s started", b.Name, a.Name)
		}
	}
}

func TestRunsOfARunThatDoesNotExistOrABadCommandLine(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"runs", "show", "r-ghost"}, exitFailed, "coorflow: no run r-ghost in " + c.db + " (coorflow runs list shows the recorded runs)"},
		{[]string{"runs"}, exitUsage, "coorflow: runs: want list, show RUN, usage or prune"},
		{[]string{"runs", "shwo", "r-1"}, exitUsage, `coorflow: runs: unknown subcommand "shwo" (did you mean "show"?) (want list, show, usage or prune)`},
		{[]string{"runs", "show"}, exitUsage, "coorflow: runs show: give one run id"},
		{[]string{"runs", "list", "x"}, exitUsage, "coorflow: runs list takes no argument"},
	}
	for _, tc := range cases {
		t.Run(tc.stderr, func(t *testing.T) {
			code, _, stderr := c.run(tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.stderr+"\n", stderr)
		})
	}
}
