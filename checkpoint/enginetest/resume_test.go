package enginetest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

var (
	notes   = graph.NewKey("notes", graph.Append[string]())
	verdict = graph.NewKey[string]("verdict")
)

type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) inc(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *counts) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// reviewGraph: research fans out to three workers, a reviewer asks a human,
// then a writer finishes.
func reviewGraph(t *testing.T, c *counts, s graph.Saver) *graph.Runnable {
	t.Helper()
	g := graph.New("review", notes, verdict)
	g.AddNode("plan", func(ctx context.Context, st graph.State) (graph.Command, error) {
		c.inc("plan")
		return graph.Update(graph.AppendTo(notes, "plan")), nil
	})
	for _, w := range []string{"w1", "w2", "w3"} {
		g.AddNode(w, func(ctx context.Context, st graph.State) (graph.Command, error) {
			c.inc(w)
			return graph.Update(graph.AppendTo(notes, w)), nil
		})
		g.AddEdge("plan", w)
		g.AddEdge(w, "review")
	}
	g.AddNode("review", func(ctx context.Context, st graph.State) (graph.Command, error) {
		c.inc("review")
		v, err := graph.InterruptAs[string](ctx, fmt.Sprintf("%d notes; approve?", len(notes.Get(st))))
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(verdict.Set(v)), nil
	})
	g.AddNode("write", func(ctx context.Context, st graph.State) (graph.Command, error) {
		c.inc("write")
		return graph.Update(graph.AppendTo(notes, "written:"+verdict.Get(st))), nil
	})
	g.AddEdge(graph.Start, "plan")
	g.AddEdge("review", "write")
	g.AddEdge("write", graph.End)
	r, err := g.Compile(graph.WithSaver(s))
	require.NoError(t, err)
	return r
}

func TestResumeThroughANewCompiledGraphOverTheSameStore(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			var c counts
			first := reviewGraph(t, &c, b.open(t))
			res, err := first.Invoke(t.Context(), graph.Input(), graph.Thread("thread-1"))
			require.NoError(t, err)
			require.Equal(t, graph.StatusInterrupted, res.Status)
			require.Len(t, res.Interrupts, 1)
			assert.Equal(t, "4 notes; approve?", res.Interrupts[0].Payload)

			second := reviewGraph(t, &c, b.open(t)) // a new process: new saver, new graph
			snap, err := second.State(t.Context(), "thread-1")
			require.NoError(t, err)
			require.Len(t, snap.Interrupts, 1)
			assert.Equal(t, res.Interrupts[0].ID, snap.Interrupts[0].ID)

			res, err = second.Invoke(t.Context(), nil, graph.Thread("thread-1"), graph.Resume("approved"))
			require.NoError(t, err)
			assert.Equal(t, graph.StatusDone, res.Status)
			assert.Equal(t, []string{"plan", "w1", "w2", "w3", "written:approved"}, notes.Get(res.State))
			for _, n := range []string{"plan", "w1", "w2", "w3", "write"} {
				assert.Equal(t, 1, c.get(n), n)
			}
			assert.Equal(t, 2, c.get("review"), "the interrupted node ran again, with the answer")

			hist, err := second.History(t.Context(), "thread-1")
			require.NoError(t, err)
			assert.Len(t, hist, 5, "input, plan, workers, review, write")
		})
	}
}

func TestAFailedTaskIsTheOnlyOneToRunAgain(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			var c counts
			fail := true
			g := graph.New("partial", notes)
			for _, w := range []string{"a", "b", "c"} {
				g.AddNode(w, func(ctx context.Context, st graph.State) (graph.Command, error) {
					c.inc(w)
					if w == "b" && fail {
						return graph.Command{}, fmt.Errorf("b is down")
					}
					return graph.Update(graph.AppendTo(notes, w)), nil
				})
				g.AddEdge(graph.Start, w)
				g.AddEdge(w, graph.End)
			}
			r, err := g.Compile(graph.WithSaver(b.open(t)), graph.MaxConcurrency(1))
			require.NoError(t, err)
			_, err = r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
			require.EqualError(t, err, `graph: node "b" (step 0, attempt 1): b is down`)
			fail = false
			r2, err := g.Compile(graph.WithSaver(b.open(t)))
			require.NoError(t, err)
			res, err := r2.Invoke(t.Context(), nil, graph.Thread("t"))
			require.NoError(t, err)
			assert.Equal(t, []string{"a", "b", "c"}, notes.Get(res.State))
			assert.Equal(t, 1, c.get("a"))
			assert.Equal(t, 2, c.get("b"))
			assert.Equal(t, 1, c.get("c"))
		})
	}
}
