package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// TestEndNodesAreTheNodesThatMayLeadToEnd: a static edge, a branch's end
// and a declared Goto destination to End each make a node an end node;
// nodes that only lead to other nodes are not.
func TestEndNodesAreTheNodesThatMayLeadToEnd(t *testing.T) {
	k := graph.NewKey[string]("k")
	noop := func(context.Context, graph.State) (graph.Command, error) { return graph.Command{}, nil }
	g := graph.New("ends", k)
	g.AddNode("a", noop)
	g.AddNode("b", noop)
	g.AddNode("c", func(context.Context, graph.State) (graph.Command, error) { return graph.Goto(graph.End), nil },
		graph.Destinations(graph.End))
	g.AddNode("d", noop)
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddConditionalEdges("b", func(context.Context, graph.State) (string, error) { return "end", nil },
		graph.Branches{"end": graph.End, "side": "c", "more": "d"})
	g.AddEdge("d", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "c", "d"}, r.EndNodes())
}
