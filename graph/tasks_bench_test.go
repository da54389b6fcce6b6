package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// fanOutTasks returns n independent tasks that do nothing: what is
// measured is the scheduler.
func fanOutTasks(n int) []graph.Task[int] {
	tasks := make([]graph.Task[int], n)
	for i := range tasks {
		tasks[i] = graph.Task[int]{Key: fmt.Sprintf("t%d", i), Run: func(context.Context) (int, error) { return i, nil }}
	}
	return tasks
}

// BenchmarkScheduleFanOut measures a fan-out of n tasks outside a node:
// the scheduler alone (the shape of internal/dag's Run, which it
// replaced).
func BenchmarkScheduleFanOut(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			tasks := fanOutTasks(n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := graph.Schedule(b.Context(), graph.TaskOptions{Limit: 4}, tasks); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
		})
	}
}

// BenchmarkScheduleFanOutInNode measures the same fan-out inside a node:
// each task journaled (in memory, or written to a saver).
func BenchmarkScheduleFanOutInNode(b *testing.B) {
	for _, saver := range []bool{false, true} {
		for _, n := range []int{8, 64} {
			b.Run(fmt.Sprintf("saver=%v/tasks=%d", saver, n), func(b *testing.B) {
				tasks := fanOutTasks(n)
				g := graph.New("g")
				g.AddNode("team", func(ctx context.Context, s graph.State) (graph.Command, error) {
					_, err := graph.Schedule(ctx, graph.TaskOptions{Limit: 4}, tasks)
					return graph.Command{}, err
				})
				g.AddEdge(graph.Start, "team")
				g.AddEdge("team", graph.End)
				var opts []graph.Option
				if saver {
					opts = append(opts, graph.WithSaver(memory.New()))
				}
				r, err := g.Compile(opts...)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					if _, err := r.Invoke(b.Context(), graph.Input(), graph.Thread(fmt.Sprint("t", i))); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
			})
		}
	}
}
