package nodes_test

import (
	"context"
	"fmt"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
)

// The planner, a prebuilt node, on a scripted model: its first plan names
// an agent that does not exist, so it sends the problem back to the model
// and keeps the repaired plan.
func ExamplePlanner() {
	draft := func(agent string) scripted.Reply {
		return scripted.Reply{Text: `{"title":"Compare SQLite and Postgres","thought":"facts, then a test",
			"locale":"en-US","has_enough_context":false,"new_agents_needed":[],"steps":[
			{"id":"s1","agent_name":"researcher","title":"Gather facts","description":"Find the limits of each.",
			 "step_type":"research","need_search":true,"depends_on":[]},
			{"id":"s2","agent_name":"` + agent + `","title":"Benchmark","description":"Time inserts in both.",
			 "step_type":"processing","need_search":false,"depends_on":["s1"]}]}`}
	}
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"planner": {draft("benchmarker"), draft("coder")}}})
	planner, err := nodes.Planner(nodes.PlannerConfig{Model: model, Review: "review", Reporter: "reporter"})
	if err != nil {
		panic(err)
	}
	noop := func(context.Context, graph.State) (graph.Command, error) { return graph.Command{}, nil }
	g := graph.New("plan", nodes.Channels()...)
	g.AddNode("planner", planner, graph.Destinations("review", "reporter"))
	g.AddNode("review", noop)
	g.AddNode("reporter", noop)
	g.AddEdge(graph.Start, "planner")
	g.AddEdge("review", graph.End)
	g.AddEdge("reporter", graph.End)
	r, err := g.Compile()
	if err != nil {
		panic(err)
	}
	res, err := r.Invoke(context.Background(), graph.Input(nodes.Request.Set("Should we move from SQLite to Postgres?")))
	if err != nil {
		panic(err)
	}
	p := nodes.PlanKey.Get(res.State)
	fmt.Println(p.Title)
	for _, s := range p.Steps {
		fmt.Printf("%s %s (%s, %s) after %v\n", s.ID, s.Title, s.AgentName, s.StepType, s.DependsOn)
	}
	fmt.Println("model calls:", len(model.Calls()))
	// Output:
	// Compare SQLite and Postgres
	// s1 Gather facts (researcher, research) after []
	// s2 Benchmark (coder, processing) after [s1]
	// model calls: 2
}
