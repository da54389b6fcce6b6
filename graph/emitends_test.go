package graph_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// emitOnTheWay starts a goroutine whose Emit of v with ctx has been let in
// and hands its event to the loop only once the call ctx belongs to has
// ended (see TestEmitsOnTheirWayWhenTheNodeReturnsComeBeforeItsEnd); it
// returns once the Emit is in.
func emitOnTheWay(ctx context.Context, v any) {
	in := make(chan struct{})
	go graph.Emit(doneHook{ctx, new(sync.Once), func() {
		close(in)
		for graph.Wants(ctx, "custom") && ctx.Err() == nil {
			runtime.Gosched()
		}
	}}, v)
	<-in
}

// TestEmitsOnTheirWayComeBeforeTheEndHoweverTheCallEnds: an Emit let in
// while its call runs is yielded, before the task's EventNodeEnd, whether
// the call returns, fails, panics, ends its goroutine, runs with a
// timeout, emits in a scope, runs in a subgraph or is an error handler —
// and the run does not hang.
func TestEmitsOnTheirWayComeBeforeTheEndHoweverTheCallEnds(t *testing.T) {
	for _, tc := range []struct {
		how  string
		want []string
	}{
		{"return", []string{"way p/a", "node_end p/a"}},
		{"error", []string{"way p/a", "node_end p/a"}},
		{"panic", []string{"way p/a", "node_end p/a"}},
		{"goexit", []string{"way p/a", "node_end p/a"}},
		{"timeout", []string{"way p/a", "node_end p/a"}},
		{"scope", []string{"way p/a/sc", "node_end p/a"}},
		{"subgraph", []string{"way p/a/in", "node_end p/a/in", "node_end p/a"}},
		{"handler", []string{"way p/a", "handler's way p/a", "node_end p/a"}},
	} {
		t.Run(tc.how, func(t *testing.T) {
			fn := func(ctx context.Context, s graph.State) (graph.Command, error) {
				if tc.how == "scope" {
					ctx = graph.WithScope(ctx, "sc")
				}
				emitOnTheWay(ctx, "way")
				switch tc.how {
				case "panic":
					panic("boom")
				case "goexit":
					runtime.Goexit()
				case "error", "handler":
					return graph.Command{}, errors.New("fails")
				}
				return graph.Command{}, nil
			}
			var opts []graph.NodeOption
			switch tc.how {
			case "timeout":
				opts = append(opts, graph.WithTimeout(1<<40))
			case "handler":
				opts = append(opts, graph.OnError(func(ctx context.Context, s graph.State, err error) (graph.Command, error) {
					emitOnTheWay(ctx, "handler's way")
					return graph.Command{}, nil
				}))
			}
			g := graph.New("p")
			if tc.how == "subgraph" {
				sg := graph.New("sub")
				sg.AddNode("in", fn)
				sg.AddEdge(graph.Start, "in")
				sg.AddEdge("in", graph.End)
				sr, err := sg.Compile()
				require.NoError(t, err)
				g.AddSubgraph("a", sr)
			} else {
				g.AddNode("a", fn, opts...)
			}
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
			r, err := g.Compile()
			require.NoError(t, err)

			var got []string
			for ev := range r.Stream(t.Context(), nil, graph.Events(graph.EventCustom, graph.EventNodeEnd)) {
				switch ev.Kind { // the run's error, if any, comes too
				case graph.EventCustom:
					got = append(got, fmt.Sprint(ev.Data)+" "+ev.Path)
				case graph.EventNodeEnd:
					got = append(got, ev.Name()+" "+ev.Path)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestRunTasksYieldsEmitsOnTheirWayBeforeTheEnd: in RunTasks streaming
// to a sink, an Emit on its way when its node returns, or ends its
// goroutine, reaches the sink before the task's EventNodeEnd.
func TestRunTasksYieldsEmitsOnTheirWayBeforeTheEnd(t *testing.T) {
	g := graph.New("rt")
	g.AddNode("prep", noop)
	for _, n := range []string{"quits", "stays"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
			emitOnTheWay(ctx, "way")
			if n == "quits" {
				runtime.Goexit()
			}
			return graph.Command{}, nil
		})
		g.AddEdge("prep", n)
		g.AddEdge(n, graph.End)
	}
	g.AddEdge(graph.Start, "prep")
	r, err := g.Compile()
	require.NoError(t, err)
	var mu sync.Mutex // the sink is called on the loop's goroutine; this is for -race's sake
	got := map[string][]string{}
	opts := []graph.Option{graph.WithSaver(memory.New()), graph.Thread("t"), graph.StreamTo(func(ev graph.Event) bool {
		if ev.Kind == graph.EventCustom || ev.Kind == graph.EventNodeEnd {
			mu.Lock()
			got[ev.Node] = append(got[ev.Node], ev.Name())
			mu.Unlock()
		}
		return true
	})}
	res, err := r.Step(t.Context(), graph.Input(), opts...)
	require.NoError(t, err)
	clear(got)
	_, err = r.RunTasks(t.Context(), res.Checkpoint, []string{"quits", "stays"}, opts...)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "quits", ne.Node)
	want := []string{"custom", "node_end"}
	assert.Equal(t, map[string][]string{"quits": want, "stays": want}, got)
}

// TestLateEmitsOfSendTasksAreTheirsOrDropped: goroutines that the tasks of
// a Send fan-out (and its sender) left running keep emitting, with the
// node's context and a scope of it, while later steps run on the same
// task slots. An event yielded is one of the task that emitted it (step
// and path), before that task's end; the others are dropped. Under -race,
// nothing the engine writes for later tasks races with those Emits.
func TestLateEmitsOfSendTasksAreTheirsOrDropped(t *testing.T) {
	for _, timeout := range []bool{false, true} {
		for _, custom := range []bool{false, true} {
			t.Run(fmt.Sprintf("timeout %v, custom events %v", timeout, custom), func(t *testing.T) {
				cnt := graph.NewKey("cnt", graph.Sum[int]())
				item := graph.NewKey[int]("item")
				g := graph.New("h", cnt, item)
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var opts []graph.NodeOption
				if timeout {
					opts = append(opts, graph.WithTimeout(1<<40))
				}
				leave := func(ctx context.Context) {
					sc := graph.WithScope(ctx, "x")
					ti, _ := graph.TaskOf(ctx)
					me := fmt.Sprint(ti.Step, " ", ti.Path)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							select {
							case <-stop:
								return
							default:
							}
							graph.Emit(ctx, me)
							graph.Emit(sc, me+"/x")
							graph.Wants(sc, "custom")
							runtime.Gosched()
						}
					}()
				}
				g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
					leave(ctx)
					if cnt.Get(s) >= 60 {
						return graph.Goto(graph.End), nil
					}
					ps := make([]graph.Packet, 4)
					for i := range ps {
						ps[i] = graph.To("w", item.Set(i))
					}
					return graph.Send(ps...), nil
				}, append([]graph.NodeOption{graph.Destinations("w", graph.End)}, opts...)...)
				g.AddNode("w", func(ctx context.Context, s graph.State) (graph.Command, error) {
					leave(ctx)
					return graph.Update(cnt.Set(1)), nil
				}, opts...)
				g.AddEdge(graph.Start, "fan")
				g.AddEdge("w", "fan")
				r, err := g.Compile()
				require.NoError(t, err)
				kinds := []graph.EventKind{graph.EventNodeEnd}
				if custom {
					kinds = append(kinds, graph.EventCustom)
				}
				ended := map[string]bool{}
				for ev, err := range r.Stream(t.Context(), nil, graph.Events(kinds...)) {
					require.NoError(t, err)
					at := fmt.Sprint(ev.Step, " ", ev.Path)
					if ev.Kind == graph.EventNodeEnd {
						ended[at] = true
						continue
					}
					require.Equal(t, ev.Data, at, "an event of another task")
					require.False(t, ended[at], "an event after its task's end")
				}
				close(stop)
				wg.Wait()
			})
		}
	}
}
