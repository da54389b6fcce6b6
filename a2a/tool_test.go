package a2a_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/a2atest"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/tools"
)

var _ tools.TimeoutTool = (*a2a.Tool)(nil)

var answerKey = graph.NewKey[string]("answer")

// callGraph is a node that calls tool with message and keeps its answer;
// with pause set it then stops on an interrupt, so that the node runs
// again, the call included, when the thread is resumed.
func callGraph(t *testing.T, tool *a2a.Tool, message string, pause bool) *graph.Runnable {
	t.Helper()
	g := graph.New("caller", answerKey)
	g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
		args, _ := json.Marshal(map[string]string{"message": message})
		out, err := tool.Call(ctx, args)
		if err != nil {
			return graph.Command{}, err
		}
		if pause {
			if _, err := graph.Interrupt(ctx, "go on?"); err != nil {
				return graph.Command{}, err
			}
		}
		return graph.Update(answerKey.Set(out)), nil
	})
	g.AddEdge(graph.Start, "call")
	g.AddEdge("call", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// run streams r and returns the A2A updates it emitted.
func run(t *testing.T, r *graph.Runnable, opts ...graph.Option) []a2a.Update {
	t.Helper()
	var ups []a2a.Update
	for ev, err := range r.Stream(t.Context(), graph.Input(), opts...) {
		require.NoError(t, err)
		if u, ok := ev.Data.(a2a.Update); ok {
			ups = append(ups, u)
		}
	}
	return ups
}

func agentCount(t *testing.T, agent *a2atest.Agent) int {
	t.Helper()
	res, err := http.Get(agent.URL + "/count")
	require.NoError(t, err)
	defer res.Body.Close()
	var c struct{ Count int }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&c))
	return c.Count
}

// TestToolCallsAnAgentOfTheOfficialSDK: an agent served by @a2a-js/sdk's
// server, as a tool: its card's skills describe it, its answer is the
// call's result, and its streamed updates are the run's events.
func TestToolCallsAnAgentOfTheOfficialSDK(t *testing.T) {
	agent := a2atest.StartAgent(t)
	tool, err := a2a.NewTool(t.Context(), a2a.ToolConfig{URL: agent.URL})
	require.NoError(t, err)
	assert.Equal(t, "sdk-echo", tool.Name())
	assert.Contains(t, tool.Description(), "echo: Repeats what it is told, prefixed with echo.")

	r := callGraph(t, tool, "hello", false)
	saver := memory.New()
	ups := run(t, r, graph.WithSaver(saver), graph.Thread("t1"))
	snap, err := r.State(t.Context(), "t1", graph.WithSaver(saver))
	require.NoError(t, err)
	got, _ := snap.State.Value("answer")
	assert.Equal(t, "echo: hello", got)

	require.NotEmpty(t, ups)
	var texts []string
	var last a2a.TaskState
	for _, u := range ups {
		assert.Equal(t, "sdk-echo", u.Agent)
		assert.NotEmpty(t, u.TaskID)
		texts = append(texts, u.Text)
		if u.State != "" {
			last = u.State
		}
	}
	assert.Contains(t, texts, "echo: hello", "the artifact's update")
	assert.Equal(t, a2a.StateCompleted, last)
	assert.Equal(t, 1, agentCount(t, agent))
}

// TestToolDoesNotSendAgainWhenItsNodeRunsAgain: the node that called the
// agent runs again (resumed after an interrupt, as after a restart): the
// journaled task is followed, the message is not sent again.
func TestToolDoesNotSendAgainWhenItsNodeRunsAgain(t *testing.T) {
	agent := a2atest.StartAgent(t)
	tool, err := a2a.NewTool(t.Context(), a2a.ToolConfig{URL: agent.URL, Name: "echoer"})
	require.NoError(t, err)
	saver := memory.New()
	r := callGraph(t, tool, "once", true)
	run(t, r, graph.WithSaver(saver), graph.Thread("t"))
	require.Equal(t, 1, agentCount(t, agent))

	// A new graph (a new process) on the same saver resumes the node.
	again := callGraph(t, tool, "once", true)
	for _, err := range again.Stream(t.Context(), nil, graph.WithSaver(saver), graph.Thread("t"), graph.Resume(true)) {
		require.NoError(t, err)
	}
	snap, err := again.State(t.Context(), "t", graph.WithSaver(saver))
	require.NoError(t, err)
	got, _ := snap.State.Value("answer")
	assert.Equal(t, "echo: once", got)
	assert.Equal(t, 1, agentCount(t, agent), "the agent got the message once")
}

// TestToolCallsAnotherCoorflow: a coorflow server's workflow, as an A2A
// agent, is a tool of a workflow of another: its answer comes back, its
// node updates are events, and running the calling node again follows
// the same task.
func TestToolCallsAnotherCoorflow(t *testing.T) {
	text := graph.NewKey[string]("text")
	g := graph.New("shout", text)
	g.AddNode("upper", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(text.Set(strings.ToUpper(text.Get(s)))), nil
	})
	g.AddEdge(graph.Start, "upper")
	g.AddEdge("upper", graph.End)
	shout, err := g.Compile()
	require.NoError(t, err)
	srv, err := server.New(server.Config{Workflows: map[string]*graph.Runnable{"shout": shout}, Saver: memory.New(),
		Tokens: map[string]string{"tok": "alice"}, Logger: slog.New(slog.DiscardHandler),
		MCPTools: map[string]server.MCPTool{"shout": {Description: "Shouts what it is told.", Input: "text", Output: "text"}}})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		require.NoError(t, srv.Shutdown(context.Background()))
	})

	_, err = a2a.NewTool(t.Context(), a2a.ToolConfig{URL: hs.URL + "/a2a/shout/"})
	require.NoError(t, err, "the card is public")
	tool, err := a2a.NewTool(t.Context(), a2a.ToolConfig{URL: hs.URL + "/a2a/shout/", Bearer: "tok"})
	require.NoError(t, err)
	assert.Equal(t, "shout", tool.Name())
	assert.Contains(t, tool.Description(), "Shouts what it is told.")

	saver := memory.New()
	r := callGraph(t, tool, "quiet please", true)
	ups := run(t, r, graph.WithSaver(saver), graph.Thread("t"))
	var texts []string
	for _, u := range ups {
		texts = append(texts, u.Text)
	}
	assert.Contains(t, texts, "node upper finished", "the remote run's node updates")
	assert.Contains(t, texts, "QUIET PLEASE", "its answer's artifact")

	again := callGraph(t, tool, "quiet please", true)
	for _, err := range again.Stream(t.Context(), nil, graph.WithSaver(saver), graph.Thread("t"), graph.Resume(true)) {
		require.NoError(t, err)
	}
	snap, err := again.State(t.Context(), "t", graph.WithSaver(saver))
	require.NoError(t, err)
	got, _ := snap.State.Value("answer")
	assert.Equal(t, "QUIET PLEASE", got)

	// One task on the remote server: the node that ran again sent nothing.
	c, err := a2a.Dial(t.Context(), hs.URL+"/a2a/shout/", a2a.WithBearer("tok"))
	require.NoError(t, err)
	n, err := c.ListTasks(t.Context(), a2a.ListTasksRequest{})
	require.NoError(t, err)
	assert.Len(t, n.Tasks, 1)
}

// TestARemoteQuestionInterruptsTheCallingRun: a coorflow agent whose run
// asks two questions in turn, called as a tool. Each question is an
// interrupt of the calling run (a Question), the human's answer given on
// resume goes to the same remote task as its next message, and the call's
// result is the task's answer once it completes. No message is sent twice
// although the calling node runs again at each resume.
func TestARemoteQuestionInterruptsTheCallingRun(t *testing.T) {
	log := graph.NewKey("log", graph.Append[string]())
	g := graph.New("ask", log)
	g.AddNode("form", func(ctx context.Context, s graph.State) (graph.Command, error) {
		name, err := graph.InterruptAs[string](ctx, map[string]string{"question": "name?"})
		if err != nil {
			return graph.Command{}, err
		}
		city, err := graph.InterruptAs[map[string]string](ctx, map[string]string{"question": "city?"})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(log, name+" from "+city["city"])), nil
	})
	g.AddEdge(graph.Start, "form")
	g.AddEdge("form", graph.End)
	ask, err := g.Compile()
	require.NoError(t, err)
	srv, err := server.New(server.Config{Workflows: map[string]*graph.Runnable{"ask": ask}, Saver: memory.New(),
		Tokens: map[string]string{"tok": "alice"}, Logger: slog.New(slog.DiscardHandler),
		MCPTools: map[string]server.MCPTool{"ask": {Description: "Asks for a name and a city.", Input: "log", Output: "log"}}})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		require.NoError(t, srv.Shutdown(context.Background()))
	})
	tool, err := a2a.NewTool(t.Context(), a2a.ToolConfig{URL: hs.URL + "/a2a/ask/", Bearer: "tok"})
	require.NoError(t, err)

	saver := memory.New()
	r := callGraph(t, tool, `["start"]`, false)
	resume := func(answer any) graph.Result {
		t.Helper()
		opts := []graph.Option{graph.WithSaver(saver), graph.Thread("t")}
		in := graph.Input()
		if answer != nil {
			in = nil
			opts = append(opts, graph.Resume(answer))
		}
		res, err := r.Invoke(t.Context(), in, opts...)
		require.NoError(t, err)
		return res
	}
	question := func(res graph.Result) a2a.Question {
		t.Helper()
		require.Equal(t, graph.StatusInterrupted, res.Status)
		require.Len(t, res.Interrupts, 1)
		q, err := graph.InterruptPayload[a2a.Question](res.Interrupts[0])
		require.NoError(t, err)
		return q
	}

	first := question(resume(nil))
	assert.Equal(t, a2a.KindQuestion, first.Kind)
	assert.Equal(t, "ask", first.Agent)
	assert.Contains(t, first.Question, "name?")
	require.Len(t, first.Data, 1, "the remote interrupts, as data")
	assert.Contains(t, string(first.Data[0]), "interrupts")

	second := question(resume("Ada"))
	assert.Equal(t, first.TaskID, second.TaskID, "the same remote task asks again")
	assert.Contains(t, second.Question, "city?")

	res := resume(map[string]string{"city": "London"})
	require.Equal(t, graph.StatusDone, res.Status)
	got, _ := res.State.Value("answer")
	assert.Contains(t, got, "Ada from London", "the remote task's answer, after both answers")

	c, err := a2a.Dial(t.Context(), hs.URL+"/a2a/ask/", a2a.WithBearer("tok"))
	require.NoError(t, err)
	list, err := c.ListTasks(t.Context(), a2a.ListTasksRequest{})
	require.NoError(t, err)
	require.Len(t, list.Tasks, 1, "one remote task")
	task, err := c.GetTask(t.Context(), first.TaskID)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCompleted, task.Status.State)
	assert.Len(t, task.History, 3, "the message and two answers, each sent once")
}
