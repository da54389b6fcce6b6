package agentevent_test

import (
	"context"
	"fmt"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
)

// An agent announces its work with graph.Emit; a consumer of the stream
// switches on the payload's type, and writes the event's name.
func Example() {
	g := graph.New("team")
	g.AddNode("analyst", func(ctx context.Context, s graph.State) (graph.Command, error) {
		ctx = graph.WithScope(ctx, "agent:analyst")
		graph.Emit(ctx, agentevent.Started{Agent: "analyst", Task: "Compare two databases"})
		graph.Emit(ctx, agentevent.Warning{Value: "the web search is slow"})
		graph.Emit(ctx, agentevent.Ended{Agent: "analyst", Output: "SQLite for one process."})
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "analyst")
	g.AddEdge("analyst", graph.End)
	r, err := g.Compile()
	if err != nil {
		panic(err)
	}
	for ev, err := range r.Stream(context.Background(), graph.Input(), graph.Events(graph.EventCustom)) {
		if err != nil {
			panic(err)
		}
		switch d := ev.Data.(type) {
		case agentevent.Started:
			fmt.Printf("%s %s: %s\n", ev.Name(), ev.Path, d.Task)
		case agentevent.Warning:
			fmt.Printf("%s %s: %v\n", ev.Name(), ev.Path, d)
		case agentevent.Ended:
			fmt.Printf("%s %s: %s\n", ev.Name(), ev.Path, d.Output)
		}
	}
	// Output:
	// agent_start team/analyst/agent:analyst: Compare two databases
	// warning team/analyst/agent:analyst: the web search is slow
	// agent_end team/analyst/agent:analyst: SQLite for one process.
}
