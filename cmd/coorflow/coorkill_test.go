//go:build temporal

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"gopkg.in/yaml.v3"

	"github.com/coorflow/coorflow/internal/temporaltest"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/temporalrun"
)

// TestACoorRunOnThreeWorkerProcessesSurvivesKill9 runs the coor example
// on Temporal with three coorflow worker processes and kills one of them
// (SIGKILL) once a team agent's model call is in flight: in even trials
// the worker making that call, in odd ones the worker that made the
// planner's call (the one that runs the run's steps, and so the team
// node's, in every run seen), whatever agent's call is in flight then.
// The model server holds the first agent call until the kill, and every
// call of the worker to kill from then on, until it dies. The run ends
// with the report a run in process gives (same workflow, same model),
// and the only model calls made twice are those held on the killed
// worker: every other call was journaled before the kill and is read
// back, not made again.
//
// The model speaks OpenAI's wire protocol and answers each role of the
// workflow from examples/coor/demo.yaml, from what the request holds
// (not in the order calls come), so a local run and a run on the workers
// get the same answers; each worker reaches it under a path of its own,
// which says who made each call.
//
// COORFLOW_COOR_KILL_TRIALS (default 1) repeats the kill on a fresh
// database and queue; each trial logs the time from the kill to the
// first call made again (on another worker), the calls made again and
// whether the report is the local run's, the time from the kill to the
// first held call made again and to the call of the plan's third step
// (the team going on past what was in flight), and the step activities
// retried (the team node's, when it was on the killed worker).
func TestACoorRunOnThreeWorkerProcessesSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds coorflow and starts three workers per trial")
	}
	trials := 1
	if s := os.Getenv("COORFLOW_COOR_KILL_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "COORFLOW_COOR_KILL_TRIALS")
		trials = n
	}
	bin := filepath.Join(t.TempDir(), "coorflow")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-tags", "temporal", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	model := newCoorModel(t)
	srv := temporaltest.Start(t, temporaltest.Options{})

	local := newCLI(t)
	local.env = model.env("local")
	code, stdout, stderr := local.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitOK, code, stderr)
	want := reportIn(t, stdout)
	require.Empty(t, model.unknownRoles(), "every call of the local run is one the model knows")

	var lines []string
	for trial := range trials {
		r := coorKillTrial(t, bin, srv.HostPort, model, trial, want)
		lines = append(lines, fmt.Sprintf("trial %d: model calls by worker %v; killed %s (%s) with %d calls in flight; kill→call made again %v, →s3's call %v; made again: %v; step activities retried: %v; report identical: %t",
			trial, r.byWorker, r.victim, r.why, len(r.held), r.repeat.Round(time.Millisecond), r.progress.Round(time.Millisecond), r.repeated, r.retried, r.identical))
	}
	t.Logf("coor on three worker processes, %d kill -9 trials:\n%s", trials, strings.Join(lines, "\n"))
}

// killResult is what one trial saw.
type killResult struct {
	victim    string
	why       string
	byWorker  map[string]int
	held      []string
	repeated  []string
	retried   []string
	repeat    time.Duration
	progress  time.Duration
	identical bool
}

func coorKillTrial(t *testing.T, bin, hostPort string, model *coorModel, trial int, want string) killResult {
	t.Helper()
	db := freshDatabase(t)
	queue := fmt.Sprintf("coor-kill-%d", trial)
	arm := model.arm(trial%2 == 1)
	workers := map[string]*exec.Cmd{}
	for _, id := range []string{"w1", "w2", "w3"} {
		workers[id] = startWorkerProcess(t, bin, model.env(id), "--temporal", hostPort, "--queue", queue, "--db", db, "--sticky-timeout", "1s", "../../examples/coor")
	}
	c := newCLI(t)
	c.env = model.env("caller")
	thread := fmt.Sprintf("kill-%d", trial)
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := c.run("run", "../../examples/coor", "--temporal", hostPort, "--queue", queue, "--db", db,
			"--input", coorInput, "--thread", thread)
		done <- result{code, stdout, stderr}
	}()
	var victim string
	select {
	case victim = <-arm.victim:
	case r := <-done:
		t.Fatalf("trial %d: the run ended before a worker made a team agent's call: exit %d\n%s", trial, r.code, r.stderr)
	}
	cmd := workers[victim]
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_, _ = cmd.Process.Wait()
	arm.killed(time.Now())
	r := <-done
	require.Equal(t, exitOK, r.code, "trial %d: %s", trial, r.stderr)
	got := reportIn(t, r.stdout)
	assert.Equal(t, want, got, "trial %d: the report is the local run's", trial)

	res := killResult{victim: victim, why: "the agent's worker", identical: got == want, retried: retriedSteps(t, hostPort, thread)}
	if arm.planner {
		res.why = "the planner's worker"
	}
	arm.mu.Lock()
	defer arm.mu.Unlock()
	res.held = slices.Sorted(maps.Keys(arm.held))
	res.byWorker = maps.Clone(arm.byWorker)
	for key, n := range arm.calls {
		if n > 1 {
			res.repeated = append(res.repeated, key)
			assert.True(t, arm.held[key], "trial %d: call %s was made %d times but was not in flight at the kill", trial, key, n)
			assert.Equal(t, 2, n, "trial %d: call %s made again once", trial, key)
		}
	}
	slices.Sort(res.repeated)
	if !arm.planner {
		assert.NotEmpty(t, res.held, "trial %d: the killed worker had a call in flight", trial)
	}
	assert.Equal(t, res.held, res.repeated, "trial %d: exactly the calls in flight on the killed worker were made again", trial)
	assert.Empty(t, model.unknownRoles(), "trial %d: every call is one the model knows", trial)
	if !arm.repeatedAt.IsZero() {
		res.repeat = arm.repeatedAt.Sub(arm.killedAt)
	}
	if !arm.progressAt.IsZero() {
		res.progress = arm.progressAt.Sub(arm.killedAt)
	}
	return res
}

// retriedSteps returns the step activities of thread's workflow that ran
// more than once, by the nodes they ran.
func retriedSteps(t *testing.T, hostPort, thread string) []string {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: hostPort, Logger: temporalrun.Logger(io.Discard)})
	require.NoError(t, err)
	defer c.Close()
	it := c.GetWorkflowHistory(t.Context(), thread, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	retried := map[int64]bool{}
	var out []string
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == temporalrun.StepActivityName {
			scheduled[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] && a.GetAttempt() > 1 {
			retried[a.GetScheduledEventId()] = true
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && retried[a.GetScheduledEventId()] {
			var step temporalrun.StepOutput
			require.NoError(t, json.Unmarshal(a.GetResult().GetPayloads()[0].GetData(), &step))
			out = append(out, strings.Join(step.Ran, ","))
		}
	}
	return out
}

// startWorkerProcess starts bin worker with args and env, waits until it
// serves, and stops it (SIGTERM) when the test ends, if it still runs.
func startWorkerProcess(t *testing.T, bin string, env map[string]string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"worker"}, args...)...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	require.True(t, lines.Scan(), "the worker started")
	require.Contains(t, lines.Text(), "worker for runs and steps on Temporal")
	go func() {
		for lines.Scan() { // keep the pipe flowing
		}
	}()
	return cmd
}

// reportIn returns the report a coorflow run printed: from its title to
// the usage line.
func reportIn(t *testing.T, stdout string) string {
	t.Helper()
	start := strings.Index(stdout, "\n# ")
	end := strings.Index(stdout, "\nusage:")
	require.True(t, start >= 0 && end > start, "a report in:\n%s", stdout)
	return strings.TrimSpace(stdout[start:end])
}

// coorModel is the model of the kill test: an OpenAI-wire server that
// answers the roles of examples/coor from its demo script, reached by
// each process under a path of its own (/p/<id>/v1).
type coorModel struct {
	t       *testing.T
	front   *httptest.Server
	replies map[string]openaitest.Response
	mu      sync.Mutex
	cur     *killArm
	unknown []string
}

// killArm is one trial's record: every call of the workers by key (role
// and turn), the worker that made the first call of a team agent (the
// victim, or with planner the worker of the planner's call), whose calls
// are held from then on, and when surviving workers made calls after the
// kill.
// first made again.
type killArm struct {
	mu        sync.Mutex
	calls     map[string]int
	byWorker  map[string]int
	held      map[string]bool
	planner   bool
	plannerID string
	victimID  string
	victim    chan string
	release   chan struct{} // closed at the kill: a held call of a survivor goes on
	killedAt  time.Time
	// repeatedAt: a held call made again; progressAt: the call of the
	// step after the analysts' (s3, the researcher's), which the team
	// node starts once they are done.
	repeatedAt, progressAt time.Time
}

func (a *killArm) killed(at time.Time) {
	a.mu.Lock()
	a.killedAt = at
	a.mu.Unlock()
	close(a.release)
}

func newCoorModel(t *testing.T) *coorModel {
	t.Helper()
	m := &coorModel{t: t, replies: demoReplies(t)}
	back := openaitest.NewFunc(func(req openaitest.ChatRequest) openaitest.Response {
		role := roleOf(req)
		if r, ok := m.replies[role]; ok {
			return r
		}
		m.mu.Lock()
		m.unknown = append(m.unknown, role)
		m.mu.Unlock()
		return openaitest.Text("unknown role")
	})
	t.Cleanup(back.Close)
	target, err := url.Parse(back.URL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	m.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/p/")
		who, path, _ := strings.Cut(rest, "/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		body, err := readBody(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req openaitest.ChatRequest
		_ = json.Unmarshal(body, &req)
		if m.hold(who, fmt.Sprintf("%s#%d", roleOf(req), len(req.Messages))) {
			<-r.Context().Done() // until the worker dies
			return
		}
		r.URL.Path = "/" + path
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(m.front.Close)
	return m
}

// env is the environment of process who: the OpenAI provider, at its
// path of the model server.
func (m *coorModel) env(who string) map[string]string {
	return map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": m.front.URL + "/p/" + who + "/v1",
		"COORFLOW_MODEL": "", "TAVILY_API_KEY": ""}
}

// arm starts a trial's record.
func (m *coorModel) arm(planner bool) *killArm {
	a := &killArm{planner: planner, calls: map[string]int{}, byWorker: map[string]int{}, held: map[string]bool{},
		victim: make(chan string, 1), release: make(chan struct{})}
	m.mu.Lock()
	m.cur = a
	m.mu.Unlock()
	return a
}

func (m *coorModel) unknownRoles() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.unknown)
}

// hold counts a worker's call and says whether to hold it until the
// worker dies. The first call of a team agent picks the victim: its
// worker, or with planner the worker of the planner's call; the victim's
// calls are held from then on; the first agent call, when it is not the
// victim's, is held until the kill and then goes on.
func (m *coorModel) hold(who, key string) bool {
	m.mu.Lock()
	a := m.cur
	m.mu.Unlock()
	if a == nil || !strings.HasPrefix(who, "w") {
		return false // the local run, or the caller
	}
	a.mu.Lock()
	a.calls[key]++
	a.byWorker[who]++
	if !a.killedAt.IsZero() && who != a.victimID {
		switch {
		case a.held[key] && a.repeatedAt.IsZero():
			a.repeatedAt = time.Now()
		case strings.HasPrefix(key, "agent:researcher") && a.progressAt.IsZero():
			a.progressAt = time.Now()
		}
	}
	if strings.HasPrefix(key, "planner") && a.plannerID == "" {
		a.plannerID = who
	}
	wait := false
	if a.victimID == "" && strings.HasPrefix(key, "agent:") {
		a.victimID = who
		if a.planner {
			a.victimID = a.plannerID
		}
		a.victim <- a.victimID
		wait = who != a.victimID
	}
	held := who == a.victimID
	if held {
		a.held[key] = true
	}
	a.mu.Unlock()
	if wait {
		<-a.release
	}
	return held
}

// readBody reads r's body and leaves it to be read again.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// roleOf names the role of a call of the coor workflow from its system
// prompt (the prompts of nodes/prompts, factory/prompts and metaprompt)
// and, for a build or an agent, the agent it is about.
func roleOf(req openaitest.ChatRequest) string {
	system := ""
	var all strings.Builder
	for _, msg := range req.Messages {
		if msg.Role == "system" && system == "" {
			system = msg.Text()
		}
		all.WriteString(msg.Text())
	}
	agent := func() string {
		switch text := all.String(); {
		case strings.Contains(text, "sqlite_analyst"):
			return "sqlite_analyst"
		case strings.Contains(text, "postgres_analyst"):
			return "postgres_analyst"
		}
		return "?"
	}
	switch {
	case slices.Contains(req.ToolNames(), "handoff_to_planner"):
		return "coordinator"
	case strings.HasPrefix(system, "You are the planner of a team"):
		return "planner"
	case strings.HasPrefix(system, "You design agents for a team"):
		return "builder:" + agent()
	case strings.HasPrefix(system, "You write system prompts for AI agents"):
		return "metaprompt:" + agent()
	case strings.HasPrefix(system, "You write the final report"):
		return "reporter"
	case strings.HasPrefix(system, "You assess SQLite"):
		return "agent:sqlite_analyst"
	case strings.HasPrefix(system, "You assess PostgreSQL"):
		return "agent:postgres_analyst"
	case strings.Contains(all.String(), "Weigh the trade-offs and recommend"):
		return "agent:researcher"
	}
	first, _, _ := strings.Cut(system, "\n")
	return "unknown: " + first
}

// demoReplies reads the answers of examples/coor/demo.yaml by role.
func demoReplies(t *testing.T) map[string]openaitest.Response {
	t.Helper()
	data, err := os.ReadFile("../../examples/coor/demo.yaml")
	require.NoError(t, err)
	var script struct {
		Agents map[string][]struct {
			Text      string `yaml:"text"`
			ToolCalls []struct {
				Name      string         `yaml:"name"`
				Arguments map[string]any `yaml:"arguments"`
			} `yaml:"tool_calls"`
		} `yaml:"agents"`
	}
	require.NoError(t, yaml.Unmarshal(data, &script))
	out := map[string]openaitest.Response{}
	for label, replies := range script.Agents {
		require.Len(t, replies, 1, label)
		r := replies[0]
		role := label
		switch label {
		case "sqlite_analyst", "postgres_analyst", "researcher":
			role = "agent:" + label
		}
		if len(r.ToolCalls) == 0 {
			out[role] = openaitest.Text(r.Text)
			continue
		}
		var calls []openaitest.ToolCall
		for i, tc := range r.ToolCalls {
			args, err := json.Marshal(tc.Arguments)
			require.NoError(t, err)
			calls = append(calls, openaitest.ToolCall{ID: fmt.Sprintf("call_%s_%d", tc.Name, i), Name: tc.Name, Arguments: string(args)})
		}
		out[role] = openaitest.ToolCalls(calls...)
	}
	return out
}
