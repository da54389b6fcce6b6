package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coorflow/coorflow/graph"
)

func noop(context.Context, graph.State) (graph.Command, error) { return graph.Command{}, nil }

// chain builds Start -> n0 -> n1 -> ... -> n(size-1) -> End.
func chain(tb testing.TB, size int, keys ...graph.Channel) *graph.Runnable {
	tb.Helper()
	g := graph.New("chain", keys...)
	prev := graph.Start
	for i := range size {
		name := fmt.Sprintf("n%03d", i)
		g.AddNode(name, noop)
		g.AddEdge(prev, name)
		prev = name
	}
	g.AddEdge(prev, graph.End)
	r, err := g.Compile(graph.StepLimit(size + 1))
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// BenchmarkChain100 runs a chain of 100 no-op nodes: the engine's cost per
// node-step.
func BenchmarkChain100(b *testing.B) {
	r := chain(b, 100)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Invoke(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/step")
}

// BenchmarkChain100Big runs the same chain carrying a 1 MB string channel
// that no node changes.
func BenchmarkChain100Big(b *testing.B) {
	big := graph.NewKey[string]("big")
	r := chain(b, 100, big)
	ctx := b.Context()
	in := graph.Input(big.Set(strings.Repeat("x", 1<<20)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Invoke(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/step")
}

// BenchmarkChain100Stream is BenchmarkChain100 read through Stream with
// every event kind: tasks run on their own goroutines and each step yields
// six events.
func BenchmarkChain100Stream(b *testing.B) {
	r := chain(b, 100)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		for _, err := range r.Stream(ctx, nil) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/step")
}

// BenchmarkLoop10000 runs one node 10,000 times through a conditional edge.
func BenchmarkLoop10000(b *testing.B) {
	const n = 10_000
	iter := graph.NewKey("iter", graph.Sum[int]())
	g := graph.New("loop", iter)
	g.AddNode("step", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(iter.Set(1)), nil
	})
	g.AddEdge(graph.Start, "step")
	g.AddConditionalEdges("step", func(ctx context.Context, s graph.State) (string, error) {
		if iter.Get(s) < n {
			return "again", nil
		}
		return "done", nil
	}, graph.Branches{"again": "step", "done": graph.End})
	r, err := g.Compile(graph.StepLimit(n))
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Invoke(ctx, nil)
		if err != nil || iter.Get(res.State) != n {
			b.Fatal(err, iter.Get(res.State))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
}

// BenchmarkSend100 fans out to 100 Send packets and joins their results.
func BenchmarkSend100(b *testing.B) {
	const n = 100
	item := graph.NewKey[int]("item")
	out := graph.NewKey("out", graph.Append[int]())
	g := graph.New("fan", item, out)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		ps := make([]graph.Packet, n)
		for i := range ps {
			ps[i] = graph.To("worker", item.Set(i))
		}
		return graph.Send(ps...), nil
	}, graph.Destinations("worker"))
	g.AddNode("worker", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(out, item.Get(s))), nil
	})
	g.AddNode("join", noop)
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("worker", "join")
	g.AddEdge("join", graph.End)
	r, err := g.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Invoke(ctx, nil)
		if err != nil || len(out.Get(res.State)) != n {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/branch")
}
