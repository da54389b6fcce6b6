package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// BenchmarkEngineStep runs a chain of nodes that each append one short
// line to a channel, in sync durability, with each Saver: the difference
// in ns/step between the two is what SQLite adds to a small step.
func BenchmarkEngineStep(b *testing.B) {
	savers := []struct {
		name string
		new  func(b *testing.B) graph.Saver
	}{
		{"memory", func(*testing.B) graph.Saver { return memory.New() }},
		{"sqlite", func(b *testing.B) graph.Saver { return open(b, filepath.Join(b.TempDir(), "bench.db")) }},
	}
	for _, sv := range savers {
		b.Run(sv.name, func(b *testing.B) {
			const nodes = 50
			r, lines := appendChain(b, nodes, sv.new(b))
			in := graph.Input(lines.Set([]string{"start"}))
			ctx := b.Context()
			b.ReportAllocs()
			runs := 0
			for b.Loop() {
				if _, err := r.Invoke(ctx, in, graph.Thread(strconv.Itoa(runs))); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs*nodes), "ns/step")
		})
	}
}

// appendChain compiles Start -> n0 -> ... -> n(size-1) -> End, each node
// appending about 100 bytes to one channel, with saver in sync durability.
func appendChain(b *testing.B, size int, saver graph.Saver) (*graph.Runnable, *graph.Key[[]string]) {
	b.Helper()
	lines := graph.NewKey("lines", graph.Append[string]())
	line := "the node finished its part of the plan and hands the result to the next one in the chain"
	g := graph.New("chain", lines)
	prev := graph.Start
	for i := range size {
		name := fmt.Sprintf("n%03d", i)
		g.AddNode(name, func(context.Context, graph.State) (graph.Command, error) {
			return graph.Update(graph.AppendTo(lines, line)), nil
		})
		g.AddEdge(prev, name)
		prev = name
	}
	g.AddEdge(prev, graph.End)
	r, err := g.Compile(graph.WithSaver(saver), graph.StepLimit(size+1), graph.WithDurability(graph.DurabilitySync))
	if err != nil {
		b.Fatal(err)
	}
	return r, lines
}
