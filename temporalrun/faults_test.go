package temporalrun_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/internal/temporaltest"
	"github.com/coorflow/coorflow/temporalrun"
)

// The environment of a worker process started by a fault test (this test
// binary run again).
const (
	envHelper  = "COORFLOW_TEMPORAL_HELPER"
	envHost    = "COORFLOW_TEMPORAL_HELPER_HOST"
	envQueue   = "COORFLOW_TEMPORAL_HELPER_QUEUE"
	envSchema  = "COORFLOW_TEMPORAL_HELPER_SCHEMA"
	envCounter = "COORFLOW_TEMPORAL_HELPER_COUNTER"
	envSteps   = "COORFLOW_TEMPORAL_HELPER_STEPS"
	// envDefaults makes the worker run with NewWorker's default options.
	envDefaults = "COORFLOW_TEMPORAL_HELPER_DEFAULTS"
)

func TestMain(m *testing.M) {
	if id := os.Getenv(envHelper); id != "" {
		os.Exit(helperWorker(id))
	}
	os.Exit(m.Run())
}

var callLog = graph.NewKey("calls", graph.Append[string]())

// callChain is a chain of steps nodes; each makes one journaled call to
// the counter at url, saying which worker made it.
func callChain(name string, steps int, url, worker string) *graph.Runnable {
	g := graph.New(name, callLog)
	prev := graph.Start
	for i := range steps {
		node := fmt.Sprintf("n%02d", i)
		g.AddNode(node, func(ctx context.Context, s graph.State) (graph.Command, error) {
			task, _ := graph.TaskOf(ctx)
			v, err := graph.Do(ctx, "call", func(ctx context.Context) (string, error) {
				return call(ctx, url, task.Thread+"/"+node, worker)
			})
			if err != nil {
				return graph.Command{}, err
			}
			return graph.Update(graph.AppendTo(callLog, node+"@"+v)), nil
		})
		g.AddEdge(prev, node)
		prev = node
	}
	g.AddEdge(prev, graph.End)
	r, err := g.Compile()
	if err != nil {
		panic(err)
	}
	return r
}

func call(ctx context.Context, url, key, worker string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"?key="+key+"&worker="+worker, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("counter: %s", resp.Status)
	}
	return worker, nil
}

// helperWorker is a worker process: it runs until killed or its stdin
// closes.
func helperWorker(id string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var steps int
	fmt.Sscan(os.Getenv(envSteps), &steps)
	saver, err := postgres.Open(ctx, pgtest.URL(), postgres.WithSchema(os.Getenv(envSchema)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer saver.Close()
	c, err := client.Dial(client.Options{HostPort: os.Getenv(envHost), Logger: temporalrun.Logger(os.Stderr)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	pool, err := pgxpool.New(ctx, pgtest.URL())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	events := temporalrun.NewEventLog(pool, temporalrun.EventLogConfig{Schema: os.Getenv(envSchema)})
	if err := events.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer events.Close()
	graphs := temporalrun.NewGraphs(saver, callChain("chain", steps, os.Getenv(envCounter), id),
		callTeam("team", teamSize, os.Getenv(envCounter), id), tieredTeam("tiered", os.Getenv(envCounter), id),
		twoTeams("two-teams", 12, os.Getenv(envCounter), id)).StreamTo(events)
	opts := workerOptions()
	if os.Getenv(envDefaults) != "" {
		opts = worker.Options{}
	}
	fmt.Sscan(os.Getenv(envSlots), &opts.MaxConcurrentActivityExecutionSize)
	w, err := temporalrun.NewWorker(c, temporalrun.WorkerConfig{TaskQueue: os.Getenv(envQueue), Graphs: graphs, Options: opts})
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the test closed our stdin
		stop()
	}()
	<-ctx.Done()
	w.Stop()
	return 0
}

// counter counts the calls per key and per worker, and can hold one
// worker's calls (so they are in flight when it dies).
type counter struct {
	mu       sync.Mutex
	byKey    map[string]int
	byWorker map[string]int
	// first is the worker that made each call first.
	first   map[string]string
	hold    string
	held    map[string]bool
	heldCh  chan struct{}
	release chan struct{}
	notify  func(c *counter)
}

func newCounter() *counter {
	return &counter{byKey: map[string]int{}, byWorker: map[string]int{}, first: map[string]string{}, held: map[string]bool{},
		heldCh: make(chan struct{}, 1), release: make(chan struct{})}
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, worker := r.URL.Query().Get("key"), r.URL.Query().Get("worker")
	c.mu.Lock()
	c.byKey[key]++
	c.byWorker[worker]++
	if _, ok := c.first[key]; !ok {
		c.first[key] = worker
	}
	hold := c.hold != "" && worker == c.hold
	if hold {
		c.held[key] = true
		select {
		case c.heldCh <- struct{}{}:
		default:
		}
	}
	if c.notify != nil {
		c.notify(c)
	}
	c.mu.Unlock()
	if hold {
		select {
		case <-c.release:
		case <-r.Context().Done():
		}
		http.Error(w, "worker gone", http.StatusServiceUnavailable)
	}
}

// startHelper starts worker process id and waits until it polls.
func startHelper(t *testing.T, id string, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, envHelper+"="+id)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "worker %s did not start", id)
	require.Equal(t, "ready\n", line)
	return cmd
}

// TestKillAWorkerMidRun: two worker processes on one queue take 50 runs;
// one is killed with SIGKILL while calls of its steps are in flight. Every
// run finishes once, and every journaled call was made once, but the
// calls in flight at the kill, which the other worker makes again.
func TestKillAWorkerMidRun(t *testing.T) {
	const runs, steps = 50, 5
	e := newEnv(t)
	cnt := newCounter()
	hits := httptest.NewServer(cnt)
	defer hits.Close()
	defer close(cnt.release)
	env := []string{envHost + "=" + e.server.HostPort, envQueue + "=" + e.queue, envSchema + "=" + e.schema,
		envCounter + "=" + hits.URL, fmt.Sprintf("%s=%d", envSteps, steps)}
	workers := map[string]*exec.Cmd{"a": startHelper(t, "a", env), "b": startHelper(t, "b", env)}

	// Once both workers have made calls and a third of the calls are made,
	// hold the next calls of "a", and kill it when one is held.
	cnt.mu.Lock()
	cnt.notify = func(c *counter) {
		if c.byWorker["a"] >= 10 && c.byWorker["b"] >= 10 && len(c.byKey) >= runs*steps/3 && c.hold == "" {
			c.hold = "a"
		}
	}
	cnt.mu.Unlock()
	r := e.runner(callChain("chain", steps, hits.URL, "test"), func(c *temporalrun.Config) { c.HeartbeatTimeout, c.ActivitySteps = time.Second, true })
	type outcome struct {
		thread string
		res    graph.Result
		err    error
	}
	results := make(chan outcome, runs)
	prefix := "kill-" + randomHex()
	for i := range runs {
		thread := fmt.Sprintf("%s-%02d", prefix, i)
		go func() {
			res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
			results <- outcome{thread, res, err}
		}()
	}
	var outcomes []outcome
	allDone := make(chan struct{})
	go func() {
		defer close(allDone)
		for range runs {
			outcomes = append(outcomes, <-results)
		}
	}()
	select {
	case <-cnt.heldCh:
	case <-allDone:
		t.Fatal("every run finished before worker a made a call after the first third")
	}
	require.NoError(t, workers["a"].Process.Kill()) // SIGKILL
	_, _ = workers["a"].Process.Wait()

	<-allDone
	for _, o := range outcomes {
		require.NoError(t, o.err, o.thread)
		assert.Equal(t, graph.StatusDone, o.res.Status, o.thread)
		log := callLog.Get(o.res.State)
		require.Len(t, log, steps, "%s ran each step once: %v", o.thread, log)
		for i, entry := range log {
			assert.True(t, strings.HasPrefix(entry, fmt.Sprintf("n%02d@", i)), "%s: %v", o.thread, log)
		}
	}
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	// A call is in flight at the kill from the moment the killed worker
	// makes it until its result is journaled: held calls, and calls
	// answered just before the kill but not yet recorded. Only those may
	// be made again, by the other worker, and a run has one step, so one
	// call, in flight at a time.
	repeated, perRun := 0, map[string]int{}
	for key, n := range cnt.byKey {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		switch {
		case n == 1:
		case n == 2 && cnt.first[key] == "a":
			repeated++
			run := key[:strings.LastIndex(key, "/")]
			if perRun[run]++; perRun[run] > 1 {
				t.Errorf("run %s made more than one call again: only one of its calls can be in flight", run)
			}
		default:
			t.Errorf("call %s was made %d times, first by worker %s (held at the kill: %v)", key, n, cnt.first[key], cnt.held[key])
		}
	}
	assert.Len(t, cnt.byKey, runs*steps, "every call was made")
	t.Logf("calls: %v by worker; %d held on the killed worker, %d made again", cnt.byWorker, len(cnt.held), repeated)
	assert.Positive(t, cnt.byWorker["a"])
	assert.Positive(t, cnt.byWorker["b"])
}

// TestStreamGoesOnThroughAWorkerKill: a streamed run's worker is killed
// with SIGKILL while a step's call is in flight; the step is retried on
// another worker, and the stream goes on: the step's events of the first
// attempt, then the retry's, then the rest of the run to its end.
func TestStreamGoesOnThroughAWorkerKill(t *testing.T) {
	const steps = 3
	e := newEnv(t)
	cnt := newCounter()
	hits := httptest.NewServer(cnt)
	defer hits.Close()
	defer close(cnt.release)
	env := []string{envHost + "=" + e.server.HostPort, envQueue + "=" + e.queue, envSchema + "=" + e.schema,
		envCounter + "=" + hits.URL, fmt.Sprintf("%s=%d", envSteps, steps)}
	a := startHelper(t, "a", env)
	cnt.mu.Lock()
	cnt.notify = func(c *counter) {
		if c.byWorker["a"] >= 1 && c.hold == "" {
			c.hold = "a" // a's second call: held, in flight at the kill
		}
	}
	cnt.mu.Unlock()
	r := e.runner(callChain("chain", steps, hits.URL, "test"), func(c *temporalrun.Config) { c.HeartbeatTimeout, c.ActivitySteps = time.Second, true })
	var evs []graph.Event
	killed := false
	for ev, err := range r.Stream(t.Context(), graph.Input(), graph.Thread("killed-"+randomHex())) {
		require.NoError(t, err)
		evs = append(evs, ev)
		if ev.Kind == graph.EventNodeStart && ev.Node == "n01" && !killed {
			<-cnt.heldCh
			killed = true
			startHelper(t, "b", env)
			require.NoError(t, a.Process.Kill()) // SIGKILL
			_, _ = a.Process.Wait()
		}
	}
	var n01 []string
	for _, ev := range evs {
		if ev.Node == "n01" && (ev.Kind == graph.EventNodeStart || ev.Kind == graph.EventNodeEnd) {
			n01 = append(n01, ev.Name())
		}
	}
	assert.Equal(t, []string{"node_start", "node_start", "node_end"}, n01, "the first attempt's start, then the retry's")
	end := evs[len(evs)-1]
	require.Equal(t, graph.EventRunEnd, end.Kind)
	assert.Equal(t, []string{"n00@a", "n01@b", "n02@b"}, callLog.Get(end.State))
}

// TestServerRestartMidRun: the Temporal server (its state in a file)
// restarts while steps of five runs are in flight; the runs continue and
// finish, each step once.
func TestServerRestartMidRun(t *testing.T) {
	const runs = 5
	db := filepath.Join(t.TempDir(), "temporal.db")
	e := newEnvWith(t, temporaltest.Options{DBFile: db})
	e.startWorker(e.queue, false)
	entered := make(chan string, runs)
	gate := make(chan struct{})
	var ran sync.Map
	g := graph.New("restart-"+randomHex(), callLog)
	for i, node := range []string{"before", "held", "after"} {
		g.AddNode(node, func(ctx context.Context, s graph.State) (graph.Command, error) {
			task, _ := graph.TaskOf(ctx)
			if _, again := ran.LoadOrStore(task.Thread+"/"+node, true); again {
				return graph.Command{}, fmt.Errorf("%s ran twice in %s", node, task.Thread)
			}
			if node == "held" {
				entered <- task.Thread
				<-gate
			}
			return graph.Update(graph.AppendTo(callLog, node)), nil
		})
		if i == 0 {
			g.AddEdge(graph.Start, node)
		}
	}
	g.AddEdge("before", "held")
	g.AddEdge("held", "after")
	g.AddEdge("after", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	// A heartbeat timeout longer than the restart: the steps in flight are
	// not given up on while the server is away.
	run := e.runner(r, func(c *temporalrun.Config) { c.HeartbeatTimeout = 30 * time.Second })
	results := make(chan error, runs)
	for i := range runs {
		thread := fmt.Sprintf("restart-%s-%d", randomHex(), i)
		go func() {
			res, err := run.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
			if err == nil && !slices.Equal(callLog.Get(res.State), []string{"before", "held", "after"}) {
				err = fmt.Errorf("%s: log %v", thread, callLog.Get(res.State))
			}
			results <- err
		}()
	}
	for range runs {
		<-entered
	}
	e.server.Restart(t, temporaltest.Options{DBFile: db})
	close(gate)
	for range runs {
		require.NoError(t, <-results)
	}
}

// TestAKilledWorkersStepRecoversWithinTheHeartbeatTimeout: with the
// runner's and the workers' defaults, a worker process killed with SIGKILL
// while its step's call is in flight is noticed by the missing heartbeat
// (not the 10-minute step timeout), and the step's second attempt runs on
// the other worker process: the history says so (the attempt, its worker,
// the heartbeat timeout of 5 seconds that failed the first).
func TestAKilledWorkersStepRecoversWithinTheHeartbeatTimeout(t *testing.T) {
	const steps = 3
	e := newEnv(t)
	cnt := newCounter()
	hits := httptest.NewServer(cnt)
	defer hits.Close()
	defer close(cnt.release)
	env := []string{envHost + "=" + e.server.HostPort, envQueue + "=" + e.queue, envSchema + "=" + e.schema,
		envCounter + "=" + hits.URL, fmt.Sprintf("%s=%d", envSteps, steps), envDefaults + "=1"}
	a := startHelper(t, "a", env)
	cnt.mu.Lock()
	cnt.notify = func(c *counter) {
		if c.byWorker["a"] >= 1 && c.hold == "" {
			c.hold = "a" // a's second call: held, in flight at the kill
		}
	}
	cnt.mu.Unlock()
	// The runner's defaults: no HeartbeatTimeout given.
	r := e.runner(callChain("chain", steps, hits.URL, "test"), func(c *temporalrun.Config) { c.HeartbeatTimeout, c.ActivitySteps = 0, true })
	thread := "recover-" + randomHex()
	done := make(chan error, 1)
	var res graph.Result
	go func() {
		var err error
		res, err = r.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
		done <- err
	}()
	<-cnt.heldCh
	b := startHelper(t, "b", env)
	require.NoError(t, a.Process.Kill()) // SIGKILL
	killed := time.Now()
	_, _ = a.Process.Wait()
	require.NoError(t, <-done)
	ended := time.Now()
	assert.Equal(t, []string{"n00@a", "n01@b", "n02@b"}, callLog.Get(res.State))

	h := fullHistory(t, e.client, thread)
	scheduled := map[int64]*historypb.HistoryEvent{}
	var retried []*historypb.HistoryEvent
	for _, ev := range h.Events {
		if ev.GetActivityTaskScheduledEventAttributes() != nil {
			scheduled[ev.GetEventId()] = ev
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
			retried = append(retried, ev)
		}
	}
	require.Len(t, retried, 1, "one step was retried")
	started := retried[0].GetActivityTaskStartedEventAttributes()
	sched := scheduled[started.GetScheduledEventId()].GetActivityTaskScheduledEventAttributes()
	assert.Equal(t, temporalrun.StepActivityName, sched.GetActivityType().GetName())
	assert.Equal(t, temporalrun.DefaultHeartbeatTimeout, sched.GetHeartbeatTimeout().AsDuration(), "the runner's default heartbeat timeout")
	assert.EqualValues(t, 2, started.GetAttempt(), "the second attempt completed the step")
	assert.True(t, strings.HasPrefix(started.GetIdentity(), fmt.Sprintf("%d@", b.Process.Pid)),
		"the second attempt ran on worker b (pid %d), not %q", b.Process.Pid, started.GetIdentity())
	timeout := started.GetLastFailure().GetTimeoutFailureInfo()
	require.NotNil(t, timeout, "the first attempt timed out: %v", started.GetLastFailure())
	assert.Equal(t, enumspb.TIMEOUT_TYPE_HEARTBEAT, timeout.GetTimeoutType(), "noticed by its heartbeat, not the step timeout")
	// Figures for the record, not asserted: the server's clock and ours.
	t.Logf("kill -9 to the retry's start: %s; to the run's end: %s", retried[0].GetEventTime().AsTime().Sub(killed).Round(time.Millisecond),
		ended.Sub(killed).Round(time.Millisecond))
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	assert.Equal(t, 2, cnt.byKey[thread+"/n01"], "the call in flight at the kill, made again")
	assert.Equal(t, 1, cnt.byKey[thread+"/n00"])
	assert.Equal(t, 1, cnt.byKey[thread+"/n02"])
}

// TestLocalStepsSurviveAWorkerKill: with local steps (the default), the worker
// that runs a run's workflow code and its local steps is killed with
// SIGKILL while a step's call is in flight, after it ran another local
// step in the same workflow task (so the history may not hold that one
// yet). The other worker takes the run over: the step already stored is
// not run again, only the call in flight repeats.
func TestLocalStepsSurviveAWorkerKill(t *testing.T) {
	const steps = 3
	e := newEnv(t)
	cnt := newCounter()
	hits := httptest.NewServer(cnt)
	defer hits.Close()
	defer close(cnt.release)
	env := []string{envHost + "=" + e.server.HostPort, envQueue + "=" + e.queue, envSchema + "=" + e.schema,
		envCounter + "=" + hits.URL, fmt.Sprintf("%s=%d", envSteps, steps)}
	a := startHelper(t, "a", env)
	cnt.mu.Lock()
	cnt.notify = func(c *counter) {
		if c.byWorker["a"] >= 2 && c.hold == "" {
			c.hold = "a" // a's third call (n02, a local step): held, in flight at the kill
		}
	}
	cnt.mu.Unlock()
	r := e.runner(callChain("chain", steps, hits.URL, "test")) // local steps: the default
	thread := "local-kill-" + randomHex()
	done := make(chan error, 1)
	var res graph.Result
	go func() {
		var err error
		res, err = r.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
		done <- err
	}()
	<-cnt.heldCh
	startHelper(t, "b", env)
	require.NoError(t, a.Process.Kill()) // SIGKILL
	_, _ = a.Process.Wait()
	require.NoError(t, <-done)
	assert.Equal(t, []string{"n00@a", "n01@a", "n02@b"}, callLog.Get(res.State))
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	assert.Equal(t, 1, cnt.byKey[thread+"/n00"])
	assert.Equal(t, 1, cnt.byKey[thread+"/n01"], "the local step stored before the kill did not run again")
	assert.Equal(t, 2, cnt.byKey[thread+"/n02"], "the call in flight at the kill, made again")
	events := history(t, e.client, thread)
	assert.Positive(t, count(events, enumspb.EVENT_TYPE_MARKER_RECORDED), "local steps: markers in the history")
}

// TestAKilledWorkersLocalStepRecoversWithinTheHeartbeatTimeout: with the
// runner's and the workers' defaults (one-task steps are local), a worker
// process killed with SIGKILL while its local step's call is in flight is
// noticed when its workflow task times out — after the heartbeat timeout,
// as a step activity's missing heartbeat would be, not the SDK's 10 s —
// and the other worker process takes the run over and runs the step
// again: the history says so.
func TestAKilledWorkersLocalStepRecoversWithinTheHeartbeatTimeout(t *testing.T) {
	const steps = 3
	e := newEnv(t)
	cnt := newCounter()
	hits := httptest.NewServer(cnt)
	defer hits.Close()
	defer close(cnt.release)
	env := []string{envHost + "=" + e.server.HostPort, envQueue + "=" + e.queue, envSchema + "=" + e.schema,
		envCounter + "=" + hits.URL, fmt.Sprintf("%s=%d", envSteps, steps), envDefaults + "=1"}
	a := startHelper(t, "a", env)
	cnt.mu.Lock()
	cnt.notify = func(c *counter) {
		if c.byWorker["a"] >= 1 && c.hold == "" {
			c.hold = "a" // a's second call (n01, a local step): held, in flight at the kill
		}
	}
	cnt.mu.Unlock()
	// The runner's defaults: no HeartbeatTimeout given, local steps.
	r := e.runner(callChain("chain", steps, hits.URL, "test"), func(c *temporalrun.Config) { c.HeartbeatTimeout = 0 })
	thread := "recover-local-" + randomHex()
	done := make(chan error, 1)
	var res graph.Result
	go func() {
		var err error
		res, err = r.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
		done <- err
	}()
	<-cnt.heldCh
	b := startHelper(t, "b", env)
	require.NoError(t, a.Process.Kill()) // SIGKILL
	killed := time.Now()
	_, _ = a.Process.Wait()
	require.NoError(t, <-done)
	ended := time.Now()
	assert.Equal(t, []string{"n00@a", "n01@b", "n02@b"}, callLog.Get(res.State))

	h := fullHistory(t, e.client, thread)
	var timedOut, takeover *historypb.HistoryEvent
	for _, ev := range h.Events {
		if a := ev.GetWorkflowTaskScheduledEventAttributes(); a != nil {
			assert.Equal(t, temporalrun.DefaultHeartbeatTimeout, a.GetStartToCloseTimeout().AsDuration(),
				"the workflow task's timeout is the heartbeat timeout")
		}
		if a := ev.GetWorkflowTaskTimedOutEventAttributes(); a != nil && timedOut == nil {
			timedOut = ev
			assert.Equal(t, enumspb.TIMEOUT_TYPE_START_TO_CLOSE, a.GetTimeoutType(), "the dead worker's workflow task timed out")
		}
		if a := ev.GetWorkflowTaskStartedEventAttributes(); a != nil && timedOut != nil && takeover == nil {
			takeover = ev
			assert.True(t, strings.HasPrefix(a.GetIdentity(), fmt.Sprintf("%d@", b.Process.Pid)),
				"worker b (pid %d) took the run over, not %q", b.Process.Pid, a.GetIdentity())
		}
	}
	require.NotNil(t, timedOut, "a workflow task timed out")
	require.NotNil(t, takeover, "another workflow task started after it")
	events := history(t, e.client, thread)
	assert.Equal(t, 1, count(events, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED), "only the step with the input is an activity")
	// Figures for the record, not asserted: the server's clock and ours.
	t.Logf("kill -9 to the workflow task's timeout: %s; to b's takeover: %s; to the run's end: %s",
		timedOut.GetEventTime().AsTime().Sub(killed).Round(time.Millisecond),
		takeover.GetEventTime().AsTime().Sub(killed).Round(time.Millisecond), ended.Sub(killed).Round(time.Millisecond))
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	assert.Equal(t, 2, cnt.byKey[thread+"/n01"], "the call in flight at the kill, made again")
	assert.Equal(t, 1, cnt.byKey[thread+"/n00"])
	assert.Equal(t, 1, cnt.byKey[thread+"/n02"])
}
