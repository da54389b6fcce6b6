package trace_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
)

// lookup is a workflow without a model: its Go node calls the tool capital
// through tools.Observe, which answers capital.
func lookup(t *testing.T, capital string) *graph.Runnable {
	t.Helper()
	reg, err := tools.NewRegistry(tools.Func("capital", "Returns the capital of a country.", nil,
		func(context.Context, json.RawMessage) (string, error) { return capital, nil }))
	require.NoError(t, err)
	caller := tools.Observe(reg)
	g := graph.New("lookup", questionKey, answerKey)
	g.AddNode("find", func(ctx context.Context, s graph.State) (graph.Command, error) {
		args, _ := json.Marshal(map[string]string{"country": questionKey.Get(s)})
		res, err := caller.Run(ctx, tools.Call{Name: "capital", Args: args}, tools.RunOptions{})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(answerKey.Set(res.Output)), nil
	})
	g.AddEdge(graph.Start, "find")
	g.AddEdge("find", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func TestReplayComparesAToolCallThatAGoNodeMakes(t *testing.T) {
	store, err := record(t, lookup(t, "Paris"), "run-1", "France", trace.RecorderConfig{})
	require.NoError(t, err)
	rec, err := trace.Load(t.Context(), store, "run-1")
	require.NoError(t, err)
	cas, err := trace.NewCassette(rec)
	require.NoError(t, err)

	same, err := trace.Replay(t.Context(), lookup(t, "Paris"), cas)
	require.NoError(t, err)
	assert.True(t, same.OK(), "%s", same)

	other, err := trace.Replay(t.Context(), lookup(t, "Lyon"), cas)
	require.NoError(t, err)
	var tool *trace.Divergence
	for i, d := range other.Divergences {
		if d.Kind == trace.DivergedToolResult {
			tool = &other.Divergences[i]
		}
	}
	require.NotNil(t, tool, "%s", other)
	assert.Equal(t, "lookup/find", tool.Path)
	assert.Equal(t, "ok: Paris", tool.Want)
	assert.Equal(t, "ok: Lyon", tool.Got)
	assert.Regexp(t, `^tool capital, call call_[0-9a-f]{12}$`, tool.Detail)
}
