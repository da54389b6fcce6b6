package temporalrun

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

var text = graph.NewKey("text", graph.Append[string]())

// updateResult collects the callbacks of an update in the test
// environment.
type updateResult struct {
	rejected error
	out      Output
	err      error
	done     bool
}

func (u *updateResult) Accept()                 {}
func (u *updateResult) Reject(err error)        { u.rejected, u.done = err, true }
func (u *updateResult) Complete(v any, e error) { u.out, u.err, u.done = v.(Output), e, true }

// TestWorkflowInMemory runs the workflow in the SDK's test environment:
// the steps run (b and c as task activities of one step), the run pauses, a wrong answer is refused by the
// validator, the right one resumes it.
func TestWorkflowInMemory(t *testing.T) {
	g := graph.New("wf", text)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(text, "a")), nil
	})
	g.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		v, err := graph.InterruptAs[string](ctx, "name?")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(text, "hello "+v)), nil
	})
	for _, n := range []string{"b", "c"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
			return graph.Update(graph.AppendTo(text, n)), nil
		})
		g.AddEdge("a", n)
	}
	g.AddEdge(graph.Start, "a")
	g.AddJoin([]string{"b", "c"}, "ask")
	g.AddEdge("ask", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	saver := memory.New()
	gs := NewGraphs(saver, r)

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(Logger(io.Discard))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(gs.workflowFn, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(gs.step, activity.RegisterOptions{Name: StepActivityName})
	env.RegisterActivityWithOptions(gs.head, activity.RegisterOptions{Name: HeadActivityName})
	env.RegisterActivityWithOptions(gs.task, activity.RegisterOptions{Name: TaskActivityName})
	started := map[string]int{}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		started[info.ActivityType.Name]++
	})
	input, err := r.EncodeWrites(graph.Input())
	require.NoError(t, err)

	wrong, right := &updateResult{}, &updateResult{}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateResume, "wrong", wrong, graph.Answers{Each: map[string]json.RawMessage{"nope": json.RawMessage(`"x"`)}})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateResume, "right", right, graph.Answers{One: json.RawMessage(`"Ada"`), HasOne: true})
	}, 2*time.Minute)
	env.ExecuteWorkflow(WorkflowName, RunInput{Graph: "wf", Thread: "t1", Input: input, StepLimit: 10,
		Queues: Queues{Default: "q"}, StepTimeout: time.Minute, HeartbeatTimeout: 10 * time.Second, MaxAttempts: 1})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	require.True(t, wrong.done)
	require.Error(t, wrong.rejected)
	assert.ErrorIs(t, decodeError(wrong.rejected), graph.ErrNotInterrupted)
	require.True(t, right.done)
	require.NoError(t, right.err)
	assert.Equal(t, graph.StatusDone, right.out.Status)

	assert.Equal(t, 2, started[TaskActivityName], "b and c ran as activities of their own")
	var out Output
	require.NoError(t, env.GetWorkflowResult(&out))
	assert.Equal(t, graph.StatusDone, out.Status)
	snap, err := r.State(t.Context(), "t1", graph.WithSaver(saver), graph.FromCheckpoint(out.Checkpoint))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "hello Ada"}, text.Get(snap.State))
}

func TestQueuesForStep(t *testing.T) {
	q := Queues{Default: "main", Nodes: map[string]string{"m1": "model", "m2": "model", "t": "tool"}}
	assert.Equal(t, "model", q.forStep([]string{"m1", "m2"}))
	assert.Equal(t, "main", q.forStep([]string{"m1", "t"}), "mixed kinds go to the default queue")
	assert.Equal(t, "main", q.forStep([]string{"m1", "x"}))
	assert.Equal(t, "main", q.forStep(nil))
	assert.Equal(t, "tool", q.forStep([]string{"t"}))
}

func TestAStepOfANodeThatStartsTasksIsNeverLocal(t *testing.T) {
	w := &runState{in: RunInput{LocalSteps: true, Queues: Queues{Default: "main"}, TaskNodes: []string{"team"}}}
	w.next, w.tasks = []string{"plan"}, []string{"plan"}
	assert.True(t, w.local(StepInput{}, "main"), "a one-task step of a node that starts no tasks is local")
	w.next, w.tasks = []string{"team"}, []string{"team"}
	assert.False(t, w.local(StepInput{}, "main"), "the team's tasks must reach other workers")
	w.in.TaskNodes = nil
	assert.True(t, w.local(StepInput{}, "main"))
	w.in.LocalSteps = false
	assert.False(t, w.local(StepInput{}, "main"), "ActivitySteps")
}
