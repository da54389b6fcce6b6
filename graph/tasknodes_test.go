package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

func TestTaskNodesAreTheNodesThatSayTheyStartTasks(t *testing.T) {
	nop := func(context.Context, graph.State) (graph.Command, error) { return graph.Command{}, nil }
	inner := graph.New("inner")
	inner.AddNode("team", nop, graph.StartsTasks())
	inner.AddEdge(graph.Start, "team")
	inner.AddEdge("team", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)

	g := graph.New("outer")
	g.AddNode("plan", nop)
	g.AddNode("team", nop, graph.StartsTasks())
	g.AddSubgraph("nested", sub)
	g.AddEdge(graph.Start, "plan")
	g.AddEdge("plan", "team")
	g.AddEdge("team", "nested")
	g.AddEdge("nested", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	assert.Equal(t, []string{"team", "nested"}, r.TaskNodes(), "a subgraph node whose graph starts tasks starts tasks")
	assert.Equal(t, []string{"team"}, sub.TaskNodes())
}
