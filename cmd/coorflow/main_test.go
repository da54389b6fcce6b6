package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/workflows"
)

// cli runs the command line in process with an empty environment (no API
// key: the examples run on their demo scripts) and returns its exit code,
// stdout and stderr.
type cli struct {
	t   *testing.T
	db  string
	env map[string]string
	// stdin and interactive stand for a person at a terminal.
	stdin       string
	interactive bool
	// ctx, when set, is the command's context.
	ctx context.Context
	// stdout, when set, receives the output too.
	stdout io.Writer
}

func newCLI(t *testing.T) *cli {
	return &cli{t: t, db: filepath.Join(t.TempDir(), "coorflow.db"), env: map[string]string{}}
}

func (c *cli) run(args ...string) (int, string, string) {
	c.t.Helper()
	var out bytes.Buffer
	var errOut lockedBuffer // serve writes notices and logs from several goroutines
	a := &app{stdin: strings.NewReader(c.stdin), stdout: &out, stderr: &errOut, interactive: c.interactive,
		getenv: func(k string) string {
			if k == "COORFLOW_DB" {
				return c.db
			}
			return c.env[k]
		},
		unsetenv: func(k string) error {
			delete(c.env, k)
			return nil
		}}
	if c.stdout != nil {
		a.stdout = io.MultiWriter(&out, c.stdout)
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = c.t.Context()
	}
	code := a.main(ctx, args)
	return code, out.String(), errOut.String()
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var (
	elapsed   = regexp.MustCompile(`(?m)^ *\d+\.\d\ds`)
	threadIDs = regexp.MustCompile(`t-[0-9a-f]{8}`)
	runIDs    = regexp.MustCompile(`\br-[0-9a-f]{8}\b`)
	durations = regexp.MustCompile(`(ok|failed|degraded) [0-9.]+[µmn]?s\b`)
	// usage: the token counts change with every prompt, and are tested
	// in budget_test.go.
	usageLine = regexp.MustCompile(`(?m)^usage: \d+ calls, \d+ tokens \(in \d+, out \d+\), \$0\.0000$`)
)

// normalize replaces what changes from run to run: times, thread and
// run ids, the database's path, tool durations.
func normalize(s, db string) string {
	s = elapsed.ReplaceAllString(s, " T.TTs")
	s = threadIDs.ReplaceAllString(s, "t-XXXXXXXX")
	s = runIDs.ReplaceAllString(s, "r-XXXXXXXX")
	s = durations.ReplaceAllString(s, "$1 D")
	s = usageLine.ReplaceAllString(s, "usage: N calls, N tokens (in N, out N), $$0.0000")
	return strings.ReplaceAll(s, db, "DB")
}

func threadOf(t *testing.T, stdout string) string {
	t.Helper()
	id := threadIDs.FindString(stdout)
	require.NotEmpty(t, id, stdout)
	return id
}

// index returns the first line that starts with prefix, spaces collapsed.
func index(lines []string, prefix string) int {
	prefix = strings.Join(strings.Fields(prefix), " ")
	return slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.Join(strings.Fields(l), " "), prefix) })
}

const coorInput = "Compare SQLite and PostgreSQL for an embedded agent engine"

func TestTheMainCommandRunsTheCoorExampleOfflineAndSavesTheThread(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "coorflow: no model provider is configured (OPENAI_API_KEY is not set): running offline on the scripted demo model ../../examples/coor/demo.yaml (written for requests naming SQLite and PostgreSQL; the reactive demo model answers any other request from what it asks)\n", stderr)

	got := normalize(stdout, c.db)
	golden, err := os.ReadFile("testdata/coor_run.golden")
	require.NoError(t, err)
	lines, want := strings.Split(got, "\n"), strings.Split(string(golden), "\n")
	// Concurrent builds and steps may print in either order: compare the
	// lines as a set, then check the order that matters.
	assert.ElementsMatch(t, want, lines, "got:\n%s", got)
	for _, order := range [][2]string{
		{"T.TTs ✓ coordinator", "T.TTs ✓ planner  plan"},
		{"T.TTs ✓ planner  plan", "T.TTs ▶ team"},
		{"T.TTs ▶ team", "T.TTs · build sqlite_analyst"},
		{"T.TTs · meta-prompt sqlite_analyst", "T.TTs + sqlite_analyst"},
		{"T.TTs + sqlite_analyst", "T.TTs ▶ s1 sqlite_analyst"},
		{"T.TTs + postgres_analyst", "T.TTs ▶ s1 sqlite_analyst"},
		// s1 and s2 may run at the same time, but nothing makes them
		// overlap here: either may end before the other starts on a busy
		// machine (factory's tests show they run concurrently).
		{"T.TTs ▶ team", "T.TTs ▶ s2 postgres_analyst"},
		{"T.TTs ✓ s1 sqlite_analyst", "T.TTs ▶ s3 researcher"}, // s3 waits for both
		{"T.TTs ✓ s2 postgres_analyst", "T.TTs ▶ s3 researcher"},
		{"T.TTs ✓ team", "T.TTs ✓ reporter"},
		{"T.TTs ✓ reporter", "# SQLite or PostgreSQL for an embedded agent engine"},
	} {
		before, after := index(lines, order[0]), index(lines, order[1])
		require.True(t, before >= 0 && after >= 0, "%q and %q are printed", order[0], order[1])
		assert.Less(t, before, after, "%q before %q", order[0], order[1])
	}

	id := threadOf(t, stdout)
	code, show, stderr := c.run("threads", "show", id)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, show, "status      done\n")
	assert.Contains(t, show, "plan        SQLite or PostgreSQL for an embedded agent engine\n")
	assert.Contains(t, show, "  s3   done     researcher         Weigh the trade-offs and recommend\n")
	assert.Contains(t, show, "**Recommendation:** use SQLite by default")

	code, list, _ := c.run("threads", "list")
	require.Equal(t, exitOK, code)
	assert.Regexp(t, `(?m)^THREAD +WORKFLOW +STATUS +LAST RUN +CHECKPOINTS +UPDATED\n`+id+`  coor      done    `+runOf(t, stdout)+`  7 `, list)

	code, hist, _ := c.run("threads", "history", id, "--json")
	require.Equal(t, exitOK, code)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(hist), &rows))
	require.Len(t, rows, 7)
	assert.Equal(t, []any{"reporter"}, rows[0]["writers"])
	assert.Equal(t, "input", rows[6]["source"])

	code, agents, _ := c.run("agents", "list")
	require.Equal(t, exitOK, code)
	assert.Regexp(t, `(?m)^sqlite_analyst +built +reasoning +http_fetch +Analyses SQLite`, agents, "the built agents are kept")
}

func TestASecondRunReusesTheAgentsTheFirstBuilt(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stdout, "· build")
	assert.Contains(t, normalize(stdout, c.db), "T.TTs   ✓ team  steps: 3 done of 3; reused agents built in an earlier run: sqlite_analyst, postgres_analyst\n")
}

func TestTheResearchExampleWaitsForItsReviewAndResumesInAnotherProcess(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/research", "--input", "How fast is SQLite?")
	require.Equal(t, exitInterrupted, code, stderr)
	id := threadOf(t, stdout)
	assert.Contains(t, stdout, "? human_feedback  asks a question\n")
	assert.Contains(t, stdout, "\nPlan: Checkpoints per second with SQLite in WAL mode\n  s1  researcher  Find the commit cost of WAL mode\n  s2  coder  Compute checkpoints per second\nAccept this plan, say what to change, or send an edited plan.\n")
	assert.Contains(t, stdout, "the run waits for an answer; thread "+id+" is saved in "+c.db+". Continue with:\n  coorflow run ../../examples/research --thread "+id+" --resume '<answer>'\n")

	code, stdout, stderr = c.run("run", "../../examples/research", "--thread", id, "--resume", "accept")
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(normalize(stdout, c.db), "\n")
	for _, want := range []string{"T.TTs ✓ research_team  next: step s1", "T.TTs ✓ s1 researcher  (0.85)", "T.TTs ✓ s2 coder  (0.90)", "T.TTs ✓ reporter  answer: 14 lines"} {
		assert.GreaterOrEqual(t, index(lines, want), 0, "%q in\n%s", want, stdout)
	}
	assert.Less(t, index(lines, "T.TTs ✓ s1 researcher"), index(lines, "T.TTs ▶ s2 coder"), "one step at a time")
	assert.Contains(t, stdout, "**Answer:** about **1,000 checkpoints per second**")

	code, _, stderr = c.run("run", "../../examples/research", "--thread", id, "--resume", "accept")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "coorflow: thread "+id+" waits for no answer (done): nothing to resume\n", stderr)
}

func TestOnATerminalTheQuestionIsAskedAndTheRunGoesOn(t *testing.T) {
	c := newCLI(t)
	c.interactive, c.stdin = true, "\naccept\n"
	code, stdout, stderr := c.run("run", "../../examples/research", "--input", "How fast is SQLite?")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "Accept this plan, say what to change, or send an edited plan.\n")
	assert.Contains(t, stdout, "\n> > ", "an empty answer asks again")
	assert.Contains(t, stdout, "✓ reporter  answer: 14 lines")

	c.stdin = "" // the person closed stdin
	code, stdout, _ = c.run("run", "../../examples/research", "--input", "again")
	assert.Equal(t, exitInterrupted, code)
	assert.Equal(t, 1, strings.Count(stdout, "Accept this plan"), "the question is shown once")
	assert.Contains(t, stdout, "--resume '<answer>'\n")
}

func TestJSONOutputIsOneEventPerLineThenTheResult(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput, "--json")
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	kinds := map[string]int{}
	for _, l := range lines[:len(lines)-1] {
		var ev struct{ Kind, Path string }
		require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
		kinds[ev.Kind]++
	}
	assert.Equal(t, 2, kinds["agent_created"])
	assert.Equal(t, 3, kinds["agent_start"])
	assert.Zero(t, kinds["token"], "tokens only with --stream")
	var res runResult
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &res))
	assert.Equal(t, "result", res.Kind)
	assert.Equal(t, "done", res.Status)
	assert.True(t, res.Demo)
	assert.Equal(t, "coor", res.Workflow)
	assert.Regexp(t, `^r-[0-9a-f]{8}$`, res.RunID, "the run is recorded")
	assert.Contains(t, res.Output, "# SQLite or PostgreSQL for an embedded agent engine")

	code, stdout, _ = c.run("run", "../../examples/research", "--input", "x", "--json")
	assert.Equal(t, exitInterrupted, code)
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &res))
	assert.Equal(t, "interrupted", res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "coorflow run ../../examples/research --thread "+res.Thread+" --resume '<answer>'", res.Resume)
}

func TestStreamPrintsTheModelsTokens(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput, "--stream")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "[reporter] # SQLite or PostgreSQL")
}

// cancelAt cancels the command's context when its output shows marker.
type cancelAt struct {
	marker string
	cancel context.CancelFunc
	once   sync.Once
}

func (w *cancelAt) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.marker) {
		w.once.Do(w.cancel)
	}
	return len(p), nil
}

func TestCtrlCStopsTheRunAndARunWithoutInputContinuesIt(t *testing.T) {
	c := newCLI(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c.ctx, c.stdout = ctx, &cancelAt{marker: "▶ team", cancel: cancel}
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitCancelled, code, stderr)
	id := threadOf(t, stdout)
	assert.Equal(t, "coorflow: the thread keeps every finished step; continue with: coorflow run ../../examples/coor --thread "+id+"\ncoorflow: cancelled\n",
		stderr[strings.Index(stderr, "\n")+1:])

	c.ctx, c.stdout = nil, nil
	code, stdout, stderr = c.run("run", "../../examples/coor", "--thread", id)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stdout, "▶ coordinator", "the finished steps do not run again")
	assert.Contains(t, stdout, "▶ team")
	assert.Contains(t, stdout, "**Recommendation:** use SQLite by default")
}

func TestBadUsesOfTheCommandLineSayWhatIsWrongWithTheirExitCode(t *testing.T) {
	c := newCLI(t)
	missingDB := filepath.Join(t.TempDir(), "none.db")
	cases := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stderr string
	}{
		{"unknown command", []string{"rnu"}, nil, exitUsage, `coorflow: unknown command "rnu" (did you mean "run"?); run coorflow help`},
		{"run without a workflow", []string{"run", "--input", "x"}, nil, exitUsage, "coorflow: run: want one workflow (a file, a directory or a built-in name), got 0 arguments"},
		{"run without input", []string{"run", "../../examples/coor"}, nil, exitUsage, "coorflow: run: give the input with --input (a new thread starts with one)"},
		{"unknown flag", []string{"run", "../../examples/coor", "--bogus"}, nil, exitUsage, "coorflow: run: flag provided but not defined: -bogus; run coorflow help"},
		{"resume without thread", []string{"run", "../../examples/coor", "--resume", "yes"}, nil, exitUsage, "coorflow: run: --resume and --answer continue a thread: give it with --thread"},
		{"input and resume", []string{"run", "../../examples/coor", "--thread", "t1", "--resume", "yes", "--input", "x"}, nil, exitUsage,
			"coorflow: run: --input starts a new turn and --resume answers a question: give one of them"},
		{"bad thread id", []string{"run", "../../examples/coor", "--thread", "a b", "--input", "x"}, nil, exitUsage, `coorflow: run: thread id "a b": use letters, digits, '.', '_', ':' and '-'`},
		{"missing workflow", []string{"run", "nowhere.yaml", "--input", "x"}, nil, exitUsage, "coorflow: no workflow file or directory nowhere.yaml (built-in workflows: coor, research)"},
		{"directory without workflow", []string{"run", "testdata", "--input", "x"}, nil, exitUsage, "coorflow: testdata is a directory without a workflow.yaml"},
		{"bad --model", []string{"run", "../../examples/coor", "--input", "x", "--model", "fast=openai:gpt-4o"}, nil, exitUsage,
			`coorflow: --model fast=openai:gpt-4o: llm: unknown tier "fast" (known tiers: [basic reasoning vision code])`},
		{"asked-for model without its key", []string{"run", "../../examples/coor", "--input", "x", "--model", "basic=anthropic:claude-sonnet-4"}, nil, exitUsage,
			"coorflow: workflows: ../../examples/coor/workflow.yaml: llm: models.basic.api_key_env: environment variable ANTHROPIC_API_KEY is not set (it should hold the anthropic API key)"},
		{"bad COORFLOW_MODEL", []string{"run", "../../examples/coor", "--input", "x"}, map[string]string{"COORFLOW_MODEL": "gpt-4o"}, exitUsage,
			`coorflow: llm: COORFLOW_MODEL="gpt-4o": want provider:model, e.g. openai:gpt-4o`},
		{"file of llm nodes without key or demo script", []string{"run", "../../workflows/testdata/run/summarize.yaml", "--input", "x"}, nil, exitUsage,
			"coorflow: workflows: ../../workflows/testdata/run/summarize.yaml: llm: models.basic.api_key_env: environment variable OPENAI_API_KEY is not set (it should hold the openai API key); to run offline instead, add \"demo: {script: demo.yaml}\" to the file and write in demo.yaml the answers of its nodes \"summarize\" and \"headline\" (the format: docs/demo-scripts.md)"},
		{"resume of an unknown thread", []string{"run", "../../examples/coor", "--thread", "t-none", "--resume", "yes"}, nil, exitUsage,
			"coorflow: thread t-none does not exist in " + c.db + ": nothing to resume"},
		{"invalid file", []string{"run", "../../workflows/testdata/bad/unknown_node_type.yaml", "--input", "x"}, nil, exitUsage,
			`../../workflows/testdata/bad/unknown_node_type.yaml:5:11: nodes.a.type: "lmm" is not one of llm, react, coordinator, planner, human_review, team, reporter, router, tool, subgraph, go, interrupt, background_investigator, research_team, worker (did you mean "llm"?)`},
		{"file that needs Go", []string{"run", "../../examples/embed", "--input", "x"}, nil, exitUsage,
			"coorflow: ../../examples/embed needs tool lookup_order, function escalate from the Go program that runs it; the coorflow command cannot run it (see examples/embed)"},
		{"validate without files", []string{"validate"}, nil, exitUsage, "coorflow: validate: give the files to check"},
		{"graph of two files", []string{"graph", "coor", "research"}, nil, exitUsage, "coorflow: graph: give one workflow file"},
		{"unknown threads subcommand", []string{"threads", "lsit"}, nil, exitUsage, `coorflow: threads: unknown subcommand "lsit" (did you mean "list"?) (want list, show, history or rm)`},
		{"threads show without id", []string{"threads", "show"}, nil, exitUsage, "coorflow: threads show: give one thread id"},
		{"threads show without database", []string{"threads", "show", "t-1", "--db", missingDB}, nil, exitFailed,
			"coorflow: no database at " + missingDB + ": nothing has run here yet (or pass --db)"},
		{"agents edit without change", []string{"agents", "edit", "researcher"}, nil, exitUsage, "coorflow: agents edit: say what to change: --prompt, --description, --tier or --tools"},
		{"serve without token", []string{"serve"}, nil, exitUsage, "coorflow: serve: every request needs a bearer token: give --token-file FILE (lines TOKEN or TOKEN=OWNER), or set COORFLOW_TOKENS or COORFLOW_TOKEN"},
		{"replica flags on SQLite", []string{"serve", "--replica", "a", "--lease-ttl", "5s"}, nil, exitUsage,
			"coorflow: serve: --lease-ttl and --replica: replicas share a PostgreSQL database (--db postgres://…); on SQLite, coorflow serve is one process"},
		{"lease too short", []string{"serve", "--db", "postgres://nobody@127.0.0.1:1/none", "--lease-ttl", "10ms"}, nil, exitUsage,
			"coorflow: serve: --lease-ttl 10ms is too short: a replica renews its lease every third of it; give at least 100ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.env = tc.env
			code, _, stderr := c.run(tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.stderr+"\n", stderr)
		})
	}
	c.env = nil

	code, _, stderr := c.run()
	assert.Equal(t, exitUsage, code)
	assert.True(t, strings.HasPrefix(stderr, "coorflow checks, draws, runs and serves coorflow workflows.\n"), "no command prints the usage")
	code, stdout, _ := c.run("help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "Exit codes: 0 done; 1 the work failed (a replay that diverged too); 2 the command\n")
}

func TestThreadsAndAgentsOfAThreadThatDoesNotExist(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"threads", "show", "t-ghost"}, exitFailed, "coorflow: thread t-ghost does not exist in " + c.db},
		{[]string{"threads", "history", "t-ghost"}, exitFailed, "coorflow: thread t-ghost does not exist in " + c.db},
		{[]string{"agents", "show", "ghost"}, exitFailed, `coorflow: factory: agent not found: "ghost" (owner "default")`},
		{[]string{"agents", "rm", "researcher"}, exitFailed, `coorflow: factory: built-in agent: "researcher" cannot be removed; edit it instead`},
		{[]string{"agents", "edit", "researcher", "--tier", "fast"}, exitUsage, `coorflow: agents edit --tier: llm: unknown tier "fast" (known tiers: [basic reasoning vision code])`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := c.run(tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.stderr+"\n", stderr)
		})
	}
}

func TestAgentsEditPersistsThroughTheRegistry(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)

	code, stdout, stderr := c.run("agents", "edit", "sqlite_analyst", "--description", "Knows SQLite.", "--tier", "code", "--tools", "python,http_fetch")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "updated agent sqlite_analyst (revision 2)\n", stdout)
	code, stdout, _ = c.run("agents", "show", "sqlite_analyst", "--json")
	require.Equal(t, exitOK, code)
	var ag map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &ag))
	assert.Equal(t, "Knows SQLite.", ag["description"])
	assert.Equal(t, "code", ag["tier"])
	assert.Equal(t, []any{"python", "http_fetch"}, ag["tools"])

	prompt := filepath.Join(t.TempDir(), "prompt.md")
	require.NoError(t, os.WriteFile(prompt, []byte("You research one question.\n\n# Steps\n1. Reason first.\n\n# Output Format\nReasoning, then facts.\n\n# Notes\n- Cite.\n"), 0o644))
	code, stdout, stderr = c.run("agents", "edit", "researcher", "--prompt", "@"+prompt)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "updated agent researcher (revision 1)\n", stdout)
	code, stdout, _ = c.run("agents", "list")
	require.Equal(t, exitOK, code)
	assert.Regexp(t, `(?m)^researcher +built-in, edited +basic`, stdout)
	code, stdout, _ = c.run("agents", "show", "researcher")
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "prompt       pinned (written or fixed by a person)\n\nYou research one question.")

	code, stdout, _ = c.run("agents", "rm", "researcher")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "removed agent researcher\n", stdout)
	code, stdout, _ = c.run("agents", "list")
	require.Equal(t, exitOK, code)
	assert.Regexp(t, `(?m)^researcher +built-in +basic`, stdout, "removing the edit restores the built-in")
}

func TestValidateAndGraph(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("validate", "../../examples/coor", "../../examples/research/workflow.yaml", "research")
	require.Equal(t, exitOK, code, stderr)
	executes := func(file string, line int) string {
		return fmt.Sprintf("    when it runs, it executes:\n"+
			"      url https://api.tavily.com (web_search)  (tools.web_search, %s:%d)\n"+
			"      url any URL the model asks http_fetch for  (tools.http_fetch, %[1]s:%[3]d)\n"+
			"      code python: code the model writes, run by python3 when the program allows code execution (coorflow --allow-code-exec)  (tools.python, %[1]s:%[4]d)\n",
			file, line, line+3, line+4)
	}
	assert.Equal(t, "ok  ../../examples/coor  (coor: 5 nodes)\n"+executes("../../examples/coor/workflow.yaml", 25)+
		"ok  ../../examples/research/workflow.yaml  (research: 8 nodes)\n"+executes("../../examples/research/workflow.yaml", 26)+
		"ok  research  (research: 8 nodes)\n"+executes("research.yaml", 19), stdout)

	code, stdout, stderr = c.run("validate", "../../examples/embed")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "ok  ../../examples/embed  (triage: 3 nodes; its Go program registers tool lookup_order, function escalate)\n", stdout)
	code, stdout, _ = c.run("graph", "../../examples/embed")
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "  classify -.->|state.category == 'bug'| escalate\n", "a file that needs Go is drawn without it")

	code, stdout, stderr = c.run("validate", "../../examples/coor", "../../workflows/testdata/bad/cycle_with_no_exit.yaml", "../../workflows/testdata/bad/yaml_syntax.yaml")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "ok  ../../examples/coor  (coor: 5 nodes)\n"+executes("../../examples/coor/workflow.yaml", 25), stdout)
	assert.Equal(t, `../../workflows/testdata/bad/cycle_with_no_exit.yaml:4:3: nodes.a: node "a" cannot reach end: every route from it loops (a -> b -> a); add an exit, such as a conditional edge to end
../../workflows/testdata/bad/cycle_with_no_exit.yaml:5:3: nodes.b: node "b" cannot reach end: every route from it loops (b -> a -> b); add an exit, such as a conditional edge to end
../../workflows/testdata/bad/yaml_syntax.yaml:4:1: invalid YAML: did not find expected ',' or '}'
`, stderr)

	code, stdout, _ = c.run("validate", "../../workflows/testdata/bad/duplicate_node.yaml", "--json")
	assert.Equal(t, exitUsage, code)
	var verdicts []validation
	require.NoError(t, json.Unmarshal([]byte(stdout), &verdicts))
	require.Len(t, verdicts, 1)
	assert.Equal(t, workflows.Problem{File: "../../workflows/testdata/bad/duplicate_node.yaml", Line: 6, Column: 3, Path: "nodes.a",
		Message: `node "a" is defined twice (first at line 5); names must be unique`}, verdicts[0].Problems[0])

	code, stdout, _ = c.run("graph", "../../examples/coor")
	require.Equal(t, exitOK, code)
	golden, err := os.ReadFile("testdata/coor.mmd")
	require.NoError(t, err)
	assert.Equal(t, string(golden), stdout)

	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: noModel{}, Profile: llm.Profile{Model: "m"}}})
	require.NoError(t, err)
	research, err := workflows.Research(t.Context(), workflows.Env{Models: ms})
	require.NoError(t, err)
	code, stdout, _ = c.run("graph", "research")
	require.Equal(t, exitOK, code)
	assert.Equal(t, research.Mermaid(), stdout, "the built-in file draws the Go workflow's graph")

	code, stdout, _ = c.run("schema")
	require.Equal(t, exitOK, code)
	assert.Equal(t, string(workflows.Schema()), stdout)
}

func TestServeRunsTheWorkflowsBehindTheHTTPAPI(t *testing.T) {
	c := newCLI(t)
	c.env["COORFLOW_TOKENS"] = "secret=alice"
	goEnv(c) // examples/mcp starts its MCP server with go run
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	c.ctx, c.stdout = ctx, pw
	done := make(chan int, 1)
	var serveErr string
	go func() {
		code, _, stderr := c.run("serve", "../../examples", "--addr", "127.0.0.1:0")
		serveErr = stderr
		_ = pw.Close()
		done <- code
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan())
	first := lines.Text()
	addr := regexp.MustCompile(`http://[0-9.:]+`).FindString(first)
	require.NotEmpty(t, addr, first)
	// Every example with a demo script is listed (embed is left out: it
	// needs its Go program), sorted by name.
	var want []string
	dirs, err := filepath.Glob("../../examples/*/demo.yaml")
	require.NoError(t, err)
	for _, d := range dirs {
		name := filepath.Base(filepath.Dir(d))
		if name == "embed" {
			continue
		}
		line := fmt.Sprintf("  %-12s scripted demo model (../../examples/%s/demo.yaml)", name, name)
		if name == "coor" {
			line += " for requests naming SQLite and PostgreSQL, reactive demo model (built-in) for others"
		}
		want = append(want, line)
	}
	require.Contains(t, want, "  research     scripted demo model (../../examples/research/demo.yaml)")
	var listed []string
	for range want {
		require.True(t, lines.Scan())
		listed = append(listed, lines.Text())
	}
	assert.Equal(t, want, listed)
	go func() {
		for lines.Scan() { // drain what follows
		}
	}()

	call := func(method, path, body string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), method, addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := call("GET", "/v1/workflows", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"name":"coor"`)
	assert.Contains(t, body, `"name":"research"`)
	code, body = call("POST", "/v1/threads", `{"workflow": "research", "thread_id": "web-1"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = call("POST", "/v1/threads/web-1/runs/wait", `{"input": {"input": "How fast is SQLite?"}}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"status":"interrupted"`, "the plan waits for its review")
	code, body = call("POST", "/v1/threads/web-1/runs/wait", `{"resume": "accept"}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"status":"done"`)
	assert.Contains(t, body, "1,000 checkpoints per second")
	code, body = call("GET", "/v1/agents", "")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"name":"researcher"`)

	cancel()
	assert.Equal(t, exitOK, <-done)
	c.ctx, c.stdout = nil, nil
	runs := c.listRuns()
	require.Len(t, runs, 2, "serve recorded both runs in the database")
	assert.Equal(t, []string{"done", "interrupted"}, []string{runs[0].Status, runs[1].Status})
	for _, r := range runs {
		assert.Equal(t, "alice", r.Owner)
		assert.Equal(t, "web-1", r.Thread)
		assert.Equal(t, "research", r.Workflow)
	}
	assert.Contains(t, serveErr, "coorflow: serve: left out ../../examples/embed/workflow.yaml (it needs tool lookup_order, function escalate from its Go program)\n")
	c.env = map[string]string{"COORFLOW_TOKEN": "t"}
	_, _, stderr := c.run("serve", "../../examples/embed")
	assert.Equal(t, "coorflow: ../../examples/embed needs tool lookup_order, function escalate from the Go program that runs it; the coorflow command cannot run it (see examples/embed)\n", stderr)
}

// TestStreamPrintsTheReportOnce: the report streamed as tokens is not
// printed again when the run ends.
func TestStreamPrintsTheReportOnce(t *testing.T) {
	code, plain, stderr := newCLI(t).run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	end := strings.LastIndex(plain, "\nthread t-")
	begin := strings.LastIndex(plain[:end], "s   ✓ ")
	require.Positive(t, begin)
	report := strings.TrimSpace(plain[begin+strings.IndexByte(plain[begin:], '\n') : end])
	require.NotEmpty(t, report)

	code, streamed, stderr := newCLI(t).run("run", "../../examples/coor", "--input", coorInput, "--stream")
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(report, "\n")
	for _, line := range []string{lines[0], lines[len(lines)-1]} {
		require.Equal(t, 1, strings.Count(plain, line), "line %q is the report's own", line)
		assert.Equal(t, 1, strings.Count(streamed, line), "line %q of the report is printed once", line)
	}
	assert.Contains(t, streamed, "(the answer is the text streamed above)")
}
