// Package runnertest is the semantics suite every runner of compiled
// graphs must pass: the engine in process (graph.Runnable) and the
// runners that drive it elsewhere (temporalrun on a Temporal server). It
// checks what a user of a graph relies on whatever runs it — supersteps
// and their isolation, reducer order, write conflicts, Send, joins, Goto,
// the step limit, pending writes of a failed step, parallel and subgraph
// interrupts, journaled calls and cancellation — and the tasks a node
// starts at run time (graph.Schedule): fan-out under a limit, a task's
// interrupt answered by path, retries, journaled calls inside a task,
// and cancellation, none of which runs a done task again.
package runnertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// Harness is what a runner gives the suite.
type Harness struct {
	// Saver is the saver the runner's threads live in; the suite passes
	// it with graph.WithSaver to every run.
	Saver graph.Saver
	// Runner returns the runner of r (compiled by the suite under a name
	// no other test uses).
	Runner func(t *testing.T, r *graph.Runnable) graph.Invoker
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, &env{t: t, h: h}) })
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	{"SuperstepIsolation", superstepIsolation},
	{"ReducerOrder", reducerOrder},
	{"WriteConflict", writeConflict},
	{"Send", send},
	{"Join", join},
	{"Goto", gotoNode},
	{"StepLimit", stepLimit},
	{"PendingWrites", pendingWrites},
	{"ParallelInterrupts", parallelInterrupts},
	{"SubgraphInterrupt", subgraphInterrupt},
	{"JournalOnce", journalOnce},
	{"Cancellation", cancellation},
	{"TaskFanOut", taskFanOut},
	{"TaskInterrupt", taskInterrupt},
	{"TaskRetries", taskRetries},
	{"TaskJournal", taskJournal},
	{"TaskCancellation", taskCancellation},
}

// env is one case's test, harness and names.
type env struct {
	t *testing.T
	h Harness
}

// name returns a name no other test uses, for graphs and threads (a
// Temporal server keeps workflow ids across tests).
func (e *env) name(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// compile compiles g and returns its runner and a thread to run on.
func (e *env) compile(g *graph.Graph) (graph.Invoker, []graph.Option) {
	e.t.Helper()
	r, err := g.Compile()
	require.NoError(e.t, err)
	return e.h.Runner(e.t, r), []graph.Option{graph.WithSaver(e.h.Saver), graph.Thread(e.name("thread"))}
}

func opts(base []graph.Option, more ...graph.Option) []graph.Option {
	return append(slices.Clip(base), more...)
}

var (
	logKey  = graph.NewKey("log", graph.Append[string]())
	seenKey = graph.NewKey("seen", graph.Append[string]())
	valKey  = graph.NewKey[string]("val")
	sumKey  = graph.NewKey("sum", graph.Sum[int]())
)

// logs is a node that appends its name to the log.
func logs(name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(logKey, name)), nil
	}
}

func superstepIsolation(t *testing.T, e *env) {
	g := graph.New(e.name("isolation"), logKey, seenKey, valKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(valKey.Set("from a")), nil
	})
	g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(valKey.Set("from b"), graph.AppendTo(seenKey, "b saw "+valKey.Get(s))), nil
	})
	g.AddNode("c", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(seenKey, "c saw "+valKey.Get(s))), nil
	})
	g.AddNode("d", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(seenKey, "d saw "+valKey.Get(s))), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("a", "c")
	g.AddEdge("b", "d")
	g.AddEdge("c", graph.End)
	g.AddEdge("d", graph.End)
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(), o...)
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"b saw from a", "c saw from a", "d saw from b"}, seenKey.Get(res.State),
		"tasks of a step see the state as of its start; the next step sees their writes")
}

func reducerOrder(t *testing.T, e *env) {
	release := make(chan struct{})
	g := graph.New(e.name("order"), logKey, sumKey)
	g.AddNode("fan", logs("fan"))
	g.AddNode("z", func(ctx context.Context, s graph.State) (graph.Command, error) {
		close(release) // z finishes first, yet its write comes last
		return graph.Update(graph.AppendTo(logKey, "z"), sumKey.Set(1)), nil
	})
	g.AddNode("m", func(ctx context.Context, s graph.State) (graph.Command, error) {
		<-release
		return graph.Update(graph.AppendTo(logKey, "m"), sumKey.Set(2)), nil
	})
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		<-release
		return graph.Update(graph.AppendTo(logKey, "a"), sumKey.Set(4)), nil
	})
	g.AddEdge(graph.Start, "fan")
	for _, n := range []string{"z", "m", "a"} {
		g.AddEdge("fan", n)
		g.AddEdge(n, graph.End)
	}
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(graph.AppendTo(logKey, "input")), o...)
	require.NoError(t, err)
	assert.Equal(t, []string{"input", "fan", "a", "m", "z"}, logKey.Get(res.State), "writes apply in task order (by node name), not finishing order")
	assert.Equal(t, 7, sumKey.Get(res.State))
}

func writeConflict(t *testing.T, e *env) {
	g := graph.New(e.name("conflict"), valKey)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
	for _, n := range []string{"x", "y"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
			return graph.Update(valKey.Set(n)), nil
		})
		g.AddEdge("fan", n)
		g.AddEdge(n, graph.End)
	}
	g.AddEdge(graph.Start, "fan")
	run, o := e.compile(g)
	_, err := run.Invoke(t.Context(), graph.Input(valKey.Set("start")), o...)
	require.ErrorIs(t, err, graph.ErrConflictingWrites)
	var wc *graph.WriteConflictError
	require.ErrorAs(t, err, &wc)
	assert.Equal(t, "val", wc.Channel)
	assert.Equal(t, []string{"x", "y"}, wc.Writers)
	assert.Equal(t, 1, wc.Step)
}

func send(t *testing.T, e *env) {
	g := graph.New(e.name("send"), logKey, valKey)
	g.AddNode("split", func(ctx context.Context, s graph.State) (graph.Command, error) {
		var ps []graph.Packet
		for _, w := range []string{"one", "two", "three"} {
			ps = append(ps, graph.To("work", valKey.Set(w)))
		}
		return graph.Send(ps...), nil
	}, graph.Destinations("work"))
	g.AddNode("work", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(logKey, "did "+valKey.Get(s))), nil
	})
	g.AddNode("done", logs("done"))
	g.AddEdge(graph.Start, "split")
	g.AddEdge("work", "done")
	g.AddEdge("done", graph.End)
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(valKey.Set("")), o...)
	require.NoError(t, err)
	assert.Equal(t, []string{"did one", "did two", "did three", "done"}, logKey.Get(res.State),
		"each packet is a task with its own writes; results in send order; the next node runs once")
	assert.Empty(t, valKey.Get(res.State), "a packet's writes stay private to its task")
}

func join(t *testing.T, e *env) {
	g := graph.New(e.name("join"), logKey)
	g.AddNode("a", logs("a"))
	g.AddNode("b", logs("b"))
	g.AddNode("b2", logs("b2"))
	g.AddNode("j", logs("j"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge("b", "b2")
	g.AddJoin([]string{"a", "b2"}, "j")
	g.AddEdge("j", graph.End)
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(), o...)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "b2", "j"}, logKey.Get(res.State), "the join waits for both sources, then runs once")
}

func gotoNode(t *testing.T, e *env) {
	g := graph.New(e.name("goto"), logKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Goto("c", graph.AppendTo(logKey, "a")), nil
	}, graph.Destinations("b", "c"))
	g.AddNode("b", logs("b"))
	g.AddNode("c", logs("c"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.End)
	g.AddEdge("c", graph.End)
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(), o...)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c"}, logKey.Get(res.State), "Goto replaces the node's edges")
}

func stepLimit(t *testing.T, e *env) {
	g := graph.New(e.name("loop"), sumKey)
	g.AddNode("tick", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(sumKey.Set(1)), nil
	})
	g.AddEdge(graph.Start, "tick")
	g.AddConditionalEdges("tick", func(ctx context.Context, s graph.State) (string, error) {
		if sumKey.Get(s) > 1000 {
			return graph.End, nil
		}
		return "tick", nil
	}, graph.Paths("tick", graph.End))
	run, o := e.compile(g)
	_, err := run.Invoke(t.Context(), graph.Input(), opts(o, graph.StepLimit(3))...)
	require.ErrorIs(t, err, graph.ErrStepLimit)
	var sl *graph.StepLimitError
	require.ErrorAs(t, err, &sl)
	assert.Equal(t, 3, sl.Limit)
	assert.Equal(t, []string{"tick"}, sl.LastNodes)
}

func pendingWrites(t *testing.T, e *env) {
	var okRuns, flakyRuns atomic.Int32
	g := graph.New(e.name("pending"), logKey)
	g.AddNode("fan", logs("fan"))
	g.AddNode("ok", func(ctx context.Context, s graph.State) (graph.Command, error) {
		okRuns.Add(1)
		return graph.Update(graph.AppendTo(logKey, "ok")), nil
	})
	g.AddNode("flaky", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if flakyRuns.Add(1) == 1 {
			return graph.Command{}, graph.Permanent(errors.New("disk full"))
		}
		return graph.Update(graph.AppendTo(logKey, "flaky")), nil
	})
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("fan", "ok")
	g.AddEdge("fan", "flaky")
	g.AddEdge("ok", graph.End)
	g.AddEdge("flaky", graph.End)
	run, o := e.compile(g)
	_, err := run.Invoke(t.Context(), graph.Input(), o...)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "flaky", ne.Node)
	assert.Equal(t, 1, ne.Step)
	assert.Contains(t, ne.Error(), "disk full")

	res, err := run.Invoke(t.Context(), nil, o...)
	require.NoError(t, err)
	assert.Equal(t, []string{"fan", "flaky", "ok"}, logKey.Get(res.State))
	assert.Equal(t, int32(1), okRuns.Load(), "the finished task's writes were kept, so it did not run again")
	assert.Equal(t, int32(2), flakyRuns.Load())
}

func parallelInterrupts(t *testing.T, e *env) {
	g := graph.New(e.name("parallel"), logKey)
	g.AddNode("fan", logs("fan"))
	for _, n := range []string{"p", "q"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
			v, err := graph.InterruptAs[string](ctx, "question from "+n)
			if err != nil {
				return graph.Command{}, err
			}
			return graph.Update(graph.AppendTo(logKey, n+"="+v)), nil
		})
		g.AddEdge("fan", n)
		g.AddEdge(n, graph.End)
	}
	g.AddEdge(graph.Start, "fan")
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(), o...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	payloads := []string{}
	for _, in := range res.Interrupts {
		p, err := graph.InterruptPayload[string](in)
		require.NoError(t, err)
		payloads = append(payloads, p)
	}
	assert.Equal(t, []string{"question from p", "question from q"}, payloads)

	_, err = run.Invoke(t.Context(), nil, opts(o, graph.Resume("one answer"))...)
	require.ErrorIs(t, err, graph.ErrAmbiguousResume, "one answer for two questions is refused")

	// Answer one; the other stays pending.
	first := res.Interrupts[0]
	res, err = run.Invoke(t.Context(), nil, opts(o, graph.ResumeEach(map[string]any{first.ID: "yes"}))...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "q", res.Interrupts[0].Node)

	res, err = run.Invoke(t.Context(), nil, opts(o, graph.ResumeAt("q", "no"))...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"fan", "p=yes", "q=no"}, logKey.Get(res.State))
}

func subgraphInterrupt(t *testing.T, e *env) {
	inner := graph.New(e.name("inner"), logKey)
	inner.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		v, err := graph.InterruptAs[string](ctx, "inner question")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, "inner got "+v)), nil
	})
	inner.AddEdge(graph.Start, "ask")
	inner.AddEdge("ask", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)

	g := graph.New(e.name("outer"), logKey)
	g.AddNode("before", logs("before"))
	g.AddSubgraph("sub", sub)
	g.AddNode("after", logs("after"))
	g.AddEdge(graph.Start, "before")
	g.AddEdge("before", "sub")
	g.AddEdge("sub", "after")
	g.AddEdge("after", graph.End)
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(), o...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "ask", res.Interrupts[0].Node)

	res, err = run.Invoke(t.Context(), nil, opts(o, graph.Resume("42"))...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"before", "inner got 42", "after"}, logKey.Get(res.State))
}

func journalOnce(t *testing.T, e *env) {
	var calls, runs atomic.Int32
	g := graph.New(e.name("journal"), logKey)
	g.AddNode("agent", func(ctx context.Context, s graph.State) (graph.Command, error) {
		runs.Add(1)
		reply, err := graph.Do(ctx, "model", func(ctx context.Context) (string, error) {
			return fmt.Sprintf("reply %d", calls.Add(1)), nil
		})
		if err != nil {
			return graph.Command{}, err
		}
		ok, err := graph.InterruptAs[bool](ctx, "send "+reply+"?")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, fmt.Sprintf("%s sent=%v", reply, ok))), nil
	})
	g.AddEdge(graph.Start, "agent")
	g.AddEdge("agent", graph.End)
	run, o := e.compile(g)
	res, err := run.Invoke(t.Context(), graph.Input(), o...)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	res, err = run.Invoke(t.Context(), nil, opts(o, graph.Resume(true))...)
	require.NoError(t, err)
	assert.Equal(t, []string{"reply 1 sent=true"}, logKey.Get(res.State))
	assert.Equal(t, int32(2), runs.Load(), "the node ran again on resume")
	assert.Equal(t, int32(1), calls.Load(), "the journaled call was made once")
}

func cancellation(t *testing.T, e *env) {
	started := make(chan struct{}, 1)
	var blocked atomic.Bool
	blocked.Store(true)
	g := graph.New(e.name("cancel"), logKey)
	g.AddNode("first", logs("first"))
	g.AddNode("slow", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if blocked.Load() {
			started <- struct{}{}
			<-ctx.Done()
			return graph.Command{}, ctx.Err()
		}
		return graph.Update(graph.AppendTo(logKey, "slow")), nil
	})
	g.AddEdge(graph.Start, "first")
	g.AddEdge("first", "slow")
	g.AddEdge("slow", graph.End)
	run, o := e.compile(g)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		select {
		case <-started:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err := run.Invoke(ctx, graph.Input(), o...)
	require.ErrorIs(t, err, context.Canceled)

	blocked.Store(false)
	res, err := run.Invoke(t.Context(), nil, o...)
	require.NoError(t, err, "the thread continues from its last checkpoint")
	assert.Equal(t, []string{"first", "slow"}, logKey.Get(res.State))
}
