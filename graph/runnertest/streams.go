package runnertest

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// Streamer runs a compiled graph and yields its events, as
// graph.Runnable.Stream does.
type Streamer interface {
	Stream(ctx context.Context, input []graph.Write, opts ...graph.Option) iter.Seq2[graph.Event, error]
}

// StreamHarness is what a runner that streams gives RunStreams.
type StreamHarness struct {
	// Saver is where the runner's threads live.
	Saver graph.Saver
	// Runner returns the runner of r.
	Runner func(t *testing.T, r *graph.Runnable) Streamer
}

// RunStreams checks that the runner's Stream yields what the engine's
// Stream yields in process for the same graph: the same events, path by
// path in the same order (the events of parallel tasks interleave as they
// happen), with the same payloads, writes and state; narrowed by the same
// options; ending at an interrupt, and going on when resumed.
func RunStreams(t *testing.T, h StreamHarness) {
	for _, c := range streamCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, &streamEnv{env: env{t: t}, h: h}) })
	}
}

var streamCases = []struct {
	name string
	run  func(t *testing.T, e *streamEnv)
}{
	{"ParallelSendSubgraph", streamParallel},
	{"Selected", streamSelected},
	{"InterruptResume", streamInterrupt},
}

type streamEnv struct {
	env
	h StreamHarness
}

// both streams a run of r in process and on the runner, each on a new
// thread, and returns their events.
func (e *streamEnv) both(r *graph.Runnable, input []graph.Write, more ...graph.Option) (want, got []graph.Event) {
	e.t.Helper()
	local := opts([]graph.Option{graph.WithSaver(e.h.Saver), graph.Thread(e.name("local"))}, more...)
	want = drain(e.t, r.Stream(e.t.Context(), input, local...))
	remote := opts([]graph.Option{graph.WithSaver(e.h.Saver), graph.Thread(e.name("remote"))}, more...)
	got = drain(e.t, e.h.Runner(e.t, r).Stream(e.t.Context(), input, remote...))
	return want, got
}

func drain(t *testing.T, events iter.Seq2[graph.Event, error]) []graph.Event {
	t.Helper()
	var out []graph.Event
	for ev, err := range events {
		require.NoError(t, err)
		out = append(out, ev)
	}
	return out
}

// byPath describes events path by path, in order: their names and what
// they carry (checkpoint ids and times aside, which differ between runs).
func byPath(evs []graph.Event) map[string][]string {
	out := make(map[string][]string)
	for _, ev := range evs {
		d := ev.Name()
		switch ev.Kind {
		case graph.EventCheckpoint:
		case graph.EventUpdate:
			for _, w := range ev.Writes {
				d += fmt.Sprintf(" %s=%v", w.Channel(), w.Value())
			}
		case graph.EventValues, graph.EventRunEnd:
			d += fmt.Sprintf(" %v %v", ev.Data, ev.State.Values())
		case graph.EventInterrupt:
			for _, in := range ev.Data.([]graph.InterruptInfo) {
				d += fmt.Sprintf(" %s:%v", in.Path, in.Payload)
			}
		default:
			if ev.Data != nil {
				d += fmt.Sprintf(" %v", ev.Data)
			}
		}
		if ev.Err != nil {
			d += " err " + ev.Err.Error()
		}
		out[ev.Path] = append(out[ev.Path], fmt.Sprintf("step %d %s", ev.Step, d))
	}
	return out
}

func names(evs []graph.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name() + " " + ev.Path
	}
	return out
}

// emitting is a node that emits its name and appends it to the log.
func emitting(name string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, "hello from "+name)
		return graph.Update(graph.AppendTo(logKey, name)), nil
	}
}

// streamGraph: Start → a, b in parallel; a sends two packets to p; b runs
// a subgraph whose node emits; then End.
func (e *streamEnv) streamGraph() *graph.Runnable {
	sub := graph.New(e.name("inner"), logKey)
	sub.AddNode("x", emitting("x"))
	sub.AddEdge(graph.Start, "x")
	sub.AddEdge("x", graph.End)
	inner, err := sub.Compile()
	require.NoError(e.t, err)
	g := graph.New(e.name("stream"), logKey, valKey)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, "hello from a")
		return graph.Command{Update: []graph.Write{graph.AppendTo(logKey, "a")},
			Send: []graph.Packet{{Node: "p", Writes: []graph.Write{valKey.Set("one")}}, {Node: "p", Writes: []graph.Write{valKey.Set("two")}}}}, nil
	}, graph.Destinations("p"))
	g.AddNode("p", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, "packet "+valKey.Get(s))
		return graph.Update(graph.AppendTo(logKey, "p "+valKey.Get(s))), nil
	})
	g.AddNode("b", emitting("b"))
	g.AddSubgraph("sub", inner)
	g.AddEdge(graph.Start, "a")
	g.AddEdge(graph.Start, "b")
	g.AddEdge("b", "sub")
	g.AddEdge("p", graph.End)
	g.AddEdge("sub", graph.End)
	r, err := g.Compile()
	require.NoError(e.t, err)
	return r
}

func streamParallel(t *testing.T, e *streamEnv) {
	r := e.streamGraph()
	want, got := e.both(r, graph.Input())
	assert.Equal(t, byPath(want), byPath(got))
	assert.ElementsMatch(t, names(want), names(got))
	assert.Equal(t, want[0].Name(), got[0].Name(), "the run starts first")
	assert.Equal(t, names(want[len(want)-1:]), names(got[len(got)-1:]), "and ends last")
}

func streamSelected(t *testing.T, e *streamEnv) {
	r := e.streamGraph()
	want, got := e.both(r, graph.Input(), graph.Events(graph.EventNodeEnd, graph.EventRunEnd), graph.SkipCustomEvents("nothing"),
		graph.CustomEvents("custom"))
	assert.Equal(t, byPath(want), byPath(got))
	kinds := make(map[string]bool)
	for _, ev := range got {
		kinds[ev.Name()] = true
	}
	assert.Equal(t, map[string]bool{"node_end": true, "run_end": true, "custom": true}, kinds)
}

func streamInterrupt(t *testing.T, e *streamEnv) {
	g := graph.New(e.name("ask"), logKey)
	g.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		answer, err := graph.InterruptAs[string](ctx, "name?")
		if err != nil {
			return graph.Command{}, err
		}
		graph.Emit(ctx, "got "+answer)
		return graph.Update(graph.AppendTo(logKey, answer)), nil
	})
	g.AddNode("after", emitting("after"))
	g.AddEdge(graph.Start, "ask")
	g.AddEdge("ask", "after")
	g.AddEdge("after", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	runner := e.h.Runner(t, r)
	streams := map[string]Streamer{"local": r, "remote": runner}
	results := make(map[string][2][]graph.Event)
	for _, which := range []string{"local", "remote"} {
		o := []graph.Option{graph.WithSaver(e.h.Saver), graph.Thread(e.name(which))}
		first := drain(t, streams[which].Stream(t.Context(), graph.Input(), o...))
		second := drain(t, streams[which].Stream(t.Context(), nil, opts(o, graph.Resume("ada"))...))
		results[which] = [2][]graph.Event{first, second}
	}
	for i, part := range []string{"until the interrupt", "after the resume"} {
		want, got := results["local"][i], results["remote"][i]
		assert.Equal(t, byPath(want), byPath(got), part)
		assert.Equal(t, names(want), names(got), part)
	}
	first := results["remote"][0]
	require.GreaterOrEqual(t, len(first), 2)
	assert.Equal(t, []string{"interrupt", "run_end"}, []string{first[len(first)-2].Name(), first[len(first)-1].Name()})
	last := results["remote"][1][len(results["remote"][1])-1]
	assert.Equal(t, []string{"ada", "after"}, logKey.Get(last.State))
	assert.True(t, slices.ContainsFunc(results["remote"][1], func(ev graph.Event) bool {
		s, _ := ev.Data.(string)
		return strings.HasPrefix(s, "got ada")
	}), "the resumed node's events are streamed")
}

// ByStream is an Invoker that runs through s's Stream: the result is
// read from the events (the run's end and its interrupts), so Run checks
// that a runner's Stream ends its runs as its Invoke does.
func ByStream(s Streamer) graph.Invoker { return byStream{s} }

type byStream struct{ s Streamer }

func (b byStream) Invoke(ctx context.Context, input []graph.Write, opts ...graph.Option) (graph.Result, error) {
	var res graph.Result
	root := ""
	for ev, err := range b.s.Stream(ctx, input, opts...) {
		if err != nil {
			return graph.Result{}, err
		}
		switch {
		case ev.Kind == graph.EventRunStart && root == "":
			root = ev.Path
		case ev.Path != root:
		case ev.Kind == graph.EventInterrupt:
			res.Interrupts, _ = ev.Data.([]graph.InterruptInfo)
		case ev.Kind == graph.EventRunEnd:
			res.State = ev.State
			res.Status, _ = ev.Data.(graph.Status)
		}
	}
	return res, nil
}
