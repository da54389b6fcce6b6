//go:build temporal

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/temporaltest"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/temporalrun"
	"github.com/coorflow/coorflow/workflows"
)

// TestWorkerRunsAWorkflowOnTemporal starts coorflow worker for the coor
// example (its demo model) against a real Temporal dev server, and runs
// the workflow through it from Go: the run's steps execute in the worker.
func TestWorkerRunsAWorkflowOnTemporal(t *testing.T) {
	srv := temporaltest.Start(t, temporaltest.Options{})
	c := newCLI(t)
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	c.ctx, c.stdout = ctx, pw
	type result struct {
		code   int
		stdout string
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := c.run("worker", "--temporal", srv.HostPort, "--queue", "cli", "--demo", "../../examples/coor")
		_ = pw.Close()
		done <- result{code, stdout, stderr}
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan(), "the worker started")
	assert.Contains(t, lines.Text(), "worker for runs and steps on Temporal "+srv.HostPort+" (namespace default, queue cli")
	go func() {
		for lines.Scan() { // keep the pipe flowing
		}
	}()

	wf, err := workflows.Load("../../examples/coor/workflow.yaml")
	require.NoError(t, err)
	ms, err := wf.Resolve(t.Context(), workflows.ModelOptions{Getenv: func(string) string { return "" }, Demo: true})
	require.NoError(t, err)
	r, err := wf.Compile(t.Context(), workflows.Env{Models: ms.Models, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	saver, err := sqlite.Open(t.Context(), c.db)
	require.NoError(t, err)
	defer saver.Close()
	run, err := temporalrun.New(temporalrun.Config{Client: srv.Client(t), Graph: r, Saver: saver, TaskQueue: "cli"})
	require.NoError(t, err)
	res, err := run.Invoke(t.Context(), graph.Input(nodes.Input.Set("Compare SQLite and PostgreSQL")), graph.Thread("cli-1"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.True(t, strings.HasPrefix(nodes.Answer.Get(res.State), "# SQLite or PostgreSQL"), nodes.Answer.Get(res.State))

	// coorflow run submits to the same workers.
	cr := &cli{t: t, db: c.db, env: map[string]string{}}
	code, stdout, stderr := cr.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "cli", "--demo",
		"--thread", "cli-2", "--input", "Compare SQLite and PostgreSQL")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "# SQLite or PostgreSQL")

	cancel()
	out := <-done
	assert.Equal(t, exitOK, out.code, out.stderr)
	assert.Contains(t, out.stdout, "stopped")
}

func TestWorkerSaysWhenTemporalIsUnreachable(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("worker", "--temporal", "127.0.0.1:1", "--demo", "../../examples/coor")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "worker: connect to Temporal at 127.0.0.1:1")
}

// startWorker runs coorflow worker with args until the test ends, and
// returns once it serves.
func startWorker(t *testing.T, c *cli, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	c.ctx, c.stdout = ctx, pw
	done := make(chan int, 1)
	go func() {
		code, _, _ := c.run(append([]string{"worker"}, args...)...)
		_ = pw.Close()
		done <- code
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan(), "the worker started")
	require.Contains(t, lines.Text(), "worker for runs and steps on Temporal")
	go func() {
		for lines.Scan() { // keep the pipe flowing
		}
	}()
	t.Cleanup(func() {
		cancel()
		assert.Equal(t, exitOK, <-done)
	})
}

// TestWorkerStreamsARunAsALocalRunShowsIt: with threads on PostgreSQL,
// coorflow run --temporal prints what a run in process prints (the
// golden of the local run), node by node, as the workers run it; with
// --stream, the reporter's tokens too.
func TestWorkerStreamsARunAsALocalRunShowsIt(t *testing.T) {
	url := freshDatabase(t)
	srv := temporaltest.Start(t, temporaltest.Options{})
	startWorker(t, newCLI(t), "--temporal", srv.HostPort, "--queue", "pg", "--demo", "--db", url, "../../examples/coor")

	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "pg", "--db", url, "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	golden, err := os.ReadFile("testdata/coor_run.golden")
	require.NoError(t, err)
	got := normalize(stdout, redact(url))
	want := strings.Split(string(golden), "\n")
	assert.ElementsMatch(t, want, strings.Split(got, "\n"), "got:\n%s", got)
	lines := strings.Split(got, "\n")
	for _, order := range [][2]string{
		{"T.TTs ✓ coordinator", "T.TTs ▶ planner"},
		{"T.TTs ▶ team", "T.TTs ▶ s3 researcher"},
		{"T.TTs ✓ team", "T.TTs ✓ reporter"},
	} {
		before, after := index(lines, order[0]), index(lines, order[1])
		require.True(t, before >= 0 && after >= 0, "%q and %q are printed", order[0], order[1])
		assert.Less(t, before, after, "%q before %q", order[0], order[1])
	}

	code, stdout, stderr = c.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "pg", "--db", url, "--input", coorInput, "--stream")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "[reporter] # SQLite or PostgreSQL")
}

// TestWorkerOnSQLiteShowsOnlyTheOutcome: threads on SQLite have no event
// log; run --temporal says so and shows the outcome.
func TestWorkerOnSQLiteShowsOnlyTheOutcome(t *testing.T) {
	srv := temporaltest.Start(t, temporaltest.Options{})
	w := newCLI(t)
	startWorker(t, w, "--temporal", srv.HostPort, "--queue", "lite", "--demo", "../../examples/coor")
	c := &cli{t: t, db: w.db, env: map[string]string{}}
	code, stdout, stderr := c.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "lite", "--demo", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "run --temporal: threads are in "+w.db+": only the run's outcome is shown (its events reach this process through PostgreSQL: --db postgres://...)")
	assert.NotContains(t, stdout, "▶ coordinator")
	assert.Contains(t, stdout, "# SQLite or PostgreSQL")
}

// TestWorkerRunsTheRunsOfServeTemporal: coorflow serve --temporal submits
// its runs to the workers; the /v1 stream shows their events as the
// workers run them, the review's interrupt ends the first run, and a
// resume streams the rest.
func TestWorkerRunsTheRunsOfServeTemporal(t *testing.T) {
	url := freshDatabase(t)
	srv := temporaltest.Start(t, temporaltest.Options{})
	startWorker(t, newCLI(t), "--temporal", srv.HostPort, "--queue", "served", "--demo", "--db", url, "../../examples/research")

	c := newCLI(t)
	c.env["COORFLOW_TOKENS"] = "secret=alice"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	c.ctx, c.stdout = ctx, pw
	done := make(chan int, 1)
	go func() {
		code, _, _ := c.run("serve", "../../examples/research", "--addr", "127.0.0.1:0", "--db", url, "--demo",
			"--temporal", srv.HostPort, "--queue", "served")
		_ = pw.Close()
		done <- code
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan())
	addr := regexp.MustCompile(`http://[0-9.:]+`).FindString(lines.Text())
	require.NotEmpty(t, addr, lines.Text())
	go func() {
		for lines.Scan() { // keep the pipe flowing
		}
	}()
	call := func(path, body string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := call("/v1/threads", `{"workflow": "research", "thread_id": "web-1"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = call("/v1/threads/web-1/runs/stream", `{"input": {"input": "How fast is SQLite?"}}`)
	require.Equal(t, http.StatusOK, code, body)
	names := sseNames(body)
	assert.Equal(t, "run_start", names[0])
	assert.Contains(t, names, "node_end")
	assert.Contains(t, names, "model_call", "the workers' model calls reach the stream")
	assert.Equal(t, []string{"interrupt", "run_end", "end"}, names[len(names)-3:], "the review's question ends the run")
	assert.Contains(t, body, `"status":"interrupted"`)
	assert.Positive(t, sseEndUsage(t, body).Calls, "the run's usage counts the workers' model calls")

	code, body = call("/v1/threads/web-1/runs/stream", `{"resume": "accept"}`)
	require.Equal(t, http.StatusOK, code, body)
	names = sseNames(body)
	assert.Equal(t, []string{"run_end", "end"}, names[len(names)-2:])
	assert.Contains(t, names, "node_start")
	assert.Contains(t, body, `"status":"done"`)
	assert.Contains(t, body, "1,000 checkpoints per second")

	// The same through the LangGraph Platform API: its streams are made
	// from the same events.
	code, body = call("/threads", `{"thread_id": "lg-1", "metadata": {"graph_id": "research"}}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = call("/threads/lg-1/runs/stream",
		`{"assistant_id": "research", "input": {"input": "How fast is SQLite?"}, "stream_mode": ["updates"]}`)
	require.Equal(t, http.StatusOK, code, body)
	names = sseNames(body)
	assert.Equal(t, "metadata", names[0])
	assert.Contains(t, names, "updates")
	assert.Contains(t, body, `"__interrupt__"`, "the review's question")
	code, body = call("/threads/lg-1/runs/stream",
		`{"assistant_id": "research", "command": {"resume": "accept"}, "stream_mode": ["values"]}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, sseNames(body), "values")
	assert.Contains(t, body, "1,000 checkpoints per second")

	cancel()
	assert.Equal(t, exitOK, <-done)
}

// sseEndUsage returns the usage of the run an "end" event of a /v1
// stream reports.
func sseEndUsage(t *testing.T, body string) llm.Spend {
	t.Helper()
	_, end, ok := strings.Cut(body, "event: end\ndata: ")
	require.True(t, ok, "the stream has an end event")
	end, _, _ = strings.Cut(end, "\n")
	var run struct {
		Usage llm.Spend `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(end), &run), end)
	return run.Usage
}

// sseNames returns the event names of a server-sent event stream.
func sseNames(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			out = append(out, name)
		}
	}
	return out
}

// TestWorkerlessServeTemporalNeedsPostgres: on SQLite the events of runs cannot
// reach the server from the workers; serve --temporal says so.
func TestWorkerlessServeTemporalNeedsPostgres(t *testing.T) {
	c := newCLI(t)
	c.env["COORFLOW_TOKENS"] = "secret=alice"
	code, _, stderr := c.run("serve", "../../examples/research", "--demo", "--temporal", "127.0.0.1:1")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "serve --temporal: threads are in "+c.db+": the runs' events reach the server from the workers through PostgreSQL; use --db postgres://… (the workers' database)")
}

// TestWorkerPrunesTheEventLogWhenItStarts: a worker prunes the event log
// at once, not only an hour after it started (a worker restarted more
// often would never prune); a prune that fails says why on stderr.
func TestWorkerPrunesTheEventLogWhenItStarts(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pruneEvents(ctx, temporalrun.NewEventLog(nil, temporalrun.EventLogConfig{}), pw)
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "coorflow: worker: temporalrun: prune the event log: temporalrun: the event log is not started (EventLog.Start)\n", line)
	cancel()
	<-done
}

// TestWorkerTimeoutFlagsReachTheSteps: run --temporal's
// --heartbeat-timeout and --schedule-to-start-timeout are the timeouts of
// the run's steps on the workers (in the workflow's history) with
// --local-steps=false, and by default steps run as local activities;
// nonsense is refused
// before anything starts.
func TestWorkerTimeoutFlagsReachTheSteps(t *testing.T) {
	srv := temporaltest.Start(t, temporaltest.Options{})
	c := newCLI(t)
	startWorker(t, c, "--temporal", srv.HostPort, "--queue", "timeouts", "--sticky-timeout", "1s", "--demo", "../../examples/coor")
	cr := &cli{t: t, db: c.db, env: map[string]string{}}
	code, _, stderr := cr.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "timeouts", "--demo",
		"--heartbeat-timeout", "3s", "--schedule-to-start-timeout", "1m", "--local-steps=false", "--thread", "timeouts-1", "--input", "Compare SQLite and PostgreSQL")
	require.Equal(t, exitOK, code, stderr)
	it := srv.Client(t).GetWorkflowHistory(t.Context(), "timeouts-1", "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	steps := 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			steps++
			assert.Equal(t, 3*time.Second, a.GetHeartbeatTimeout().AsDuration())
			assert.Equal(t, time.Minute, a.GetScheduleToStartTimeout().AsDuration())
		}
	}
	assert.Positive(t, steps)

	// By default (--local-steps): the steps after the first are markers
	// of local activities in the history, and the run ends as before.
	code, stdout, stderr := cr.run("run", "../../examples/coor", "--temporal", srv.HostPort, "--queue", "timeouts", "--demo",
		"--local-steps", "--thread", "timeouts-2", "--input", "Compare SQLite and PostgreSQL")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "# SQLite or PostgreSQL")
	markers := 0
	it = srv.Client(t).GetWorkflowHistory(t.Context(), "timeouts-2", "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if ev.GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED {
			markers++
		}
	}
	assert.Positive(t, markers)

	for _, bad := range [][]string{{"--heartbeat-timeout", "0s"}, {"--schedule-to-start-timeout", "-1s"}} {
		code, _, stderr = cr.run(append([]string{"run", "../../examples/coor", "--temporal", srv.HostPort, "--demo", "--input", "x"}, bad...)...)
		assert.Equal(t, exitUsage, code, stderr)
		assert.Contains(t, stderr, bad[0]+" must be")
	}
	code, _, stderr = cr.run("worker", "--temporal", srv.HostPort, "--sticky-timeout", "0s", "--demo", "../../examples/coor")
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "--sticky-timeout must be positive")
}
