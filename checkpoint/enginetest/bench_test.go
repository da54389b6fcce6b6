package enginetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/coorflow/coorflow/checkpoint/savertest"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
)

// meter counts the bytes a run hands its saver.
type meter struct {
	graph.Saver
	bytes atomic.Int64
}

func (m *meter) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	n := len(cp.Meta) + len(cp.ID) + len(cp.ParentID) + len(cp.Thread)
	for _, b := range blobs {
		n += len(b.Data) + len(b.Version) + len(b.Base) + len(b.Channel)
	}
	m.bytes.Add(int64(n))
	return m.Saver.PutCheckpoint(ctx, cp, blobs)
}

func (m *meter) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	n := 0
	for _, r := range recs {
		n += len(r.Data) + len(r.Key) + len(r.Kind) + len(r.TaskID)
	}
	m.bytes.Add(int64(n))
	return m.Saver.PutTaskRecords(ctx, ref, recs)
}

var counter = graph.NewKey("counter", graph.Sum[int]())

// chain100 is a chain of 100 nodes that each add 1 to a counter.
func chain100(b *testing.B, opts ...graph.Option) *graph.Runnable {
	g := graph.New("chain", counter)
	prev := graph.Start
	for i := range 100 {
		name := fmt.Sprintf("n%03d", i)
		g.AddNode(name, func(ctx context.Context, s graph.State) (graph.Command, error) {
			return graph.Update(counter.Set(1)), nil
		})
		g.AddEdge(prev, name)
		prev = name
	}
	g.AddEdge(prev, graph.End)
	r, err := g.Compile(append(opts, graph.StepLimit(101))...)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkSaverChain100 measures what each saver adds per step of a
// 100-node chain, in sync and async durability, against no saver at all.
func BenchmarkSaverChain100(b *testing.B) {
	b.Run("none", func(b *testing.B) {
		r := chain100(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Invoke(b.Context(), graph.Input()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/step")
	})
	for _, bk := range backends(b) {
		for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
			name := bk.name + "/sync"
			if mode == graph.DurabilityAsync {
				name = bk.name + "/async"
			}
			b.Run(name, func(b *testing.B) {
				m := &meter{Saver: bk.open(b)}
				r := chain100(b, graph.WithSaver(m), graph.WithDurability(mode))
				b.ReportAllocs()
				cpu0, cpuOK := savertest.CPUTime()
				calls0, bytes0, ioOK := savertest.ProcessWrites()
				i := 0
				for b.Loop() {
					i++
					if _, err := r.Invoke(b.Context(), graph.Input(), graph.Thread(fmt.Sprintf("%s-%d", name, i))); err != nil {
						b.Fatal(err)
					}
				}
				steps := float64(b.N * 100)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/steps, "ns/step")
				// The process's CPU time per step, which unlike ns/step
				// does not grow when other processes share the cores.
				if cpu1, ok := savertest.CPUTime(); ok && cpuOK {
					b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/steps, "cpu-ns/step")
				}
				b.ReportMetric(float64(m.bytes.Load())/steps, "B-saved/step")
				// The write system calls and the bytes they passed, per
				// step: for SQLite, WAL frames (two calls each) and
				// checkpoints of the WAL; exact, where times are not.
				if calls1, bytes1, ok := savertest.ProcessWrites(); ok && ioOK {
					b.ReportMetric(float64(calls1-calls0)/steps, "writes/step")
					b.ReportMetric(float64(bytes1-bytes0)/steps, "written-B/step")
				}
			})
		}
	}
}

// BenchmarkStorage200Turns reports what a 200-turn conversation (one user
// message and one reply appended per turn) stores.
func BenchmarkStorage200Turns(b *testing.B) {
	msgs := graph.NewKey("messages", graph.Append[string]())
	g := graph.New("chat", msgs)
	g.AddNode("reply", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(msgs, fmt.Sprintf("This is reply number %d, of about sixty characters.", len(msgs.Get(s))))), nil
	})
	g.AddEdge(graph.Start, "reply")
	g.AddEdge("reply", graph.End)
	for b.Loop() {
		dir := b.TempDir()
		s, err := sqlite.Open(b.Context(), filepath.Join(dir, "chat.db"))
		if err != nil {
			b.Fatal(err)
		}
		m := &meter{Saver: s}
		r, err := g.Compile(graph.WithSaver(m))
		if err != nil {
			b.Fatal(err)
		}
		for i := range 200 {
			in := graph.Input(graph.AppendTo(msgs, fmt.Sprintf("User message %d, also of roughly sixty characters long.", i)))
			if _, err := r.Invoke(b.Context(), in, graph.Thread("chat")); err != nil {
				b.Fatal(err)
			}
		}
		_ = s.Close()
		var file int64
		for _, suffix := range []string{"", "-wal"} {
			if st, err := os.Stat(filepath.Join(dir, "chat.db"+suffix)); err == nil {
				file += st.Size()
			}
		}
		b.ReportMetric(float64(m.bytes.Load()), "B-saved")
		b.ReportMetric(float64(file), "B-sqlite-file")
	}
}

// BenchmarkStateRead reads the state of a thread that ran a loop of 10 or
// of 1,000 steps, each overwriting a text and a number: a state of the
// same size, so reading it should cost about the same whatever the
// thread's history (graph.BlobReader). (A channel whose reducer stores
// deltas, such as Append or Sum, holds its history in its value.)
func BenchmarkStateRead(b *testing.B) {
	text := graph.NewKey[string]("text")
	n := graph.NewKey[int]("n")
	for _, bk := range backends(b) {
		for _, steps := range []int{10, 1000} {
			b.Run(fmt.Sprintf("%s/%d-steps", bk.name, steps), func(b *testing.B) {
				g := graph.New("loop", text, n)
				g.AddNode("step", func(ctx context.Context, s graph.State) (graph.Command, error) {
					return graph.Update(text.Set(fmt.Sprintf("step %d of the loop wrote this", n.Get(s))), n.Set(n.Get(s)+1)), nil
				})
				g.AddEdge(graph.Start, "step")
				g.AddConditionalEdges("step", func(ctx context.Context, s graph.State) (string, error) {
					if n.Get(s) >= steps {
						return graph.End, nil
					}
					return "step", nil
				}, graph.Paths("step", graph.End))
				r, err := g.Compile(graph.WithSaver(bk.open(b)), graph.StepLimit(steps+1), graph.WithDurability(graph.DurabilityAsync))
				if err != nil {
					b.Fatal(err)
				}
				thread := fmt.Sprintf("read-%d-%s", steps, randomHex(4))
				if _, err := r.Invoke(b.Context(), graph.Input(), graph.Thread(thread)); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					snap, err := r.State(b.Context(), thread)
					if err != nil {
						b.Fatal(err)
					}
					if got := n.Get(snap.State); got != steps {
						b.Fatalf("n is %d, want %d", got, steps)
					}
				}
			})
		}
	}
}
