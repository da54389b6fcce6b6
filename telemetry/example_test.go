package telemetry_test

import (
	"context"
	"fmt"
	"slices"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/telemetry"
)

func ExampleTrace() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())

	g := graph.New("hello")
	g.AddNode("answer", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, llm.ModelCall{Model: "gpt-x", PromptTokens: 10, CompletionTokens: 3})
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "answer")
	g.AddEdge("answer", graph.End)
	r, err := g.Compile()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, err := range telemetry.Trace(ctx, tp.Tracer(telemetry.TracerName), r.Stream(ctx, graph.Input())) {
		if err != nil {
			panic(err)
		}
	}
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output: [chat gpt-x node answer run hello step 0]
}
