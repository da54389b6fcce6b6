package temporalrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/graph/runnertest"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/temporalrun"
)

// TestSemanticsWithTasksInNode runs the suite with the tasks a node
// starts run inside its activity (Config.TasksInNode); TestSemantics
// runs it with each task an activity of its own, the default.
func TestSemanticsWithTasksInNode(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	inNode := func(c *temporalrun.Config) { c.TasksInNode = true }
	runnertest.Run(t, runnertest.Harness{
		Saver:  e.saver,
		Runner: func(t *testing.T, r *graph.Runnable) graph.Invoker { return e.runner(r, inNode) },
	})
}

// The environment of a worker process of the team tests: how many
// activities it runs at once.
const envSlots = "COORFLOW_TEMPORAL_HELPER_SLOTS"

// teamSize is the number of agents of callTeam.
const teamSize = 6

// callTeam is a graph of a "brief" node that does nothing (the step with
// the run's input, which goes to the default queue) and a team node: it
// starts n agents as tasks, all at once, and a "report" task after them;
// each makes one journaled call to the counter at url (a model call),
// saying which worker made it.
func callTeam(name string, n int, url, worker string) *graph.Runnable {
	g := graph.New(name, callLog)
	g.AddNode("team", func(ctx context.Context, s graph.State) (graph.Command, error) {
		thread := ""
		if task, ok := graph.TaskOf(ctx); ok {
			thread = task.Thread
		}
		agent := func(key string, deps ...string) graph.Task[string] {
			return graph.Task[string]{Key: key, Deps: deps, Run: func(ctx context.Context) (string, error) {
				return graph.Do(ctx, "model", func(ctx context.Context) (string, error) {
					v, err := call(ctx, url, thread+"/"+key, worker)
					return key + "@" + v, err
				})
			}}
		}
		var tasks []graph.Task[string]
		var keys []string
		for i := range n {
			keys = append(keys, fmt.Sprintf("step:agent-%d", i))
			tasks = append(tasks, agent(keys[i]))
		}
		tasks = append(tasks, agent("step:report", keys...))
		res, err := graph.Schedule(ctx, graph.TaskOptions{}, tasks)
		if err != nil {
			return graph.Command{}, err
		}
		var out []string
		for _, r := range res {
			if r.Status != graph.TaskDone {
				return graph.Command{}, fmt.Errorf("task %s: %s: %w", r.Key, r.Status, r.Err)
			}
			out = append(out, r.Value)
		}
		return graph.Update(graph.AppendTo(callLog, out...)), nil
	}, graph.StartsTasks())
	g.AddNode("brief", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
	g.AddEdge(graph.Start, "brief")
	g.AddEdge("brief", "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile()
	if err != nil {
		panic(err)
	}
	return r
}

// taskActivity is one attempt of a task activity, read from a history.
type taskActivity struct {
	id, queue string
	heartbeat time.Duration
	timeout   time.Duration
	attempt   int32
	identity  string
	failure   string // the last failure of an earlier attempt
}

// taskActivities returns the started attempts of the task activities in
// the thread's history.
func taskActivities(h *historypb.History) []taskActivity {
	scheduled := map[int64]*historypb.ActivityTaskScheduledEventAttributes{}
	var out []taskActivity
	for _, ev := range h.Events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			s := scheduled[a.GetScheduledEventId()]
			if s.GetActivityType().GetName() != temporalrun.ScheduledTaskActivityName {
				continue
			}
			ta := taskActivity{id: s.GetActivityId(), queue: s.GetTaskQueue().GetName(), heartbeat: s.GetHeartbeatTimeout().AsDuration(),
				timeout: s.GetStartToCloseTimeout().AsDuration(), attempt: a.GetAttempt(), identity: a.GetIdentity()}
			if to := a.GetLastFailure().GetTimeoutFailureInfo(); to != nil {
				ta.failure = to.GetTimeoutType().String()
			}
			out = append(out, ta)
		}
	}
	return out
}

// TestTasksRunAsActivitiesOnTheirQueues: a team node's tasks run as
// activities of their own, each on the queue its key's prefix names
// (TaskQueues), else on its node's queue, with the runner's heartbeat
// timeout and the task timeout; the node's activity waits for them.
func TestTasksRunAsActivitiesOnTheirQueues(t *testing.T) {
	e := newEnv(t)
	agents := e.queue + "-agents"
	e.startWorker(e.queue, false)
	e.startWorker(agents, true)
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Query().Get("key")]++
		mu.Unlock()
	}))
	defer srv.Close()
	r := e.runner(callTeam("team-"+randomHex(), 3, srv.URL, "test"), func(c *temporalrun.Config) {
		c.TaskTimeout = 30 * time.Second
		c.TaskQueues = map[string]string{"step:agent": agents}
	})
	thread := "placed-" + randomHex()
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	assert.Equal(t, []string{"step:agent-0@test", "step:agent-1@test", "step:agent-2@test", "step:report@test"}, callLog.Get(res.State))

	h := fullHistory(t, e.client, thread)
	requireReplays(t, h)
	acts := taskActivities(h)
	require.Len(t, acts, 4, "one activity per task: %+v", acts)
	byQueue := map[string]int{}
	for _, a := range acts {
		byQueue[a.queue]++
		assert.Equal(t, 2*time.Second, a.heartbeat, "the runner's heartbeat timeout: %+v", a)
		assert.Equal(t, 30*time.Second, a.timeout, "the task timeout: %+v", a)
		assert.EqualValues(t, 1, a.attempt)
	}
	assert.Equal(t, map[string]int{agents: 3, e.queue: 1}, byQueue, "the agents on their queue, the report on its node's")
	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"step:agent-0", "step:agent-1", "step:agent-2", "step:report"} {
		assert.Equal(t, 1, calls[thread+"/"+k], k)
	}
}

// teamCalls is the model of the team tests: it counts the calls per key
// and per worker, and holds every call until both workers have one in
// flight, so that one team's agents are seen running on both; with
// holdA, the calls of worker a stay held after that (in flight when a is
// killed), and allCalled closes once every agent has been called.
type teamCalls struct {
	holdA     bool
	want      int
	mu        sync.Mutex
	byKey     map[string]int
	byWorker  map[string]int
	first     map[string]string
	inFlight  map[string]int
	held      map[string]bool
	both      chan struct{} // closed when both workers had a call in flight at once
	allCalled chan struct{}
}

func newTeamCalls(holdA bool, want int) *teamCalls {
	return &teamCalls{holdA: holdA, want: want, byKey: map[string]int{}, byWorker: map[string]int{}, first: map[string]string{},
		inFlight: map[string]int{}, held: map[string]bool{}, both: make(chan struct{}), allCalled: make(chan struct{})}
}

func (c *teamCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, worker := r.URL.Query().Get("key"), r.URL.Query().Get("worker")
	c.mu.Lock()
	c.byKey[key]++
	c.byWorker[worker]++
	if _, ok := c.first[key]; !ok {
		c.first[key] = worker
	}
	c.inFlight[worker]++
	select {
	case <-c.both:
	default:
		if c.inFlight["a"] > 0 && c.inFlight["b"] > 0 {
			close(c.both)
		}
	}
	hold := c.holdA && worker == "a"
	if hold {
		c.held[key] = true
	}
	if len(c.byKey) == c.want {
		select {
		case <-c.allCalled:
		default:
			close(c.allCalled)
		}
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inFlight[worker]--
		c.mu.Unlock()
	}()
	select {
	case <-c.both:
	case <-r.Context().Done():
		return
	}
	if hold {
		<-r.Context().Done() // until a dies
		http.Error(w, "worker gone", http.StatusServiceUnavailable)
	}
}

// startTeamWorkers starts worker processes a and b, each running at most
// three activities at once: the team's six agents, started together,
// cannot all run on one of them.
func startTeamWorkers(t *testing.T, e *env, url string) (a, b *exec.Cmd) {
	env := []string{envHost + "=" + e.server.HostPort, envQueue + "=" + e.queue, envSchema + "=" + e.schema,
		envCounter + "=" + url, envSteps + "=1", envSlots + "=3"}
	return startHelper(t, "a", env), startHelper(t, "b", env)
}

// TestOneTeamsAgentsRunOnTwoWorkerProcesses: the agents of one team node
// run as task activities on both worker processes of the queue, at once,
// and each makes its call once.
func TestOneTeamsAgentsRunOnTwoWorkerProcesses(t *testing.T) {
	e := newEnv(t)
	calls := newTeamCalls(false, teamSize)
	srv := httptest.NewServer(calls)
	defer srv.Close()
	a, b := startTeamWorkers(t, e, srv.URL)
	r := e.runner(callTeam("team", teamSize, srv.URL, "test"))
	thread := "spread-" + randomHex()
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	log := callLog.Get(res.State)
	require.Len(t, log, teamSize+1)
	workers := map[string]int{}
	for i, entry := range log[:teamSize] {
		key, worker, _ := strings.Cut(entry, "@")
		assert.Equal(t, fmt.Sprintf("step:agent-%d", i), key)
		workers[worker]++
	}
	assert.Positive(t, workers["a"], "agents ran on worker a: %v", log)
	assert.Positive(t, workers["b"], "agents ran on worker b: %v", log)

	pids := map[string]int{}
	h := fullHistory(t, e.client, thread)
	requireReplays(t, h)
	for _, act := range taskActivities(h) {
		pid, _, _ := strings.Cut(act.identity, "@")
		pids[pid]++
	}
	assert.Len(t, pids, 2, "the history says the task activities ran on two workers: %v", pids)
	assert.Contains(t, pids, fmt.Sprint(a.Process.Pid))
	assert.Contains(t, pids, fmt.Sprint(b.Process.Pid))
	calls.mu.Lock()
	defer calls.mu.Unlock()
	for key, n := range calls.byKey {
		assert.Equal(t, 1, n, "call %s made once", key)
	}
	assert.Len(t, calls.byKey, teamSize+1)
}

// TestAKilledWorkerRepeatsOnlyTheTasksInFlight: one team's agents run on
// two worker processes; a is killed with SIGKILL while its agents' model
// calls are in flight and b's are done. The run ends as it would have:
// a's agents run again on b (their activities' heartbeats stopped), and
// only the calls in flight at the kill are made again; the agents done on
// b, journaled, are not. With the team node's activity on the workers'
// queue, the server placed it on a in every run seen (a polls first), so
// it died too and was retried on b; apart, on a queue of its own served
// by this process, it only waited.
func TestAKilledWorkerRepeatsOnlyTheTasksInFlight(t *testing.T) {
	t.Run("node with the tasks", func(t *testing.T) { killMidTeam(t, false) })
	t.Run("node apart", func(t *testing.T) { killMidTeam(t, true) })
}

func killMidTeam(t *testing.T, nodeApart bool) {
	e := newEnv(t)
	calls := newTeamCalls(true, teamSize)
	srv := httptest.NewServer(calls)
	defer srv.Close()
	a, b := startTeamWorkers(t, e, srv.URL)
	nodes := e.queue + "-nodes"
	if nodeApart {
		e.startWorker(nodes, true)
	}
	r := e.runner(callTeam("team", teamSize, srv.URL, "test"), func(c *temporalrun.Config) {
		c.HeartbeatTimeout = time.Second
		if nodeApart {
			c.NodeQueues = map[string]string{"team": nodes}
			c.TaskQueues = map[string]string{"step:": e.queue}
		}
	})
	thread := "team-kill-" + randomHex()
	done := make(chan error, 1)
	var res graph.Result
	go func() {
		var err error
		res, err = r.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
		done <- err
	}()
	select {
	case <-calls.allCalled:
	case err := <-done:
		t.Fatalf("the run ended before every agent was called: %v", err)
	}
	// Every agent has called: a's calls are held, in flight; b's are
	// answered (and journaled, or about to be).
	require.NoError(t, a.Process.Kill()) // SIGKILL
	_, _ = a.Process.Wait()
	require.NoError(t, <-done)

	log := callLog.Get(res.State)
	require.Len(t, log, teamSize+1)
	for i, entry := range log[:teamSize] {
		assert.Equal(t, fmt.Sprintf("step:agent-%d@b", i), entry, "each agent's value is its call's, made (at last) on b")
	}
	assert.Equal(t, "step:report@b", log[teamSize])

	calls.mu.Lock()
	var repeated []string
	for key, n := range calls.byKey {
		switch {
		case n == 1:
			assert.Equal(t, "b", calls.first[key], "%s: a call made once was made on b", key)
		case n == 2 && calls.held[key]:
			repeated = append(repeated, key)
		default:
			t.Errorf("call %s was made %d times, first by %s (held at the kill: %v)", key, n, calls.first[key], calls.held[key])
		}
	}
	held := len(calls.held)
	calls.mu.Unlock()
	slices.Sort(repeated)
	assert.Positive(t, held, "a had calls in flight at the kill")
	assert.Len(t, repeated, held, "exactly the calls in flight at the kill were made again: %v", repeated)

	h := fullHistory(t, e.client, thread)
	requireReplays(t, h)
	var retried []taskActivity
	for _, act := range taskActivities(h) {
		if act.attempt > 1 {
			retried = append(retried, act)
			assert.True(t, strings.HasPrefix(act.identity, fmt.Sprintf("%d@", b.Process.Pid)), "retried on b: %+v", act)
			assert.Equal(t, enumspb.TIMEOUT_TYPE_HEARTBEAT.String(), act.failure, "a's attempt was noticed by its own heartbeat: %+v", act)
		}
	}
	assert.Len(t, retried, held, "one task activity retried per task in flight on a: %+v", retried)
	updates := 0
	for _, ev := range h.Events {
		if a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil && a.GetAcceptedRequest().GetInput().GetName() == temporalrun.UpdateTask {
			updates++
		}
	}
	assert.Equal(t, teamSize+1, updates, "one task update per task: a node activity retried asks for its tasks in flight by the same ids")
	attempts := nodeAttempts(h, a, b)
	if nodeApart {
		assert.Contains(t, attempts, "team: attempt 1 on this process", "the node's activity was not on a killed worker")
	}
	t.Logf("held on a and made again on b: %v; the steps: %s", repeated, attempts)
}

// nodeAttempts says where the last attempt of each step activity of a
// history ran ("team: attempt 2 on b"), by the nodes it ran.
func nodeAttempts(h *historypb.History, a, b *exec.Cmd) string {
	scheduled := map[int64]string{}
	started := map[int64]*historypb.ActivityTaskStartedEventAttributes{}
	var out []string
	for _, ev := range h.Events {
		if s := ev.GetActivityTaskScheduledEventAttributes(); s != nil {
			scheduled[ev.GetEventId()] = s.GetActivityType().GetName()
		}
		if st := ev.GetActivityTaskStartedEventAttributes(); st != nil {
			started[st.GetScheduledEventId()] = st
		}
		c := ev.GetActivityTaskCompletedEventAttributes()
		if c == nil || scheduled[c.GetScheduledEventId()] != temporalrun.StepActivityName {
			continue
		}
		var step temporalrun.StepOutput
		if p := c.GetResult().GetPayloads(); len(p) > 0 {
			_ = json.Unmarshal(p[0].GetData(), &step)
		}
		st := started[c.GetScheduledEventId()]
		where := st.GetIdentity()
		switch pid, _, _ := strings.Cut(where, "@"); pid {
		case fmt.Sprint(a.Process.Pid):
			where = "a"
		case fmt.Sprint(b.Process.Pid):
			where = "b"
		case fmt.Sprint(os.Getpid()):
			where = "this process"
		}
		out = append(out, fmt.Sprintf("%s: attempt %d on %s", strings.Join(step.Ran, ","), st.GetAttempt(), where))
	}
	return strings.Join(out, "; ")
}

// TestMoreTasksAtOnceThanAWorkflowTakesUpdates: a team of 24 agents
// started together asks for more task updates at once than the server
// keeps in flight for one workflow (history.maxInFlightUpdates, 10 by
// default): those it refuses are asked again (by the SDK's retries of a
// resource exhausted, then by the dispatcher) as others end, and every
// agent runs once, as an activity of its own.
func TestMoreTasksAtOnceThanAWorkflowTakesUpdates(t *testing.T) {
	const n = 24
	e := newEnv(t)
	e.startWorker(e.queue, false)
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Query().Get("key")]++
		mu.Unlock()
	}))
	defer srv.Close()
	r := e.runner(callTeam("team-"+randomHex(), n, srv.URL, "test"))
	thread := "wide-" + randomHex()
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	require.Len(t, callLog.Get(res.State), n+1)
	assert.Len(t, taskActivities(fullHistory(t, e.client, thread)), n+1, "one activity per task")
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, calls, n+1)
	for k, c := range calls {
		assert.Equal(t, 1, c, k)
	}
}

// TestTaskEventsStreamFromTheirActivities: two agents of a team node call
// a model that streams (OpenAI's wire protocol) from their task
// activities; the caller's Stream gets each agent's tokens under the
// agent's path, and each model call was made once.
func TestTaskEventsStreamFromTheirActivities(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	var mu sync.Mutex
	asked := map[string]int{}
	srv := openaitest.NewFunc(func(req openaitest.ChatRequest) openaitest.Response {
		who := strings.TrimPrefix(req.Messages[len(req.Messages)-1].Text(), "hi from ")
		mu.Lock()
		asked[who]++
		mu.Unlock()
		return openaitest.Response{Text: who + " says hello", Chunks: []string{who, " says", " hello"}}
	})
	defer srv.Close()
	base, err := openai.New(openai.WithBaseURL(srv.BaseURL()), openai.WithToken("test"), openai.WithModel("gpt-4o"))
	require.NoError(t, err)
	model := llm.Observe(base, llm.ModelInfo{Tier: "basic", Model: "gpt-4o"})
	g := graph.New("team-tokens-"+randomHex(), callLog)
	g.AddNode("team", func(ctx context.Context, s graph.State) (graph.Command, error) {
		agent := func(key string) graph.Task[string] {
			return graph.Task[string]{Key: key, Run: func(ctx context.Context) (string, error) {
				resp, err := model.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi from "+key)})
				if err != nil {
					return "", err
				}
				return resp.Choices[0].Content, nil
			}}
		}
		res, err := graph.Schedule(ctx, graph.TaskOptions{}, []graph.Task[string]{agent("ada"), agent("bob")})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(callLog, res[0].Value, res[1].Value)), nil
	}, graph.StartsTasks())
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	run := e.runner(r)
	thread := "team-tokens-" + randomHex()
	tokens := map[string][]string{}
	calls := 0
	for ev, err := range run.Stream(t.Context(), graph.Input(), graph.Thread(thread)) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case llm.Token:
			tokens[ev.Path] = append(tokens[ev.Path], string(d))
		case llm.ModelCall:
			calls++
		}
	}
	assert.Equal(t, map[string][]string{
		r.Name() + "/team/ada": {"ada", " says", " hello"},
		r.Name() + "/team/bob": {"bob", " says", " hello"},
	}, tokens, "each agent's tokens, under its path")
	assert.Equal(t, 2, calls, "a model_call event per agent")
	mu.Lock()
	assert.Equal(t, map[string]int{"ada": 1, "bob": 1}, asked, "each model call made once")
	mu.Unlock()
	assert.Len(t, taskActivities(fullHistory(t, e.client, thread)), 2, "the agents ran as task activities")
	res, err := run.Invoke(t.Context(), nil, graph.Thread(thread))
	require.NoError(t, err)
	assert.Equal(t, []string{"ada says hello", "bob says hello"}, callLog.Get(res.State))
}

// requireReplays replays h on this build's workflow code: the task
// updates and their activities are deterministic.
func requireReplays(t *testing.T, h *historypb.History) {
	t.Helper()
	replayer := worker.NewWorkflowReplayer()
	temporalrun.RegisterReplay(replayer, temporalrun.NewGraphs(nil))
	require.NoError(t, replayer.ReplayWorkflowHistory(nil, h), "the history replays")
}

// TestCoorsTeamRunsAsTaskActivities runs the coor workflow end to end
// with its tasks as activities (the default): the team's plan step runs as an activity of
// its own, on the queue TaskQueues names for "step:", and every model
// call is made once (runCoor's assertions).
func TestCoorsTeamRunsAsTaskActivities(t *testing.T) {
	var agents string
	e, thread := runCoor(t, func(e *env) func(*temporalrun.Config) {
		agents = e.queue + "-agents"
		e.startWorker(agents, true)
		return func(c *temporalrun.Config) {
			c.TaskQueues = map[string]string{"step:": agents}
		}
	})
	var onAgents int
	for _, act := range taskActivities(fullHistory(t, e.client, thread)) {
		if act.queue == agents {
			onAgents++
		}
	}
	assert.Equal(t, 1, onAgents, "the plan's one step ran as a task activity on the agents' queue")
}

// BenchmarkTeam8 runs a team node of 8 agents and a report after them
// (callTeam; each makes one call to a local HTTP server) on Temporal,
// with the tasks inside the node's activity and as task activities
// (the default; Config.TasksInNode for the former), side by side on one server and saver: ms/run
// is a run's time (three steps: the input, "brief", the team).
func BenchmarkTeam8(b *testing.B) {
	const n = 8
	e := newBenchEnv(b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	r := callTeam("bench-team-"+randomHex(), n, srv.URL, "bench")
	for _, mode := range []struct {
		name  string
		tasks bool
	}{{"in-node", false}, {"task-activities", true}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			run := e.runner(r, func(c *temporalrun.Config) { c.TasksInNode = !mode.tasks })
			for i := 0; b.Loop(); i++ {
				_, err := run.Invoke(b.Context(), graph.Input(), graph.Thread(fmt.Sprintf("team-%s-%s-%d", mode.name, randomHex(), i)))
				require.NoError(b, err)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/run")
		})
	}
}

// TestAStoppedNodeWithdrawsItsTasksInFlight: a team node whose Schedule
// stops at a failure (FailFast) no longer waits for its other task in
// flight: it withdraws it (SignalCancelTask), and the task's activity,
// on its worker, sees its context cancelled; the run fails with the
// node's error and its workflow ends.
func TestAStoppedNodeWithdrawsItsTasksInFlight(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	started := make(chan struct{})
	cancelled := make(chan error, 1)
	g := graph.New("withdraw-"+randomHex(), callLog)
	g.AddNode("team", func(ctx context.Context, s graph.State) (graph.Command, error) {
		_, err := graph.Schedule(ctx, graph.TaskOptions{FailFast: true}, []graph.Task[string]{
			{Key: "slow", Run: func(ctx context.Context) (string, error) {
				close(started)
				<-ctx.Done()
				cancelled <- ctx.Err()
				return "", ctx.Err()
			}},
			{Key: "broken", Run: func(ctx context.Context) (string, error) {
				select {
				case <-started:
				case <-ctx.Done():
				}
				return "", graph.Permanent(fmt.Errorf("broken on purpose"))
			}},
		})
		return graph.Command{}, err
	}, graph.StartsTasks())
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	run := e.runner(r)
	thread := "withdraw-" + randomHex()
	_, err = run.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "broken on purpose")
	require.ErrorIs(t, <-cancelled, context.Canceled, "the slow task's activity was cancelled")
	events := history(t, e.client, thread)
	assert.Equal(t, 1, count(events, enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED), "the withdrawn task's activity")
	assert.Equal(t, 1, count(events, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), "one withdrawal")
}

// tieredTeam is a team node of four agents, two of tier "reasoning" and
// two of tier "basic" (their tasks' factory.TierLabel), and a basic
// "report" after them; each makes one journaled call to the counter at
// url, saying which worker made it.
func tieredTeam(name, url, worker string) *graph.Runnable {
	g := graph.New(name, callLog)
	g.AddNode("team", func(ctx context.Context, s graph.State) (graph.Command, error) {
		task, _ := graph.TaskOf(ctx)
		agent := func(key, tier string, deps ...string) graph.Task[string] {
			return graph.Task[string]{Key: key, Deps: deps, Labels: map[string]string{factory.TierLabel: tier},
				Run: func(ctx context.Context) (string, error) {
					return graph.Do(ctx, "model", func(ctx context.Context) (string, error) {
						v, err := call(ctx, url, task.Thread+"/"+key, worker)
						return key + "@" + v, err
					})
				}}
		}
		res, err := graph.Schedule(ctx, graph.TaskOptions{}, []graph.Task[string]{
			agent("step:deep-0", "reasoning"), agent("step:fast-0", "basic"),
			agent("step:deep-1", "reasoning"), agent("step:fast-1", "basic"),
			agent("step:report", "basic", "step:deep-0", "step:fast-0", "step:deep-1", "step:fast-1"),
		})
		if err != nil {
			return graph.Command{}, err
		}
		var out []string
		for _, r := range res {
			if r.Status != graph.TaskDone {
				return graph.Command{}, fmt.Errorf("task %s: %s: %w", r.Key, r.Status, r.Err)
			}
			out = append(out, r.Value)
		}
		return graph.Update(graph.AppendTo(callLog, out...)), nil
	}, graph.StartsTasks())
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile()
	if err != nil {
		panic(err)
	}
	return r
}

// TestTasksArePlacedByTheirAgentsTier: with TaskQueues
// {"tier:reasoning": gpu}, a team's agents of tier reasoning run as task
// activities on the worker process of the gpu queue, the others (and the
// team node) on the worker process of the run's queue; each call is made
// once.
func TestTasksArePlacedByTheirAgentsTier(t *testing.T) {
	e := newEnv(t)
	calls := newCounter()
	srv := httptest.NewServer(calls)
	defer srv.Close()
	gpu := e.queue + "-gpu"
	env := func(queue string) []string {
		return []string{envHost + "=" + e.server.HostPort, envQueue + "=" + queue, envSchema + "=" + e.schema,
			envCounter + "=" + srv.URL, envSteps + "=1"}
	}
	main, g := startHelper(t, "main", env(e.queue)), startHelper(t, "gpu", env(gpu))
	r := e.runner(tieredTeam("tiered", srv.URL, "test"), func(c *temporalrun.Config) {
		c.TaskQueues = map[string]string{"tier:reasoning": gpu, "step:": e.queue}
	})
	thread := "tiered-" + randomHex()
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	assert.Equal(t, []string{"step:deep-0@gpu", "step:fast-0@main", "step:deep-1@gpu", "step:fast-1@main", "step:report@main"},
		callLog.Get(res.State), "the reasoning agents on the gpu worker, the others on the main one")

	h := fullHistory(t, e.client, thread)
	requireReplays(t, h)
	byQueue := map[string][]string{}
	for _, a := range taskActivities(h) {
		pid, _, _ := strings.Cut(a.identity, "@")
		switch pid {
		case fmt.Sprint(main.Process.Pid):
			pid = "main"
		case fmt.Sprint(g.Process.Pid):
			pid = "gpu"
		}
		byQueue[a.queue] = append(byQueue[a.queue], pid)
	}
	assert.Equal(t, map[string][]string{gpu: {"gpu", "gpu"}, e.queue: {"main", "main", "main"}}, byQueue,
		"the task activities' queues and the processes that ran them")
	calls.mu.Lock()
	defer calls.mu.Unlock()
	assert.Len(t, calls.byKey, 5)
	for key, n := range calls.byKey {
		assert.Equal(t, 1, n, "call %s made once", key)
	}
}

// twoTeams is a "brief" node and, in the step after it, two team nodes,
// "left" and "right", side by side;
// each starts n agents at once, each making one journaled call to the
// counter at url.
func twoTeams(name string, n int, url, worker string) *graph.Runnable {
	g := graph.New(name, callLog)
	for _, node := range []string{"left", "right"} {
		g.AddNode(node, func(ctx context.Context, s graph.State) (graph.Command, error) {
			task, _ := graph.TaskOf(ctx)
			var tasks []graph.Task[string]
			for i := range n {
				key := fmt.Sprintf("step:%s-%d", node, i)
				tasks = append(tasks, graph.Task[string]{Key: key, Run: func(ctx context.Context) (string, error) {
					return graph.Do(ctx, "model", func(ctx context.Context) (string, error) {
						return call(ctx, url, task.Thread+"/"+key, worker)
					})
				}})
			}
			res, err := graph.Schedule(ctx, graph.TaskOptions{}, tasks)
			if err != nil {
				return graph.Command{}, err
			}
			var out []string
			for _, r := range res {
				if r.Status != graph.TaskDone {
					return graph.Command{}, fmt.Errorf("task %s: %s: %w", r.Key, r.Status, r.Err)
				}
				out = append(out, r.Key+"@"+r.Value)
			}
			return graph.Update(graph.AppendTo(callLog, out...)), nil
		})
		g.AddEdge("brief", node)
		g.AddEdge(node, graph.End)
	}
	// The step with the run's input runs on the run's queue, as one
	// activity: the teams come in the step after it.
	g.AddNode("brief", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
	g.AddEdge(graph.Start, "brief")
	r, err := g.Compile()
	if err != nil {
		panic(err)
	}
	return r
}

// gatedCalls counts the calls per key and holds each until gate calls are
// in flight at once; after that, none is held. Max is the most calls seen
// in flight at once.
type gatedCalls struct {
	gate     int
	mu       sync.Mutex
	byKey    map[string]int
	inFlight int
	max      int
	open     chan struct{}
}

func (c *gatedCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.byKey[r.URL.Query().Get("key")]++
	c.inFlight++
	c.max = max(c.max, c.inFlight)
	if c.inFlight == c.gate {
		close(c.open)
	}
	c.mu.Unlock()
	select {
	case <-c.open:
	case <-r.Context().Done():
	}
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
}

// TestTasksOfSeveralNodesOnSeveralWorkersWaitForTheUpdateLimit: two team
// nodes of one run, each on a worker process of its own (NodeQueues),
// start 12 agents each at once: 24 task updates asked together of a
// workflow that keeps at most 10 in flight (history.maxInFlightUpdates;
// the caller's "wait" is one, and the dev server let 8 tasks in at once).
// Every model call is held until 8 are in flight, so that the limit is
// reached: the updates the server refuses (resource exhausted) are asked
// again with a backoff, no more than 9 tasks run at once, and every agent
// runs once, on its node's worker, the run ending as it would have.
func TestTasksOfSeveralNodesOnSeveralWorkersWaitForTheUpdateLimit(t *testing.T) {
	const n, gate = 12, 8
	e := newEnv(t)
	e.startWorker(e.queue, false) // the run's workflow code
	calls := &gatedCalls{gate: gate, byKey: map[string]int{}, open: make(chan struct{})}
	srv := httptest.NewServer(calls)
	defer srv.Close()
	left, right := e.queue+"-left", e.queue+"-right"
	env := func(queue string) []string {
		return []string{envHost + "=" + e.server.HostPort, envQueue + "=" + queue, envSchema + "=" + e.schema,
			envCounter + "=" + srv.URL, envSteps + "=1"}
	}
	startHelper(t, "a", env(left))
	startHelper(t, "b", env(right))
	r := e.runner(twoTeams("two-teams", n, srv.URL, "test"), func(c *temporalrun.Config) {
		c.NodeQueues = map[string]string{"left": left, "right": right}
	})
	thread := "two-teams-" + randomHex()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // a gate that never opens fails here
	defer cancel()
	res, err := r.Invoke(ctx, graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	log := callLog.Get(res.State)
	require.Len(t, log, 2*n)
	for _, entry := range log {
		key, worker, _ := strings.Cut(entry, "@")
		want := "a"
		if strings.HasPrefix(key, "step:right") {
			want = "b"
		}
		assert.Equal(t, want, worker, "%s ran on its node's worker", key)
	}
	calls.mu.Lock()
	assert.Len(t, calls.byKey, 2*n)
	for k, c := range calls.byKey {
		assert.Equal(t, 1, c, k)
	}
	assert.LessOrEqual(t, calls.max, 9, "the tasks in flight at once: within the update limit")
	t.Logf("at most %d tasks in flight at once", calls.max)
	calls.mu.Unlock()
	h := fullHistory(t, e.client, thread)
	requireReplays(t, h)
	assert.Len(t, taskActivities(h), 2*n, "one activity per task")
}

// TestANodeActivityThatTimesOutRejoinsItsTasksOnItsRetry: a team node's
// activity times out (its StepTimeout) while its two agents' calls are
// held, on a worker that stays alive; its retry runs the node again and
// asks for the tasks by the same update ids: it joins the tasks in
// flight (the first attempt did not withdraw them), each call is made
// once, and the run ends as it would have.
func TestANodeActivityThatTimesOutRejoinsItsTasksOnItsRetry(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	retried := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Query().Get("key")]++
		mu.Unlock()
		select {
		case <-retried:
		case <-r.Context().Done():
			http.Error(w, "gone", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	g := graph.New("rejoin-"+randomHex(), callLog)
	g.AddNode("team", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if info := activity.GetInfo(ctx); info.ActivityType.Name == temporalrun.StepActivityName && info.Attempt > 1 {
			once.Do(func() { close(retried) })
		}
		task, _ := graph.TaskOf(ctx)
		agent := func(key string) graph.Task[string] {
			return graph.Task[string]{Key: key, Run: func(ctx context.Context) (string, error) {
				return graph.Do(ctx, "model", func(ctx context.Context) (string, error) {
					return call(ctx, srv.URL, task.Thread+"/"+key, "test")
				})
			}}
		}
		res, err := graph.Schedule(ctx, graph.TaskOptions{}, []graph.Task[string]{agent("step:a"), agent("step:b")})
		if err != nil {
			return graph.Command{}, err
		}
		for _, r := range res {
			if r.Status != graph.TaskDone {
				return graph.Command{}, fmt.Errorf("task %s: %s: %w", r.Key, r.Status, r.Err)
			}
		}
		return graph.Update(graph.AppendTo(callLog, res[0].Key+"@"+res[0].Value, res[1].Key+"@"+res[1].Value)), nil
	}, graph.StartsTasks())
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	run := e.runner(r, func(c *temporalrun.Config) { c.StepTimeout, c.TaskTimeout = 3*time.Second, time.Minute })
	thread := "rejoin-" + randomHex()
	res, err := run.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	assert.Equal(t, []string{"step:a@test", "step:b@test"}, callLog.Get(res.State))
	mu.Lock()
	assert.Equal(t, map[string]int{thread + "/step:a": 1, thread + "/step:b": 1}, calls, "each call made once")
	mu.Unlock()
	h := fullHistory(t, e.client, thread)
	acts := taskActivities(h)
	assert.Len(t, acts, 2, "one task activity per task, not cancelled and started again: %+v", acts)
	assert.Zero(t, count(history(t, e.client, thread), enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED), "nothing withdrawn")
}
