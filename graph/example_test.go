package graph_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/graph"
)

var (
	topic = graph.NewKey[string]("topic")
	notes = graph.NewKey("notes", graph.Append[string]())
)

func Example() {
	g := graph.New("research", topic, notes)
	g.AddNode("plan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		var ps []graph.Packet
		for _, q := range []string{"history", "use", "risks"} {
			ps = append(ps, graph.To("search", topic.Set(topic.Get(s)+" "+q)))
		}
		return graph.Send(ps...), nil
	}, graph.Destinations("search"))
	g.AddNode("search", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(notes, "found: "+topic.Get(s))), nil
	})
	g.AddNode("report", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(notes, strings.Repeat("=", 10))), nil
	})
	g.AddEdge(graph.Start, "plan")
	g.AddEdge("search", "report")
	g.AddEdge("report", graph.End)

	run, err := g.Compile()
	if err != nil {
		panic(err)
	}
	res, err := run.Invoke(context.Background(), graph.Input(topic.Set("graphite")))
	if err != nil {
		panic(err)
	}
	for _, n := range notes.Get(res.State) {
		fmt.Println(n)
	}
	// Output:
	// found: graphite history
	// found: graphite use
	// found: graphite risks
	// ==========
}
