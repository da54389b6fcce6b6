package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/trace"
	tsqlite "github.com/coorflow/coorflow/trace/sqlite"
)

// productionScript is the scripted model of the exported workflow: the
// step agents and the reporter, nothing for a coordinator, a planner, a
// builder or a meta-prompt, which would fail for want of a reply.
const productionScript = `agents:
  sqlite_analyst:
    - text: '{"reasoning": "One process, analytical reads.", "result": "SQLite: one writer, row store, fine for small analytics.", "summary": "SQLite suits light analytics in one process.", "confidence": 0.9, "sources": ["https://www.sqlite.org/whentouse.html"]}'
  postgres_analyst:
    - text: '{"reasoning": "Compared with a column store.", "result": "DuckDB: a column store in process, fast scans and aggregates.", "summary": "DuckDB is built for in-process analytics.", "confidence": 0.9, "sources": ["https://duckdb.org/why_duckdb"]}'
  researcher:
    - text: '{"reasoning": "Both are embedded.", "result": "| Workload | Choose |\n|---|---|\n| Transactions | SQLite |\n| Analytics | DuckDB |", "summary": "SQLite for transactions, DuckDB for analytics.", "confidence": 0.92, "sources": []}'
  reporter:
    - text: |
        # SQLite or DuckDB for embedded analytics

        **Recommendation:** DuckDB for analytical queries, SQLite for transactional state.
`

var demoLine = regexp.MustCompile(`(?m)^  script: .*$`)

func TestExportFixesACoorRunThatThenRunsOnNewInputWithoutThePlanner(t *testing.T) {
	c := newCLI(t)
	id := recordCoor(t, c)

	code, stdout, stderr := c.run("export", id)
	require.Equal(t, exitOK, code, stderr)
	golden, err := os.ReadFile("testdata/coor_export.golden.yaml")
	require.NoError(t, err)
	assert.Equal(t, string(golden), normalize(stdout, c.db), "the exported workflow (to stdout, without the demo script, which is outside the working directory)")
	assert.Regexp(t, `the export has no demo script: \S*examples/coor/demo.yaml is outside the directory of coor-r-\w+\.yaml, where a workflow may not read one`, stderr)

	dir := t.TempDir()
	out := filepath.Join(dir, "production.yaml")
	code, stdout, stderr = c.run("export", id, "-o", out, "--name", "db_choice")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "wrote "+out+`: workflow db_choice, plan "SQLite or PostgreSQL for an embedded agent engine" with 3 steps and 3 agents (sqlite_analyst, postgres_analyst, researcher); no coordinator, planner or builder
run it on new input: coorflow run `+out+" --input '…'\n", stdout)
	code, stdout, stderr = c.run("validate", out)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "ok  "+out+"  (db_choice: 2 nodes)\n    when it runs, it executes:\n"+
		"      url https://api.tavily.com (web_search)  (tools.web_search, "+out+":17)\n"+
		"      url any URL the model asks http_fetch for  (tools.http_fetch, "+out+":20)\n", stdout)

	// Edit by hand: a demo script of our own.
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NotRegexp(t, demoLine, string(b), "the source's script is outside the exported file's directory")
	edited := string(b) + "demo:\n  script: production_demo.yaml\n"
	require.NoError(t, os.WriteFile(out, []byte(edited), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "production_demo.yaml"), []byte(productionScript), 0o644))

	const newInput = "Compare SQLite and DuckDB for embedded analytics"
	code, stdout, stderr = c.run("run", out, "--input", newInput)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "\n# SQLite or DuckDB for embedded analytics\n\n**Recommendation:** DuckDB for analytical queries")
	for _, absent := range []string{"coordinator", "planner", "· build", "meta-prompt", "+ sqlite_analyst"} {
		assert.NotContains(t, stdout, absent)
	}
	prod := runOf(t, stdout)

	// The recording of the production run: only the team and the
	// reporter ran, and only the step agents and the reporter called a
	// model — each step with the new input.
	code, show, stderr := c.run("runs", "show", prod, "--json")
	require.Equal(t, exitOK, code, stderr)
	var tl trace.Timeline
	require.NoError(t, json.Unmarshal([]byte(show), &tl))
	var ran, agents []string
	for _, st := range tl.Steps {
		for _, n := range st.Nodes {
			ran = append(ran, n.Node)
			for _, a := range n.Agents {
				agents = append(agents, a.Name)
			}
		}
	}
	assert.Equal(t, []string{"team", "reporter"}, ran)
	slices.Sort(agents)
	assert.Equal(t, []string{"postgres_analyst", "reporter", "researcher", "sqlite_analyst"}, agents, "no planner, builder or meta-prompt call")

	traces, err := tsqlite.Open(t.Context(), c.db)
	require.NoError(t, err)
	defer traces.Close()
	calls, err := traces.Events(t.Context(), prod, trace.EventQuery{Kinds: []string{llm.EventModelCall}, Bodies: true})
	require.NoError(t, err)
	require.Len(t, calls, 4)
	for _, call := range calls {
		if strings.Contains(call.Path, "/step:") {
			assert.Contains(t, string(call.Request), "# Request\\n"+newInput, "%s works on the new input", call.Path)
		}
		assert.NotContains(t, string(call.Request), coorInput, "%s never sees the original request", call.Path)
	}
}

func TestExportSaysWhyARunCannotBeExported(t *testing.T) {
	c := newCLI(t)
	code, stdout, _ := c.run("run", "../../examples/research", "--input", "How fast is SQLite?")
	require.Equal(t, exitInterrupted, code)
	thread := threadOf(t, stdout)
	code, _, stderr := c.run("run", "../../examples/research", "--thread", thread, "--resume", "accept")
	require.Equal(t, exitOK, code, stderr)
	runs := c.listRuns("--thread", thread)
	require.Len(t, runs, 2)
	done, waiting := runs[0].ID, runs[1].ID
	research, err := filepath.Abs("../../examples/research/workflow.yaml")
	require.NoError(t, err)

	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"export", waiting}, exitUsage, "coorflow: run " + waiting + " did not finish: it waits for an answer; answer it (coorflow run WORKFLOW --thread " +
			thread + " --resume ANSWER) and export the run that finishes the thread"},
		{[]string{"export", done}, exitUsage, "coorflow: run " + done + " is not a run of a dynamic workflow: " + research +
			" has no team node (its plans are run by predefined roles: research_team (research_team), researcher (worker), coder (worker)); export fixes the plans and agents of workflows such as coor"},
		{[]string{"export", "r-ghost"}, exitFailed, "coorflow: no run r-ghost in " + c.db + " (coorflow runs list shows the recorded runs)"},
		{[]string{"export"}, exitUsage, "coorflow: export: give one run id (coorflow runs list shows them)"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := c.run(tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.stderr+"\n", stderr)
		})
	}
}

// agentJSON reads an agent of the registry through the CLI.
func agentJSON(t *testing.T, c *cli, name string) map[string]any {
	t.Helper()
	code, stdout, stderr := c.run("agents", "show", name, "--json")
	require.Equal(t, exitOK, code, stderr)
	var ag map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &ag))
	return ag
}

// TestExportWritesTheAgentsAsTheRunUsedThem: agents edited after a run
// are exported as the run had them, built in it or reused by it.
func TestExportWritesTheAgentsAsTheRunUsedThem(t *testing.T) {
	c := newCLI(t)
	first := recordCoor(t, c)
	built := agentJSON(t, c, "sqlite_analyst")
	builtPrompt := built["prompt"].(string)
	firstLine, _, _ := strings.Cut(strings.TrimSpace(builtPrompt), "\n")

	prompt := filepath.Join(t.TempDir(), "prompt.md")
	require.NoError(t, os.WriteFile(prompt, []byte("You are the edited analyst: answer in one table.\n"), 0o600))
	code, _, stderr := c.run("agents", "edit", "sqlite_analyst", "--prompt", "@"+prompt, "--tier", "code")
	require.Equal(t, exitOK, code, stderr)

	code, exported, stderr := c.run("export", first)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, exported, firstLine, "the prompt the agent was built with")
	assert.NotContains(t, exported, "the edited analyst", "not the prompt it has now")
	assert.NotContains(t, exported, "tier: code")

	// A second run reuses the edited agent; a later edit does not change
	// what it ran with.
	second := recordCoor(t, c)
	require.NoError(t, os.WriteFile(prompt, []byte("You are edited twice.\n"), 0o600))
	code, _, stderr = c.run("agents", "edit", "sqlite_analyst", "--prompt", "@"+prompt, "--tier", "reasoning")
	require.Equal(t, exitOK, code, stderr)
	code, exported, stderr = c.run("export", second)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, exported, "You are the edited analyst: answer in one table.", "the prompt the agent was reused with")
	assert.Contains(t, exported, "tier: code")
	assert.NotContains(t, exported, "edited twice")
}

// TestAgentsEditRefusesAToolNobodyKnows: the registry keeps the agent as
// it was, and export keeps working.
func TestAgentsEditRefusesAToolNobodyKnows(t *testing.T) {
	c := newCLI(t)
	id := recordCoor(t, c)
	before := agentJSON(t, c, "sqlite_analyst")

	code, stdout, stderr := c.run("agents", "edit", "sqlite_analyst", "--tools", "python,nosuch")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, `coorflow: agents edit --tools: unknown tool "nosuch"; the known tools are ask_human, http_fetch, python, recall, remember, web_search (the built-in tools of workflow files, and those of the registry's agents)`+"\n", stderr)
	assert.Equal(t, before, agentJSON(t, c, "sqlite_analyst"), "the registry is unchanged")

	code, _, stderr = c.run("agents", "edit", "sqlite_analyst", "--tools", "pyhton")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `unknown tool "pyhton" (did you mean "python"?)`)

	code, _, stderr = c.run("export", id)
	assert.Equal(t, exitOK, code, stderr)
}
