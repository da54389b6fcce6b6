package graph_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// collect drains a stream, failing the test on an error.
func collect(t *testing.T, r *graph.Runnable, input []graph.Write, opts ...graph.Option) []graph.Event {
	t.Helper()
	var evs []graph.Event
	for ev, err := range r.Stream(t.Context(), input, opts...) {
		require.NoError(t, err)
		evs = append(evs, ev)
	}
	return evs
}

func describe(evs []graph.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name() + " " + ev.Path
	}
	return out
}

func TestStreamYieldsEveryKindInOrderWithPaths(t *testing.T) {
	g := graph.New("seq", logKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, "hello from a")
		return graph.Update(graph.AppendTo(logKey, "a")), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	evs := collect(t, r, nil)
	assert.Equal(t, []string{
		"run_start seq",
		"step_start seq",
		"node_start seq/a",
		"custom seq/a",
		"node_end seq/a",
		"update seq/a",
		"values seq",
		"step_end seq",
		"run_end seq",
	}, describe(evs))
	assert.Equal(t, "hello from a", evs[3].Data)
	assert.Equal(t, []string{"a"}, evs[1].Data)
	require.Len(t, evs[5].Writes, 1)
	assert.Equal(t, "log", evs[5].Writes[0].Channel())
	assert.Equal(t, []string{"a"}, logKey.Get(evs[6].State))
	assert.Equal(t, []string{"a"}, logKey.Get(evs[8].State))
	for _, ev := range evs {
		assert.False(t, ev.Time.IsZero(), "every event is timestamped")
	}
}

func TestStreamFiltersByKind(t *testing.T) {
	r := chain(t, 3)
	evs := collect(t, r, nil, graph.Events(graph.EventNodeEnd))
	assert.Equal(t, []string{"node_end chain/n000", "node_end chain/n001", "node_end chain/n002"}, describe(evs))
}

func TestStreamYieldsTheErrorLast(t *testing.T) {
	g := graph.New("fails")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Command{}, errFlaky
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	var last graph.Event
	var lastErr error
	for ev, err := range r.Stream(t.Context(), nil) {
		last, lastErr = ev, err
	}
	require.ErrorIs(t, lastErr, errFlaky)
	assert.Equal(t, graph.EventError, last.Kind)
	assert.Equal(t, lastErr, last.Err)
}

func TestSubgraphSharesChannelsAndNestsEventPaths(t *testing.T) {
	inner := graph.New("inner", logKey, textKey)
	inner.AddNode("x", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, "from x")
		return graph.Update(graph.AppendTo(logKey, "x"), textKey.Set("draft")), nil
	})
	inner.AddNode("y", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(logKey, "y:"+textKey.Get(s)), textKey.Set("final")), nil
	})
	inner.AddEdge(graph.Start, "x")
	inner.AddEdge("x", "y")
	inner.AddEdge("y", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)

	outer := graph.New("outer", logKey, textKey)
	outer.AddNode("before", logger(&counter{}, "before"))
	outer.AddSubgraph("sub", sub)
	outer.AddEdge(graph.Start, "before")
	outer.AddEdge("before", "sub")
	outer.AddEdge("sub", graph.End)
	r, err := outer.Compile()
	require.NoError(t, err)

	var paths []string
	var last graph.Event
	for ev, err := range r.Stream(t.Context(), graph.Input(graph.AppendTo(logKey, "in"))) {
		require.NoError(t, err)
		if ev.Kind == graph.EventNodeStart || ev.Kind == graph.EventCustom {
			paths = append(paths, ev.Kind.String()+" "+ev.Path)
		}
		last = ev
	}
	assert.Equal(t, []string{
		"node_start outer/before",
		"node_start outer/sub",
		"node_start outer/sub/x",
		"custom outer/sub/x",
		"node_start outer/sub/y",
	}, paths)
	require.Equal(t, graph.EventRunEnd, last.Kind)
	assert.Equal(t, []string{"in", "before", "x", "y:draft"}, logKey.Get(last.State),
		"the subgraph saw the parent's log and each of its appends reached the parent once")
	assert.Equal(t, "final", textKey.Get(last.State), "a last-value channel gets the subgraph's last write")
}

func TestSubgraphWithAMismatchedChannelFailsToCompile(t *testing.T) {
	other := graph.NewKey[int]("text") // same name as textKey, another type
	inner := graph.New("inner", other)
	inner.AddNode("x", noop)
	inner.AddEdge(graph.Start, "x")
	inner.AddEdge("x", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)
	outer := graph.New("outer", textKey)
	outer.AddSubgraph("sub", sub)
	outer.AddEdge(graph.Start, "sub")
	outer.AddEdge("sub", graph.End)
	_, err = outer.Compile()
	assert.EqualError(t, err, `graph "outer": subgraph node "sub": channel "text" is string (last) here but int (last) in subgraph "inner"`)
}

func TestBreakingOutOfAStreamCancelsTheRunAndLeaksNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	started := make(chan struct{}, 4)
	g := graph.New("early", countKey)
	for i := range 4 {
		name := fmt.Sprintf("slow%d", i)
		g.AddNode(name, func(ctx context.Context, s graph.State) (graph.Command, error) {
			started <- struct{}{}
			for {
				graph.Emit(ctx, "tick") // keeps the stream busy until cancelled
				if ctx.Err() != nil {
					return graph.Command{}, ctx.Err()
				}
			}
		})
		g.AddEdge(graph.Start, name)
		g.AddEdge(name, graph.End)
	}
	r, err := g.Compile()
	require.NoError(t, err)

	customs := 0
	for ev, err := range r.Stream(t.Context(), nil) {
		require.NoError(t, err)
		if ev.Kind == graph.EventCustom {
			customs++
			if customs == 10 {
				break
			}
		}
	}
	assert.Equal(t, 10, customs)
	assert.NotEmpty(t, started)
}

func TestAPanicInTheStreamConsumerEndsTheRunningTasksFirst(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const n = 24 // more tasks than the run buffers ends of tasks for
	item := graph.NewKey[int]("item")
	var returned atomic.Int64
	g := graph.New("fan", item)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		ps := make([]graph.Packet, n)
		for i := range ps {
			ps[i] = graph.To("wait", item.Set(i))
		}
		return graph.Send(ps...), nil
	}, graph.Destinations("wait"))
	g.AddNode("wait", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, "waiting")
		<-ctx.Done() // until the run is cancelled
		returned.Add(1)
		return graph.Command{}, ctx.Err()
	})
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("wait", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	starts := 0
	assert.PanicsWithValue(t, "consumer failed", func() {
		for ev, err := range r.Stream(t.Context(), nil) {
			require.NoError(t, err)
			if ev.Kind == graph.EventNodeStart && ev.Node == "wait" {
				starts++
				if starts == n {
					panic("consumer failed")
				}
			}
		}
	})
	// The last start event came before its task was handed over: the
	// others were running, and had returned before the panic left Stream.
	assert.Equal(t, int64(n-1), returned.Load())
}

func TestEmitOutsideARunDoesNothing(t *testing.T) {
	graph.Emit(t.Context(), "nobody listens")
	_, ok := graph.TaskOf(t.Context())
	assert.False(t, ok)
	assert.Empty(t, graph.PathOf(t.Context()))
}

func TestScopesExtendThePathOfEvents(t *testing.T) {
	var info graph.TaskInfo
	g := graph.New("scoped")
	g.AddNode("team", func(ctx context.Context, s graph.State) (graph.Command, error) {
		info, _ = graph.TaskOf(ctx)
		agent := graph.WithScope(ctx, "agent:writer")
		graph.Emit(agent, chunk("Hel"))
		graph.Emit(graph.WithScope(agent, "tool:search"), "querying")
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	evs := collect(t, r, nil, graph.Events(graph.EventCustom))
	assert.Equal(t, []string{"chunk scoped/team/agent:writer", "custom scoped/team/agent:writer/tool:search"}, describe(evs))
	assert.Equal(t, "team", evs[0].Node)
	assert.Equal(t, graph.TaskInfo{Graph: "scoped", Node: "team", Path: "scoped/team", Step: 0}, info)
	_, err = r.Invoke(t.Context(), nil, graph.Thread("th"))
	require.NoError(t, err)
	assert.Equal(t, "th", info.Thread)
}

func TestRuntimeValuesReachNodesAndSubgraphsButNeverState(t *testing.T) {
	var fromInner, fromOuter string
	inner := graph.New("inner", textKey)
	inner.AddNode("x", func(ctx context.Context, s graph.State) (graph.Command, error) {
		fromInner = graph.RuntimeString(ctx, "api_key")
		return graph.Command{}, nil
	})
	inner.AddEdge(graph.Start, "x")
	inner.AddEdge("x", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)
	outer := graph.New("outer", textKey)
	outer.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		fromOuter = graph.RuntimeString(ctx, "api_key")
		return graph.Command{}, nil
	})
	outer.AddSubgraph("sub", sub)
	outer.AddEdge(graph.Start, "a")
	outer.AddEdge("a", "sub")
	outer.AddEdge("sub", graph.End)
	r, err := outer.Compile(graph.WithRuntime(map[string]any{"api_key": "default"}))
	require.NoError(t, err)

	res, err := r.Invoke(t.Context(), graph.Input(textKey.Set("hi")), graph.WithRuntime(map[string]any{"api_key": "sk-secret"}))
	require.NoError(t, err)
	assert.Equal(t, "sk-secret", fromOuter)
	assert.Equal(t, "sk-secret", fromInner)
	assert.NotContains(t, fmt.Sprint(res.State.Values()), "sk-secret")
	_, ok := graph.RuntimeValue(t.Context(), "api_key")
	assert.False(t, ok)
}

func TestWantsFollowsTheStreamFilter(t *testing.T) {
	var got []bool
	g := graph.New("wants")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		got = append(got, graph.Wants(ctx, chunkEvent))
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	collect(t, r, nil)
	collect(t, r, nil, graph.Events(graph.EventNodeEnd))
	assert.Equal(t, []bool{false, true, false}, got)
	assert.False(t, graph.Wants(t.Context(), chunkEvent))
}

func TestBreakingOutAtANodesStartDoesNotCallItAndResumingRunsIt(t *testing.T) {
	for _, wide := range []bool{false, true} {
		t.Run(fmt.Sprintf("wide=%v", wide), func(t *testing.T) {
			var calls sync.Map // node name -> *atomic.Int32
			node := func(name string) graph.NodeFunc {
				return func(ctx context.Context, s graph.State) (graph.Command, error) {
					n, _ := calls.LoadOrStore(name, new(atomic.Int32))
					n.(*atomic.Int32).Add(1)
					return graph.Update(graph.AppendTo(logKey, name)), nil
				}
			}
			count := func(name string) int32 {
				n, ok := calls.Load(name)
				if !ok {
					return 0
				}
				return n.(*atomic.Int32).Load()
			}
			g := graph.New("brk", logKey)
			g.AddNode("a", node("a"))
			g.AddNode("b", node("b"))
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", "b")
			g.AddEdge("b", graph.End)
			if wide {
				g.AddNode("c", node("c"))
				g.AddEdge("a", "c")
				g.AddEdge("c", graph.End)
			}
			r, err := g.Compile()
			require.NoError(t, err)
			saver := memory.New()

			for ev, err := range r.Stream(t.Context(), graph.Input(), graph.WithSaver(saver), graph.Thread("t")) {
				require.NoError(t, err)
				if ev.Kind == graph.EventNodeStart && ev.Step == 1 {
					break // at the first node of the step after a's
				}
			}
			assert.EqualValues(t, 1, count("a"))
			assert.EqualValues(t, 0, count("b"), "a node whose start the consumer broke at is not called")
			assert.EqualValues(t, 0, count("c"), "nor is its sibling")

			res, err := r.Invoke(t.Context(), nil, graph.WithSaver(saver), graph.Thread("t"))
			require.NoError(t, err)
			assert.Equal(t, graph.StatusDone, res.Status)
			assert.EqualValues(t, 1, count("a"), "a's step was checkpointed before the break")
			assert.EqualValues(t, 1, count("b"), "resuming runs b once")
			want := []string{"a", "b"}
			if wide {
				assert.EqualValues(t, 1, count("c"))
				want = []string{"a", "b", "c"}
			}
			assert.ElementsMatch(t, want, logKey.Get(res.State))
		})
	}
}

func TestBreakingOutAtASubgraphNodesStartDoesNotCallIt(t *testing.T) {
	var x atomic.Int32
	inner := graph.New("inner", logKey)
	inner.AddNode("x", func(ctx context.Context, s graph.State) (graph.Command, error) {
		x.Add(1)
		return graph.Update(graph.AppendTo(logKey, "x")), nil
	})
	inner.AddEdge(graph.Start, "x")
	inner.AddEdge("x", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)
	g := graph.New("outer", logKey)
	g.AddSubgraph("sub", sub)
	g.AddEdge(graph.Start, "sub")
	g.AddEdge("sub", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	saver := memory.New()

	for ev, err := range r.Stream(t.Context(), graph.Input(), graph.WithSaver(saver), graph.Thread("t")) {
		require.NoError(t, err)
		if ev.Kind == graph.EventNodeStart && ev.Node == "x" {
			break // at the start of the subgraph's node
		}
	}
	assert.EqualValues(t, 0, x.Load(), "a subgraph's node whose start the consumer broke at is not called")

	res, err := r.Invoke(t.Context(), nil, graph.WithSaver(saver), graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.EqualValues(t, 1, x.Load(), "resuming runs it once")
	assert.Equal(t, []string{"x"}, logKey.Get(res.State))
}

func TestBreakingOutAtALaterSiblingsStartKeepsTheFinishedOnes(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) { breakAtALaterSiblingsStart(t, mode) })
	}
}

func breakAtALaterSiblingsStart(t *testing.T, mode graph.Durability) {
	var calls [3]atomic.Int32
	names := []string{"b", "c", "d"}
	g := graph.New("brk", logKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
	g.AddEdge(graph.Start, "a")
	for i, name := range names {
		g.AddNode(name, func(ctx context.Context, s graph.State) (graph.Command, error) {
			calls[i].Add(1)
			return graph.Update(graph.AppendTo(logKey, name)), nil
		})
		g.AddEdge("a", name)
		g.AddEdge(name, graph.End)
	}
	r, err := g.Compile()
	require.NoError(t, err)
	saver := memory.New()
	opts := []graph.Option{graph.WithSaver(saver), graph.Thread("t"), graph.MaxConcurrency(1), graph.WithDurability(mode)}

	for ev, err := range r.Stream(t.Context(), graph.Input(), opts...) {
		require.NoError(t, err)
		if ev.Kind == graph.EventNodeStart && ev.Node == "c" {
			break // b has ended: one task runs at a time
		}
	}
	assert.EqualValues(t, []int32{1, 0, 0}, []int32{calls[0].Load(), calls[1].Load(), calls[2].Load()})

	res, err := r.Invoke(t.Context(), nil, opts...)
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.EqualValues(t, []int32{1, 1, 1}, []int32{calls[0].Load(), calls[1].Load(), calls[2].Load()}, "b's result was kept; each runs once")
	assert.Equal(t, names, logKey.Get(res.State))
}

func TestBreakingOutAtANestedSubgraphNodesStartDoesNotCallIt(t *testing.T) {
	var x atomic.Int32
	leaf := graph.New("leaf", logKey)
	leaf.AddNode("x", func(ctx context.Context, s graph.State) (graph.Command, error) {
		x.Add(1)
		return graph.Update(graph.AppendTo(logKey, "x")), nil
	})
	leaf.AddEdge(graph.Start, "x")
	leaf.AddEdge("x", graph.End)
	r, err := leaf.Compile()
	require.NoError(t, err)
	for _, name := range []string{"mid", "outer"} { // leaf in mid in outer
		wrap := graph.New(name, logKey)
		wrap.AddSubgraph("sub", r)
		wrap.AddEdge(graph.Start, "sub")
		wrap.AddEdge("sub", graph.End)
		r, err = wrap.Compile()
		require.NoError(t, err)
	}
	saver := memory.New()

	for ev, err := range r.Stream(t.Context(), graph.Input(), graph.WithSaver(saver), graph.Thread("t")) {
		require.NoError(t, err)
		if ev.Kind == graph.EventNodeStart && ev.Node == "x" {
			require.Equal(t, "outer/sub/sub/x", ev.Path)
			break // at the start of a node two subgraphs down
		}
	}
	assert.EqualValues(t, 0, x.Load(), "the start reached the consumer through both parents' loops before the node was called")

	res, err := r.Invoke(t.Context(), nil, graph.WithSaver(saver), graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.EqualValues(t, 1, x.Load(), "resuming runs it once")
	assert.Equal(t, []string{"x"}, logKey.Get(res.State))
}
