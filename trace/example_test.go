package trace_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
)

// Record a run, then replay it offline from its recorded model responses.
func Example() {
	ctx := context.Background()
	name := graph.NewKey[string]("name")
	greeting := graph.NewKey[string]("greeting")
	build := func(model llms.Model) *graph.Runnable {
		m := llm.Observe(model, llm.ModelInfo{Tier: "basic"})
		g := graph.New("hello", name, greeting)
		g.AddNode("greet", func(ctx context.Context, s graph.State) (graph.Command, error) {
			out, err := llms.GenerateFromSinglePrompt(llm.WithAgent(ctx, "greeter"), m, "Greet "+name.Get(s))
			return graph.Update(greeting.Set(out)), err
		})
		g.AddEdge(graph.Start, "greet")
		g.AddEdge("greet", graph.End)
		r, _ := g.Compile()
		return r
	}

	store := memory.New()
	rec := trace.NewRecorder(store, trace.RecorderConfig{})
	defer rec.Close(ctx)
	wf := build(scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"greeter": {{Text: "Hello, Ada!"}}}}))
	input := graph.Input(name.Set("Ada"))
	in, _ := trace.EncodeInput(input)
	for _, err := range rec.Record(ctx, trace.RunInfo{ID: "run-1", Graph: wf.Name(), Input: in}, wf.Stream(ctx, input)) {
		if err != nil {
			fmt.Println(err)
		}
	}

	cas, _ := trace.OpenCassette(ctx, store, "run-1")
	report, _ := trace.Replay(ctx, build(cas), cas)
	fmt.Println(report)

	report, _ = trace.Replay(ctx, build(cas), cas, trace.WithInput(name.Set("Grace")))
	fmt.Println(report.Divergences[0])
	// Output:
	// replay of run run-1: done (recorded done), 1 of 1 model calls answered from the recording; no divergence
	// model call 1 of hello/greet asked something else (request 9ddd27a4dd999f35, recorded 3d424768700481e2): message 1 (human) differs at character 7: recorded "Greet Ada", replay "Greet Grace"
}
