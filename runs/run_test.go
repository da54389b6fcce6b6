package runs_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/trace"
)

// TestARunsNodesSeeWhatItsRecordingKeeps: the runtime values a run's
// nodes read (owner, thread, run, config, environment) are those its
// recording keeps, from which a replay runs it again; the run goes on the
// thread's key in the saver.
func TestARunsNodesSeeWhatItsRecordingKeeps(t *testing.T) {
	keys := []string{store.RuntimeOwner, graph.RuntimeThread, graph.RuntimeRun, runs.RuntimeConfig, runs.RuntimeEnv}
	seen := map[string]string{}
	x := graph.NewKey[string]("x")
	b := graph.New("g", x)
	b.AddNode("read", func(ctx context.Context, s graph.State) (graph.Command, error) {
		for _, k := range keys {
			seen[k] = graph.RuntimeString(ctx, k)
		}
		return graph.Command{}, nil
	})
	b.AddEdge(graph.Start, "read")
	b.AddEdge("read", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)
	config, _, err := runs.ParseConfig([]byte(`{"model":"fast"}`))
	require.NoError(t, err)
	input := graph.Input(x.Set("hi"))
	r := &runs.Run{ID: "r1", Thread: "t1", Key: "owner/t1", Owner: "ann", Workflow: "wf", Graph: g.Name(),
		Input: input, StartCheckpoint: "c0", Config: config, Env: &runs.Env{CodeExec: runs.CodeExecOff, Workflow: "builtin:wf"}}
	saver := memory.New()
	_, err = g.Invoke(t.Context(), input, append(r.Options(), graph.WithSaver(saver))...)
	require.NoError(t, err)

	info, err := r.Recording()
	require.NoError(t, err)
	for _, k := range keys {
		assert.NotEmpty(t, seen[k], k)
		assert.Equal(t, info.Runtime[k], seen[k], "the recording keeps what the node saw under %s", k)
	}
	assert.Equal(t, `{"model":"fast"}`, seen[runs.RuntimeConfig])
	assert.Equal(t, "c0", info.Runtime[runs.RuntimeStart], "an input's recording keeps the checkpoint it started from")
	assert.Equal(t, trace.StartInput, info.Start)
	assert.Equal(t, "owner/t1", info.GraphThread)
	assert.Equal(t, "t1", info.Thread)
	want, err := trace.EncodeInput(input)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(info.Input))
	_, err = g.State(t.Context(), "owner/t1", graph.WithSaver(saver))
	require.NoError(t, err, "the run went on the thread's key")
}

// TestARunsRecordingSaysHowItStarted: an answer records its answers and
// no start checkpoint; a continuation records neither.
func TestARunsRecordingSaysHowItStarted(t *testing.T) {
	answers := json.RawMessage(`{"resume":"yes"}`)
	info, err := (&runs.Run{ID: "r", Thread: "t", Resuming: true, Answers: answers, StartCheckpoint: "c0"}).Recording()
	require.NoError(t, err)
	assert.Equal(t, trace.StartResume, info.Start)
	assert.Equal(t, answers, info.Input)
	assert.NotContains(t, info.Runtime, runs.RuntimeStart)
	assert.NotContains(t, info.Runtime, runs.RuntimeEnv, "a run without an environment records none")
	assert.Equal(t, "t", info.GraphThread, "without a key the thread is its own key")

	info, err = (&runs.Run{ID: "r", Thread: "t"}).Recording()
	require.NoError(t, err)
	assert.Equal(t, trace.StartContinue, info.Start)
	assert.Nil(t, info.Input)
}

// TestARunsMeterCountsUnderItsTurnAndItsParent: what a run spends counts
// in its own meter, in its turn's (which started from what the turn spent
// before) and in its parent's; the turn's budget is the one that holds.
func TestARunsMeterCountsUnderItsTurnAndItsParent(t *testing.T) {
	parent := llm.NewMeter("owner", llm.Budget{}, llm.Spend{}, nil)
	before := llm.Spend{PromptTokens: 50}
	ctx, turn, own := runs.Meter(t.Context(), llm.Budget{Tokens: 100}, before, parent)
	assert.Same(t, own, llm.MeterFrom(ctx))
	own.Add(llm.ModelCall{PromptTokens: 10, CompletionTokens: 5})
	assert.Equal(t, 15, own.Spent().Tokens())
	assert.Equal(t, 65, turn.Spent().Tokens())
	assert.Equal(t, 15, parent.Spent().Tokens())
	assert.Equal(t, llm.Budget{Tokens: 100}, turn.Budget())
}
