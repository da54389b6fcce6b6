package graph_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

func TestCompileErrors(t *testing.T) {
	route := func(context.Context, graph.State) (string, error) { return "", nil }
	cases := []struct {
		name  string
		build func(g *graph.Graph)
		want  string
	}{
		{"unknown node in an edge", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", "b")
		}, `graph "g": edge a -> b: unknown node "b"`},
		{"unknown source of an edge", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
			g.AddEdge("ghost", "a")
		}, `graph "g": edge ghost -> a: unknown node "ghost"`},
		{"unknown node in a conditional edge", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddConditionalEdges("a", route, graph.Branches{"yes": "b", "no": graph.End})
		}, `graph "g": conditional edge a -> b (branch "yes"): unknown node "b"`},
		{"unknown node in a join", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
			g.AddJoin([]string{"a", "b"}, "a")
		}, `graph "g": join [a b] -> a: unknown source node "b"`},
		{"unknown destination", func(g *graph.Graph) {
			g.AddNode("a", noop, graph.Destinations("b"))
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
		}, `graph "g": node "a" declares unknown destination "b"`},
		{"unreachable node", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddNode("island", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
			g.AddEdge("island", graph.End)
		}, `graph "g": node "island" is unreachable from Start`},
		{"no path to End", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddNode("b", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", "b")
			g.AddEdge("b", "a")
			g.AddEdge(graph.Start, "c")
			g.AddNode("c", noop)
			g.AddEdge("c", graph.End)
		}, "graph \"g\": 2 problems:\n  - node \"a\" has no path to End (every route from it loops forever)\n  - node \"b\" has no path to End (every route from it loops forever)"},
		{"node with no outgoing edge", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
		}, `graph "g": node "a" has no outgoing edge: add an edge (to graph.End if the run should stop there) or declare where its Goto goes with graph.Destinations`},
		{"duplicate node", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
		}, `graph "g": node "a" is added twice`},
		{"reserved name", func(g *graph.Graph) {
			g.AddNode(graph.End, noop)
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
		}, `graph "g": node name "__end__" is reserved`},
		{"bad characters in a name", func(g *graph.Graph) {
			g.AddNode("a/b", noop)
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
		}, `graph "g": node name "a/b" must be non-empty and contain none of / [ ]`},
		{"no edge from Start", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddEdge("a", graph.End)
		}, "graph \"g\": no edge from Start: add g.AddEdge(graph.Start, \"a\") or a conditional edge from graph.Start"},
		{"edge into Start and out of End", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.Start)
			g.AddEdge(graph.End, "a")
		}, "graph \"g\": 2 problems:\n  - edge __end__ -> a: End has no outgoing edges\n  - edge a -> __start__: Start has no incoming edges"},
		{"node without a function", func(g *graph.Graph) {
			g.AddNode("a", nil)
		}, "graph \"g\": 2 problems:\n  - node \"a\" has no function\n  - no edge from Start: add g.AddEdge(graph.Start, \"node\") or a conditional edge from graph.Start"},
		{"conditional edge without branches", func(g *graph.Graph) {
			g.AddNode("a", noop)
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
			g.AddConditionalEdges("a", route, nil)
		}, `graph "g": conditional edge from "a" declares no branches`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := graph.New("g")
			c.build(g)
			_, err := g.Compile()
			require.ErrorIs(t, err, graph.ErrInvalidGraph)
			assert.EqualError(t, err, c.want)
		})
	}
}

func TestDuplicateChannelFailsToCompile(t *testing.T) {
	g := graph.New("g", textKey, graph.NewKey[int]("text"))
	g.AddNode("a", noop)
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	_, err := g.Compile()
	assert.EqualError(t, err, `graph "g": channel "text" is declared twice`)
}

func TestMermaid(t *testing.T) {
	inner := graph.New("inner")
	inner.AddNode("x", noop)
	inner.AddEdge(graph.Start, "x")
	inner.AddEdge("x", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)

	g := graph.New("research")
	g.AddNode("coordinator", noop, graph.Destinations("planner", graph.End))
	g.AddNode("planner", noop)
	g.AddNode("research team", noop)
	g.AddNode("coder", noop)
	g.AddNode("end", noop)
	g.AddNode("reporter", noop, graph.Deferred())
	g.AddSubgraph("review", sub)
	g.AddEdge(graph.Start, "coordinator")
	g.AddEdge("planner", "review")
	g.AddConditionalEdges("review", func(context.Context, graph.State) (string, error) { return "", nil },
		graph.Branches{"accepted": "research team", "edit": "planner"})
	g.AddEdge("research team", "coder")
	g.AddEdge("research team", "end")
	g.AddJoin([]string{"coder", "end"}, "reporter")
	g.AddEdge("reporter", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	got := r.Mermaid()
	golden := filepath.Join("testdata", "research.mmd")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
	assert.Equal(t, got, r.Mermaid(), "deterministic")
}
