package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

var (
	logKey   = graph.NewKey("log", graph.Append[string]())
	countKey = graph.NewKey("count", graph.Sum[int]())
	itemKey  = graph.NewKey[int]("item")
	outKey   = graph.NewKey("out", graph.Append[int]())
	textKey  = graph.NewKey[string]("text")
)

// counter counts runs per node.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[name]++
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// logger returns a node that appends its name to the log and counts runs.
func logger(c *counter, name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		c.inc(name)
		return graph.Update(graph.AppendTo(logKey, name)), nil
	}
}

func TestFanOutFanInJoinRunsOnceAndSeesEveryBranch(t *testing.T) {
	var c counter
	var seen []string
	g := graph.New("fan", logKey)
	g.AddNode("a", logger(&c, "a"))
	g.AddNode("b", logger(&c, "b"))
	g.AddNode("c", logger(&c, "c"))
	g.AddNode("d", func(ctx context.Context, s graph.State) (graph.Command, error) {
		c.inc("d")
		seen = logKey.Get(s)
		return graph.Update(graph.AppendTo(logKey, "d")), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("a", "c")
	g.AddEdge("b", "d")
	g.AddEdge("c", "d")
	g.AddEdge("d", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, 1, c.get("d"), "the join node runs once")
	assert.Equal(t, []string{"a", "b", "c"}, seen, "d sees both branches' writes, in node order")
	assert.Equal(t, []string{"a", "b", "c", "d"}, logKey.Get(res.State))
	assert.Equal(t, graph.StatusDone, res.Status)
}

// unequal builds Start -> a, Start -> b1 -> b2 -> b3, and joins a and b3
// into j with connect.
func unequal(t *testing.T, c *counter, seen *[]string, connect func(g *graph.Graph), opts ...graph.NodeOption) *graph.Runnable {
	t.Helper()
	g := graph.New("unequal", logKey)
	for _, n := range []string{"a", "b1", "b2", "b3"} {
		g.AddNode(n, logger(c, n))
	}
	g.AddNode("j", func(ctx context.Context, s graph.State) (graph.Command, error) {
		c.inc("j")
		*seen = logKey.Get(s)
		return graph.Command{}, nil
	}, opts...)
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b1")
	g.AddEdge("b1", "b2")
	g.AddEdge("b2", "b3")
	g.AddEdge("j", graph.End)
	connect(g)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func TestUnequalBranchesJoinedWithBarrier(t *testing.T) {
	var c counter
	var seen []string
	r := unequal(t, &c, &seen, func(g *graph.Graph) { g.AddJoin([]string{"a", "b3"}, "j") })
	_, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, 1, c.get("j"), "the barrier releases j once")
	assert.Equal(t, []string{"a", "b1", "b2", "b3"}, seen, "j runs after the longer branch and sees all writes")
}

func TestUnequalBranchesWithPlainEdgesRunTheTargetTwice(t *testing.T) {
	// The contrast that makes joins necessary: plain edges trigger j each
	// time a source finishes.
	var c counter
	var seen []string
	r := unequal(t, &c, &seen, func(g *graph.Graph) {
		g.AddEdge("a", "j")
		g.AddEdge("b3", "j")
	})
	_, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, 2, c.get("j"))
}

func TestDeferredNodeRunsOnceWhenNothingElseIsScheduled(t *testing.T) {
	var c counter
	var seen []string
	r := unequal(t, &c, &seen, func(g *graph.Graph) {
		g.AddEdge("a", "j")
		g.AddEdge("b3", "j")
	}, graph.Deferred())
	_, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, 1, c.get("j"))
	assert.Equal(t, []string{"a", "b1", "b2", "b3"}, seen)
}

func TestConditionalRoutingLoopsUntilTheRouterSaysDone(t *testing.T) {
	g := graph.New("loop", countKey)
	g.AddNode("inc", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(countKey.Set(1)), nil
	})
	g.AddNode("done", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(countKey.Set(100)), nil
	})
	g.AddEdge(graph.Start, "inc")
	g.AddConditionalEdges("inc", func(ctx context.Context, s graph.State) (string, error) {
		if countKey.Get(s) < 5 {
			return "again", nil
		}
		return "stop", nil
	}, graph.Branches{"again": "inc", "stop": "done"})
	g.AddEdge("done", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, 105, countKey.Get(res.State), "inc ran 5 times, then done once")
}

func TestRouterReturningAnUndeclaredLabelNamesTheLabelAndTheDeclaredOnes(t *testing.T) {
	g := graph.New("bad-router")
	g.AddNode("a", noop)
	g.AddNode("b", noop)
	g.AddConditionalEdges("a", func(ctx context.Context, s graph.State) (string, error) {
		return "b", nil // a node's name, but not a label of this edge
	}, graph.Branches{"again": "a", "done": graph.End})
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge("b", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	require.ErrorIs(t, err, graph.ErrUnknownBranch)
	assert.NotErrorIs(t, err, graph.ErrUnknownNode, "a label is not a node")
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "a", ne.Node)
	assert.EqualError(t, err, `graph: node "a" (step 0, attempt 1): graph: unknown branch: the router of the conditional edge from "a" returned "b", which is not one of its labels ("again" and "done")`)
}

func TestGotoReplacesStaticEdges(t *testing.T) {
	var c counter
	g := graph.New("goto", logKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Goto("c", graph.AppendTo(logKey, "a")), nil
	}, graph.Destinations("c"))
	g.AddNode("b", logger(&c, "b"))
	g.AddNode("c", logger(&c, "c"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b") // the default route, overridden by Goto
	g.AddEdge("b", graph.End)
	g.AddEdge("c", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, 0, c.get("b"), "the static edge a->b did not run")
	assert.Equal(t, 1, c.get("c"))
	assert.Equal(t, []string{"a", "c"}, logKey.Get(res.State))
}

func TestGotoToAnUndeclaredDestinationFails(t *testing.T) {
	g := graph.New("goto-bad")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Goto("b"), nil
	}, graph.Destinations("c"))
	g.AddNode("b", noop)
	g.AddNode("c", noop)
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge("b", graph.End)
	g.AddEdge("c", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	require.ErrorIs(t, err, graph.ErrUnknownNode)
	assert.EqualError(t, err, `graph: node "a" (step 0, attempt 1): graph: unknown node: Goto to "b", which is not among the node's destinations (c)`)
}

func TestGotoToAMissingNodeFails(t *testing.T) {
	g := graph.New("goto-missing")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Goto("nowhere"), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	assert.EqualError(t, err, `graph: node "a" (step 0, attempt 1): graph: unknown node: Goto to "nowhere", which graph "goto-missing" does not have`)
}

func TestSendMapReduceKeepsSendOrderWhateverTheFinishingOrder(t *testing.T) {
	const n = 100
	// done[i] closes when worker i finishes; worker i waits for worker
	// i+1, so they finish in reverse order.
	done := make([]chan struct{}, n+1)
	for i := range done {
		done[i] = make(chan struct{})
	}
	close(done[n])
	var finished []int
	var mu sync.Mutex
	var reduced []int
	reduceRuns := 0

	g := graph.New("mapreduce", itemKey, outKey)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		packets := make([]graph.Packet, n)
		for i := range packets {
			packets[i] = graph.To("worker", itemKey.Set(i))
		}
		return graph.Send(packets...), nil
	}, graph.Destinations("worker"))
	g.AddNode("worker", func(ctx context.Context, s graph.State) (graph.Command, error) {
		i := itemKey.Get(s)
		select {
		case <-done[i+1]:
		case <-ctx.Done():
			return graph.Command{}, ctx.Err()
		}
		mu.Lock()
		finished = append(finished, i)
		mu.Unlock()
		close(done[i])
		return graph.Update(graph.AppendTo(outKey, i*i)), nil
	})
	g.AddNode("reduce", func(ctx context.Context, s graph.State) (graph.Command, error) {
		reduceRuns++
		reduced = outKey.Get(s)
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("worker", "reduce")
	g.AddEdge("reduce", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, finished, n)
	assert.Equal(t, n-1, finished[0], "workers finished in reverse order")
	want := make([]int, n)
	for i := range want {
		want[i] = i * i
	}
	assert.Equal(t, want, reduced, "results are in send order")
	assert.Equal(t, 1, reduceRuns)
	_, written := itemKey.Lookup(res.State)
	assert.False(t, written, "packet writes are a private overlay, never written to the state")
}

func TestTasksOfAStepSeeTheStateAsOfTheStepStart(t *testing.T) {
	var fromB int
	g := graph.New("snapshot", itemKey, countKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(itemKey.Set(42)), nil
	})
	g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
		fromB = itemKey.Get(s)
		return graph.Update(countKey.Set(1)), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge("a", graph.End)
	g.AddEdge("b", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(itemKey.Set(7)))
	require.NoError(t, err)
	assert.Equal(t, 7, fromB, "b read the value as of the step's start, not a's write")
	assert.Equal(t, 42, itemKey.Get(res.State))
}

func TestAppendingToAReadSliceNeverWritesIntoSharedState(t *testing.T) {
	// Parallel nodes append to the slice they read; with a clipped view
	// each gets its own copy (the race detector checks the rest).
	g := graph.New("alias", logKey)
	var got sync.Map
	for _, n := range []string{"x", "y", "z"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
			local := append(logKey.Get(s), n)
			got.Store(n, local)
			return graph.Command{}, nil
		})
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(graph.AppendTo(logKey, "base")))
	require.NoError(t, err)
	for _, n := range []string{"x", "y", "z"} {
		v, _ := got.Load(n)
		assert.Equal(t, []string{"base", n}, v)
	}
	assert.Equal(t, []string{"base"}, logKey.Get(res.State))
}

func TestMaxConcurrencyBoundsTasksInFlight(t *testing.T) {
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	g := graph.New("bounded", countKey)
	names := make([]string, 6)
	for i := range names {
		names[i] = fmt.Sprintf("w%d", i)
		g.AddNode(names[i], func(ctx context.Context, s graph.State) (graph.Command, error) {
			cur := inFlight.Add(1)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			if cur == 2 {
				once.Do(func() { close(release) }) // both slots are taken: let everyone go
			}
			<-release
			inFlight.Add(-1)
			return graph.Update(countKey.Set(1)), nil
		})
		g.AddEdge(graph.Start, names[i])
		g.AddEdge(names[i], graph.End)
	}
	r, err := g.Compile(graph.MaxConcurrency(2))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, int32(2), peak.Load())
	assert.Equal(t, 6, countKey.Get(res.State))
}

func TestConflictingWritesToALastValueChannelNameBothNodes(t *testing.T) {
	g := graph.New("conflict", textKey)
	for _, n := range []string{"writer_b", "writer_a"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
			return graph.Update(textKey.Set(n)), nil
		})
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	require.ErrorIs(t, err, graph.ErrConflictingWrites)
	assert.EqualError(t, err, `graph: step 0: channel "text" keeps the last value but was written by "writer_a" and "writer_b" in the same step; give it a reducer (graph.Append, graph.Merge, graph.Sum, graph.Reduce) or write it from one node`)
}

func TestWriteToAnUndeclaredChannelNamesTheNodeAndTheChannel(t *testing.T) {
	g := graph.New("undeclared", logKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(textKey.Set("x")), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	require.ErrorIs(t, err, graph.ErrUnknownChannel)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "a", ne.Node)
	assert.EqualError(t, err, `graph: node "a" (step 0, attempt 1): graph: unknown channel "text": graph "undeclared" declares "log"`)
}

func TestInputGoesThroughReducersAndConditionalEdgesFromStart(t *testing.T) {
	g := graph.New("start-branch", countKey, logKey)
	g.AddNode("small", logger(&counter{}, "small"))
	g.AddNode("big", logger(&counter{}, "big"))
	g.AddConditionalEdges(graph.Start, func(ctx context.Context, s graph.State) (string, error) {
		if countKey.Get(s) > 10 {
			return "big", nil
		}
		return "small", nil
	}, graph.Paths("small", "big"))
	g.AddEdge("small", graph.End)
	g.AddEdge("big", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(countKey.Set(7), countKey.Set(8)))
	require.NoError(t, err)
	assert.Equal(t, 15, countKey.Get(res.State))
	assert.Equal(t, []string{"big"}, logKey.Get(res.State))
}

func TestReducers(t *testing.T) {
	merged := graph.NewKey("m", graph.Merge[string, int]())
	longest := graph.NewKey("longest", graph.Reduce(func(cur, update string) string {
		if len(update) > len(cur) {
			return update
		}
		return cur
	}))
	withInitial := graph.NewKey("limit", graph.Initial(3))
	g := graph.New("reducers", merged, longest, withInitial, countKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(merged.Set(map[string]int{"a": 1, "x": 1}), longest.Set("abc"), countKey.Set(2)), nil
	})
	g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(merged.Set(map[string]int{"b": 2, "x": 2}), longest.Set("ab"), countKey.Set(3)), nil
	})
	for _, n := range []string{"a", "b"} {
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(merged.Set(map[string]int{"in": 0})))
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"in": 0, "a": 1, "b": 2, "x": 2}, merged.Get(res.State), "b's write applies after a's")
	assert.Equal(t, "abc", longest.Get(res.State))
	assert.Equal(t, 5, countKey.Get(res.State))
	v, written := withInitial.Lookup(res.State)
	assert.Equal(t, 3, v)
	assert.False(t, written)
}

func TestDynamicKeys(t *testing.T) {
	list, err := graph.NewDynamicKey("list", "append")
	require.NoError(t, err)
	obj, err := graph.NewDynamicKey("obj", "merge")
	require.NoError(t, err)
	total, err := graph.NewDynamicKey("total", "sum")
	require.NoError(t, err)
	_, err = graph.NewDynamicKey("x", "concat")
	require.EqualError(t, err, `graph: channel "x": unknown reducer "concat" (want last, append, messages, merge or sum)`)

	g := graph.New("dynamic", list, obj, total)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(list.Set([]any{1, 2}), list.Set("three"), obj.Set(map[string]any{"k": "v"}), total.Set(2)), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(total.Set(0.5)))
	require.NoError(t, err)
	v, _ := res.State.Value("list")
	assert.Equal(t, []any{1, 2, "three"}, v)
	assert.Equal(t, map[string]any{"k": "v"}, obj.Get(res.State))
	assert.Equal(t, 2.5, total.Get(res.State))

	_, err = r.Invoke(t.Context(), graph.Input(total.Set("lots")))
	assert.EqualError(t, err, `graph: invalid input: graph: channel "total": sum channel takes a number, not string`)
}

func TestStateValuesAndChannels(t *testing.T) {
	g := graph.New("values", textKey, countKey)
	g.AddNode("a", noop)
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(textKey.Set("hi")))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"text": "hi"}, res.State.Values())
	assert.Equal(t, []string{"text", "count"}, res.State.Channels())
	assert.True(t, slices.Contains(res.State.Channels(), "count"))
}

func TestDecodeInputAndStateJSON(t *testing.T) {
	r := chain(t, 1, logKey, countKey)
	in, err := r.DecodeInput(map[string]json.RawMessage{"log": []byte(`["x"]`), "count": []byte(`2`)})
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), in)
	require.NoError(t, err)
	out, err := json.Marshal(res.State)
	require.NoError(t, err)
	assert.JSONEq(t, `{"log":["x"],"count":2}`, string(out))

	_, err = r.DecodeInput(map[string]json.RawMessage{"nope": []byte(`1`)})
	assert.EqualError(t, err, `graph: unknown channel "nope": graph "chain" declares "log", "count"`)
	_, err = r.DecodeInput(map[string]json.RawMessage{"count": []byte(`"two"`)})
	assert.EqualError(t, err, `graph: decode channel "count" as int: json: cannot unmarshal string into Go value of type int`)
	assert.Equal(t, []string{"n000"}, r.Nodes())
	assert.Len(t, r.Channels(), 2)
}
