package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

func TestGotoEndIsValidFromANodeThatDeclaredOtherDestinations(t *testing.T) {
	var c counter
	g := graph.New("end", logKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Goto(graph.End, graph.AppendTo(logKey, "a")), nil
	}, graph.Destinations("y"))
	g.AddNode("y", logger(&c, "y"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("y", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"a"}, logKey.Get(res.State))
	assert.Equal(t, 0, c.get("y"))
}

func TestANodeWithDestinationsMayAlwaysReachEnd(t *testing.T) {
	// a and b route to each other with Goto only; a ends the loop with
	// Goto(End), which needs no declaring, so Compile sees a path to End.
	g := graph.New("loop", countKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if countKey.Get(s) >= 3 {
			return graph.Goto(graph.End), nil
		}
		return graph.Goto("b"), nil
	}, graph.Destinations("b"))
	g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Goto("a", countKey.Set(1)), nil
	}, graph.Destinations("a"))
	g.AddEdge(graph.Start, "a")
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, 3, countKey.Get(res.State))

	// Naming End among the destinations stays allowed.
	g2 := graph.New("explicit")
	g2.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Goto(graph.End), nil
	}, graph.Destinations(graph.End))
	g2.AddEdge(graph.Start, "a")
	_, err = g2.Compile()
	assert.NoError(t, err)
}

func TestASendPacketForEndFailsTheNodeThatSentIt(t *testing.T) {
	var bad atomic.Bool
	bad.Store(true)
	var c counter
	g := graph.New("send-end", logKey)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		c.inc("fan")
		if bad.Load() {
			return graph.Send(graph.To(graph.End, graph.AppendTo(logKey, "lost"))), nil
		}
		return graph.Update(graph.AppendTo(logKey, "fan")), nil
	})
	g.AddNode("sibling", logger(&c, "sibling"))
	for _, n := range []string{"fan", "sibling"} {
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	_, err = r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.ErrorIs(t, err, graph.ErrInvalidCommand)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "fan", ne.Node)
	assert.EqualError(t, err, `graph: node "fan" (step 0, attempt 1): graph: invalid command: Send packet 0 is for End, which runs nothing: send it to a node, or end the branch with graph.Goto(graph.End)`)

	bad.Store(false) // fix the node, then continue the thread
	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{"fan", "sibling"}, logKey.Get(res.State))
	assert.Equal(t, 1, c.get("sibling"), "the sibling's finished work was kept")
	assert.Equal(t, 2, c.get("fan"))
}

func TestSendAndUpdateCombine(t *testing.T) {
	g := graph.New("combine", itemKey, outKey, logKey, textKey)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Send(graph.To("worker", itemKey.Set(1)), graph.To("worker", itemKey.Set(2))).
			With(textKey.Set("fanned out")), nil
	}, graph.Destinations("worker"))
	g.AddNode("worker", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(outKey, itemKey.Get(s))), nil
	})
	g.AddNode("route", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Goto("review", graph.AppendTo(logKey, "route")).WithSend(graph.To("worker", itemKey.Set(3))), nil
	}, graph.Destinations("review", "worker"))
	g.AddNode("review", logger(&counter{}, "review"))
	g.AddEdge(graph.Start, "fan")
	g.AddEdge(graph.Start, "route")
	g.AddEdge("worker", graph.End)
	g.AddEdge("review", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, "fanned out", textKey.Get(res.State))
	assert.Equal(t, []int{1, 2, 3}, outKey.Get(res.State), "packets from both commands ran, in send order")
	assert.Equal(t, []string{"route", "review"}, logKey.Get(res.State))
}

func TestWithAndWithSendLeaveTheCommandTheyExtendUnchanged(t *testing.T) {
	base := graph.Update(textKey.Set("base"), countKey.Set(1))
	base.Update = base.Update[:1] // spare capacity, as a reused command may have
	one := base.With(countKey.Set(2))
	two := base.With(countKey.Set(3))
	assert.Len(t, base.Update, 1)
	require.Len(t, one.Update, 2)
	require.Len(t, two.Update, 2)
	assert.NotEqual(t, one.Update[1], two.Update[1], "each extension has its own writes")

	send := graph.Send(graph.To("w"))
	a := send.WithSend(graph.To("x"))
	b := send.WithSend(graph.To("y"))
	assert.Len(t, send.Send, 1)
	assert.Equal(t, []string{"w", "x"}, []string{a.Send[0].Node, a.Send[1].Node})
	assert.Equal(t, []string{"w", "y"}, []string{b.Send[0].Node, b.Send[1].Node})
}

func TestAPacketChannelTheGraphDoesNotDeclareNamesSenderAndTarget(t *testing.T) {
	g := graph.New("fan", outKey) // itemKey is missing
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Send(graph.To("worker", itemKey.Set(1))), nil
	}, graph.Destinations("worker"))
	g.AddNode("worker", noop)
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("worker", graph.End)
	r, err := g.Compile()
	require.NoError(t, err, "without graph.Sends the packet's channels are known only at run time")
	_, err = r.Invoke(t.Context(), nil)
	require.ErrorIs(t, err, graph.ErrUnknownChannel)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "fan", ne.Node, "the sender fails, not the task the packet would start")
	assert.EqualError(t, err, `graph: node "fan" (step 0, attempt 1): graph: unknown channel "item" in a packet for "worker": graph "fan" declares "out"`)
}

func TestSendsDeclaresPacketChannelsThatCompileChecks(t *testing.T) {
	cases := []struct {
		name string
		opt  graph.NodeOption
		want string
	}{
		{"a channel the graph does not declare", graph.Sends("worker", itemKey),
			`graph "fan": node "fan" sends packets to "worker" with channel "item", which graph "fan" does not declare: add it to graph.New`},
		{"a channel of another type", graph.Sends("worker", graph.NewKey[string]("out")),
			`graph "fan": node "fan" sends packets to "worker" with channel "out" as string (last), but the graph declares it as []int (append)`},
		{"an unknown target", graph.Sends("ghost", outKey),
			`graph "fan": node "fan" declares unknown destination "ghost"`},
		{"End as the target", graph.Sends(graph.End, outKey),
			`graph "fan": node "fan" declares packets for End, which runs nothing: send them to a node`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := graph.New("fan", outKey)
			g.AddNode("fan", noop, c.opt, graph.Destinations("worker"))
			g.AddNode("worker", noop)
			g.AddEdge(graph.Start, "fan")
			g.AddEdge("worker", graph.End)
			_, err := g.Compile()
			require.ErrorIs(t, err, graph.ErrInvalidGraph)
			assert.EqualError(t, err, c.want)
		})
	}
}

func TestSendsHoldsPacketsToTheDeclaredChannels(t *testing.T) {
	g := graph.New("fan", itemKey, outKey, textKey)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Send(graph.To("worker", itemKey.Set(1), textKey.Set("extra"))), nil
	}, graph.Sends("worker", itemKey))
	g.AddNode("worker", noop)
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("worker", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	require.ErrorIs(t, err, graph.ErrUnknownChannel)
	assert.EqualError(t, err, `graph: node "fan" (step 0, attempt 1): graph: unknown channel "text" in a packet for "worker": the node declared its packets for "worker" with "item" (graph.Sends)`)
}
