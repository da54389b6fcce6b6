package temporalrun_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/temporalrun"
)

var textKey = graph.NewKey[string]("text")

// chain returns a chain of n nodes that each append their name and the
// task queue their step ran on ("in-process" outside Temporal).
func chain(name string, n int) *graph.Runnable {
	g := graph.New(name, callLog)
	prev := graph.Start
	for i := range n {
		node := fmt.Sprintf("n%02d", i)
		g.AddNode(node, func(ctx context.Context, s graph.State) (graph.Command, error) {
			queue := "in-process"
			if activity.IsActivity(ctx) {
				queue = activity.GetInfo(ctx).TaskQueue
			}
			return graph.Update(graph.AppendTo(callLog, node+"@"+queue)), nil
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

// fullHistory returns the history of the thread's newest workflow run.
func fullHistory(t *testing.T, c client.Client, thread string) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(t.Context(), thread, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	return h
}

// resumes counts the resume updates the thread's newest workflow run
// accepted (recorded in its history).
func resumes(t *testing.T, c client.Client, thread string) int {
	t.Helper()
	n := 0
	for _, ev := range fullHistory(t, c, thread).Events {
		if a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil && a.GetAcceptedRequest().GetInput().GetName() == temporalrun.UpdateResume {
			n++
		}
	}
	return n
}

// history returns the event types of the thread's newest workflow run.
func history(t testing.TB, c client.Client, thread string) []enumspb.EventType {
	t.Helper()
	it := c.GetWorkflowHistory(t.Context(), thread, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []enumspb.EventType
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		out = append(out, ev.GetEventType())
	}
	return out
}

func count(events []enumspb.EventType, want enumspb.EventType) int {
	n := 0
	for _, e := range events {
		if e == want {
			n++
		}
	}
	return n
}

func TestResumeIsAnUpdateAndAWrongAnswerIsRefusedBeforeItIsRecorded(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	g := graph.New("ask-"+randomHex(), textKey)
	g.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		v, err := graph.InterruptAs[string](ctx, "your name?")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(textKey.Set("hello " + v)), nil
	})
	g.AddEdge(graph.Start, "ask")
	g.AddEdge("ask", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	run := e.runner(r)
	thread := "ask-" + randomHex()

	res, err := run.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)

	_, err = run.Invoke(t.Context(), nil, graph.Thread(thread), graph.ResumeEach(map[string]any{"no-such-id": "x"}))
	require.ErrorIs(t, err, graph.ErrNotInterrupted)
	assert.Contains(t, err.Error(), `has no pending interrupt "no-such-id"`)
	assert.Zero(t, resumes(t, e.client, thread), "the validator refused the answer: nothing was recorded")
	snap, err := r.State(t.Context(), thread, graph.WithSaver(e.saver))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1, "the question is still open")

	_, err = run.Invoke(t.Context(), []graph.Write{textKey.Set("x")}, graph.Thread(thread))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has an unfinished run", "input for a paused thread is refused")

	res, err = run.Invoke(t.Context(), nil, graph.Thread(thread), graph.Resume("Ada"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, "hello Ada", textKey.Get(res.State))
	assert.Equal(t, 1, resumes(t, e.client, thread))
	for _, ev := range fullHistory(t, e.client, thread).Events {
		assert.NotEqual(t, temporalrun.HeadActivityName, ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName(),
			"the head is read by a local activity, without a trip through the server")
	}

	// A new input starts the thread's next run: a new workflow, same id.
	res, err = run.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusInterrupted, res.Status)

	// Cancelled while it waits, the run stops; its question stays, and a
	// later answer resumes the thread in a new workflow.
	require.NoError(t, run.Cancel(t.Context(), thread))
	desc, err := e.client.DescribeWorkflow(t.Context(), thread, "")
	require.NoError(t, err)
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, desc.RawResponse.GetWorkflowExecutionInfo().GetStatus())
	res, err = run.Invoke(t.Context(), nil, graph.Thread(thread), graph.Resume("Grace"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, "hello Grace", textKey.Get(res.State))
}

func TestContinueAsNewAtASuperstepBoundary(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	run := e.runner(chain("chain-"+randomHex(), 10), func(c *temporalrun.Config) { c.StepsPerRun = 3 })
	thread := "can-" + randomHex()
	res, err := run.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.Len(t, callLog.Get(res.State), 10)

	it := e.client.GetWorkflowHistory(t.Context(), thread, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	require.True(t, it.HasNext())
	first, err := it.Next()
	require.NoError(t, err)
	assert.NotEmpty(t, first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(),
		"the last execution continued an earlier one")
	steps := count(history(t, e.client, thread), enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
	assert.LessOrEqual(t, steps, 4, "an execution takes at most 3 steps (plus the head read)")
}

func TestStepsGoToTheQueueOfTheirNodes(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	model := "model-" + randomHex()
	e.startWorker(model, true)
	run := e.runner(chain("queues-"+randomHex(), 3), func(c *temporalrun.Config) {
		c.NodeQueues = map[string]string{"n01": model}
	})
	res, err := run.Invoke(t.Context(), graph.Input(), graph.Thread("queues-"+randomHex()))
	require.NoError(t, err)
	assert.Equal(t, []string{"n00@" + e.queue, "n01@" + model, "n02@" + e.queue}, callLog.Get(res.State))
}

func TestANewGraphVersionContinuesRunsInFlight(t *testing.T) {
	e := newEnv(t)
	name := "versioned-" + randomHex()
	build := func(greeting string) *graph.Runnable {
		g := graph.New(name, textKey)
		g.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
			v, err := graph.InterruptAs[string](ctx, "name?")
			if err != nil {
				return graph.Command{}, err
			}
			return graph.Update(textKey.Set(greeting + " " + v)), nil
		})
		g.AddEdge(graph.Start, "ask")
		g.AddEdge("ask", graph.End)
		r, err := g.Compile()
		require.NoError(t, err)
		return r
	}
	v1 := build("hello")
	w1, err := temporalrun.NewWorker(e.client, temporalrun.WorkerConfig{TaskQueue: e.queue,
		Graphs: temporalrun.NewGraphs(e.saver, v1), Options: workerOptions()})
	require.NoError(t, err)
	require.NoError(t, w1.Start())
	run := e.runner(v1)
	thread := "version-" + randomHex()
	res, err := run.Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	w1.Stop() // the old deployment goes away with the run in flight

	e.graphs.Add(build("bonjour"))
	e.startWorker(e.queue, false)
	res, err = run.Invoke(t.Context(), nil, graph.Thread(thread), graph.Resume("Ada"))
	require.NoError(t, err)
	assert.Equal(t, "bonjour Ada", textKey.Get(res.State), "the run continued on the new version of the node")

	// The workflow code of the finished run replays on this build without
	// a nondeterminism error: what a deploy must guarantee.
	replayer := worker.NewWorkflowReplayer()
	temporalrun.RegisterReplay(replayer, e.graphs)
	require.NoError(t, replayer.ReplayWorkflowHistory(nil, fullHistory(t, e.client, thread)))
}

func TestPayloadsTooLargeForTheHistoryAreRefusedSayingSo(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	lazy, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1", Logger: temporalrun.Logger(io.Discard)})
	require.NoError(t, err)
	g := graph.New("big-"+randomHex(), textKey)
	g.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		_, err := graph.Interrupt(ctx, "please read "+textKey.Get(s))
		return graph.Command{}, err
	})
	g.AddEdge(graph.Start, "ask")
	g.AddEdge("ask", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	run, err := temporalrun.New(temporalrun.Config{Client: lazy, Graph: r, Saver: memory.New(), TaskQueue: "q"})
	require.NoError(t, err)
	_, err = run.Invoke(t.Context(), []graph.Write{textKey.Set(big)}, graph.Thread("big"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `temporalrun: the input of thread "big" is 3145759 bytes as JSON; Temporal refuses payloads over 2 MB: put large values in the store and pass a reference`)

	// A value in the state may be large (it stays in the saver); a
	// question carrying it to the history is refused, and kept.
	e := newEnv(t)
	e.startWorker(e.queue, false)
	g2 := graph.New("big2-"+randomHex(), textKey)
	g2.AddNode("load", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(textKey.Set(big)), nil
	})
	g2.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		_, err := graph.Interrupt(ctx, "please read "+textKey.Get(s))
		return graph.Command{}, err
	})
	g2.AddEdge(graph.Start, "load")
	g2.AddEdge("load", "ask")
	g2.AddEdge("ask", graph.End)
	r2, err := g2.Compile()
	require.NoError(t, err)
	thread := "big-" + randomHex()
	_, err = e.runner(r2).Invoke(t.Context(), graph.Input(), graph.Thread(thread))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/ask carry ")
	assert.Contains(t, err.Error(), "bytes as JSON; Temporal refuses payloads over 2 MB: ask with a reference to the store, not the value")
	snap, err := r2.State(t.Context(), thread, graph.WithSaver(e.saver))
	require.NoError(t, err)
	assert.Len(t, textKey.Get(snap.State), 3<<20, "the large value is in the saver")
	require.Len(t, snap.Interrupts, 1, "the question is kept")
}
