package graph_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// The payloads of two custom events, as a package above graph defines
// them: graph knows neither.
const (
	chunkEvent    = "chunk"
	deployedEvent = "deployed"
)

type chunk string

func (chunk) EventName() string { return chunkEvent }

type deployed struct {
	Service string `json:"service"`
}

func (deployed) EventName() string { return deployedEvent }

// emitter emits a chunk, a deployment and a plain value, and records what
// Wants said of each name before.
func emitter(t *testing.T, wants *[]string) *graph.Runnable {
	t.Helper()
	g := graph.New("ship")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		*wants = (*wants)[:0]
		for _, name := range []string{chunkEvent, deployedEvent, "custom"} {
			if graph.Wants(ctx, name) {
				*wants = append(*wants, name)
			}
		}
		graph.Emit(ctx, chunk("Hel"))
		graph.Emit(ctx, deployed{Service: "api"})
		graph.Emit(ctx, "plain")
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func customs(evs []graph.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == graph.EventCustom {
			out = append(out, ev.Name())
		}
	}
	return out
}

func TestACustomEventIsNamedByItsPayload(t *testing.T) {
	var wants []string
	evs := collect(t, emitter(t, &wants), nil, graph.Events(graph.EventCustom))
	require.Len(t, evs, 3)
	assert.Equal(t, []string{"chunk ship/a", "deployed ship/a", "custom ship/a"}, describe(evs))
	assert.Equal(t, chunk("Hel"), evs[0].Data, "consumers switch on the payload's type")
	assert.Equal(t, deployed{Service: "api"}, evs[1].Data)
	assert.Equal(t, "plain", evs[2].Data)
	for _, ev := range evs {
		assert.Equal(t, "a", ev.Node)
		assert.False(t, ev.Time.IsZero())
	}
	assert.Equal(t, "node_end", graph.Event{Kind: graph.EventNodeEnd}.Name(), "an engine event is named by its kind")
	assert.Equal(t, "custom", graph.Event{Kind: graph.EventCustom, Data: 42}.Name())
}

func TestCustomEventsAreSelectedByName(t *testing.T) {
	tests := []struct {
		name    string
		opts    []graph.Option
		want    []string // the custom events yielded
		kinds   []string // the engine events yielded
		invoked bool
	}{
		{name: "default: all", want: []string{chunkEvent, deployedEvent, "custom"},
			kinds: []string{"run_start", "step_start", "node_start", "node_end", "values", "step_end", "run_end"}},
		{name: "only those named", opts: []graph.Option{graph.CustomEvents(deployedEvent)}, want: []string{deployedEvent},
			kinds: []string{"run_start", "step_start", "node_start", "node_end", "values", "step_end", "run_end"}},
		{name: "all but those skipped", opts: []graph.Option{graph.Events(graph.EventNodeEnd, graph.EventCustom), graph.SkipCustomEvents(chunkEvent)},
			want: []string{deployedEvent, "custom"}, kinds: []string{"node_end"}},
		{name: "skips add up", opts: []graph.Option{graph.SkipCustomEvents(chunkEvent), graph.SkipCustomEvents("custom")},
			want: []string{deployedEvent}, kinds: []string{"run_start", "step_start", "node_start", "node_end", "values", "step_end", "run_end"}},
		{name: "named ones come with the kinds Events selects, in either order", opts: []graph.Option{graph.CustomEvents(chunkEvent), graph.Events(graph.EventNodeEnd)},
			want: []string{chunkEvent}, kinds: []string{"node_end"}},
		{name: "kinds without EventCustom: none", opts: []graph.Option{graph.Events(graph.EventNodeEnd)}, kinds: []string{"node_end"}},
		{name: "a name both selected and skipped is skipped", opts: []graph.Option{graph.CustomEvents(chunkEvent, deployedEvent), graph.SkipCustomEvents(chunkEvent)},
			want: []string{deployedEvent}, kinds: []string{"run_start", "step_start", "node_start", "node_end", "values", "step_end", "run_end"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wants []string
			evs := collect(t, emitter(t, &wants), nil, tt.opts...)
			assert.Equal(t, tt.want, customs(evs))
			assert.Equal(t, tt.want, wants, "Wants tells the producer the same")
			var kinds []string
			for _, ev := range evs {
				if ev.Kind != graph.EventCustom {
					kinds = append(kinds, ev.Name())
				}
			}
			assert.Equal(t, tt.kinds, kinds)
		})
	}
	var wants []string
	_, err := emitter(t, &wants).Invoke(t.Context(), nil, graph.CustomEvents(chunkEvent))
	require.NoError(t, err)
	assert.Empty(t, wants, "Invoke yields no events: nobody wants any")
}

func TestASubgraphEmitsUnderTheParentsFilter(t *testing.T) {
	var wants []string
	outer := graph.New("outer")
	outer.AddSubgraph("inner", emitter(t, &wants))
	outer.AddEdge(graph.Start, "inner")
	outer.AddEdge("inner", graph.End)
	r, err := outer.Compile()
	require.NoError(t, err)
	evs := collect(t, r, nil, graph.CustomEvents(deployedEvent))
	assert.Equal(t, []string{deployedEvent}, customs(evs))
	assert.Equal(t, []string{deployedEvent}, wants)
	for _, ev := range evs {
		if ev.Kind == graph.EventCustom {
			assert.Equal(t, "outer/inner/a", ev.Path)
		}
	}
}

// TestAnEmitAfterItsNodeReturnedIsDropped: a goroutine that node a left
// running emits with a's context while later steps run on the task slot a
// ran on. Emit does nothing outside a running node, so the event is not
// yielded — in particular not as an event of the node running then — and
// (under -race) reading the context races with nothing the engine writes
// for the later steps. A node with a timeout gets a context per attempt;
// the others share one per task slot where nobody reads custom events.
func TestAnEmitAfterItsNodeReturnedIsDropped(t *testing.T) {
	stream := func(opts ...graph.Option) func(*testing.T, *graph.Runnable) []graph.Event {
		return func(t *testing.T, r *graph.Runnable) []graph.Event { return collect(t, r, nil, opts...) }
	}
	invoke := func(t *testing.T, r *graph.Runnable) []graph.Event {
		_, err := r.Invoke(t.Context(), nil)
		require.NoError(t, err)
		return nil
	}
	for _, tc := range []struct {
		name    string
		timeout bool // a runs with a timeout
		run     func(*testing.T, *graph.Runnable) []graph.Event
		customs []string
	}{
		{"stream", false, stream(), []string{"a", "b", "c", "d"}},
		{"stream, a with a timeout", true, stream(), []string{"a", "b", "c", "d"}},
		{"stream without custom events", false, stream(graph.Events(graph.EventNodeEnd)), nil},
		{"stream without custom events, a with a timeout", true, stream(graph.Events(graph.EventNodeEnd)), nil},
		{"invoke", false, invoke, nil},
		{"invoke, a with a timeout", true, invoke, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release, emitted := make(chan struct{}), make(chan struct{})
			g := graph.New("late")
			var opts []graph.NodeOption
			if tc.timeout {
				opts = append(opts, graph.WithTimeout(time.Hour))
			}
			g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
				graph.Emit(ctx, "a")
				go func() {
					defer close(emitted)
					<-release
					graph.Emit(ctx, "late")
				}()
				return graph.Command{}, nil
			}, opts...)
			g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
				close(release) // a has returned: its step is over
				graph.Emit(ctx, "b")
				return graph.Command{}, nil
			})
			g.AddNode("c", func(ctx context.Context, s graph.State) (graph.Command, error) {
				graph.Emit(ctx, "c")
				<-emitted
				return graph.Command{}, nil
			})
			g.AddNode("d", func(ctx context.Context, s graph.State) (graph.Command, error) {
				graph.Emit(ctx, "d")
				return graph.Command{}, nil
			})
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", "b")
			g.AddEdge("b", "c")
			g.AddEdge("c", "d")
			g.AddEdge("d", graph.End)
			r, err := g.Compile()
			require.NoError(t, err)

			var got []string
			for _, ev := range tc.run(t, r) {
				if ev.Kind == graph.EventCustom {
					assert.Equal(t, ev.Data, ev.Node, "an event of node %s came from elsewhere", ev.Node)
					got = append(got, ev.Data.(string))
				}
			}
			assert.Equal(t, tc.customs, got)
		})
	}
}

// doneHook is a context that calls hook the first time Done is asked for:
// Emit asks when it has its event ready, before it hands it to the loop.
type doneHook struct {
	context.Context
	once *sync.Once
	hook func()
}

func (c doneHook) Done() <-chan struct{} {
	c.once.Do(c.hook)
	return c.Context.Done()
}

// TestEmitsOnTheirWayWhenTheNodeReturnsComeBeforeItsEnd: a goroutine of
// node a is in Emit when a returns, and hands its event to the loop only
// once a's call has ended (Wants turns false then). The event is yielded,
// and before a's end: the end of a call waits for the Emits it let in.
func TestEmitsOnTheirWayWhenTheNodeReturnsComeBeforeItsEnd(t *testing.T) {
	g := graph.New("onway")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, "first")
		inEmit := make(chan struct{})
		go graph.Emit(doneHook{ctx, new(sync.Once), func() {
			close(inEmit)
			for graph.Wants(ctx, "custom") && ctx.Err() == nil { // until a's call has ended
				runtime.Gosched()
			}
		}}, "on its way")
		<-inEmit
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	var got []string
	for _, ev := range collect(t, r, nil, graph.Events(graph.EventCustom, graph.EventNodeEnd)) {
		if ev.Kind == graph.EventCustom {
			got = append(got, ev.Data.(string))
		} else {
			got = append(got, ev.Name()+" "+ev.Node)
		}
	}
	assert.Equal(t, []string{"first", "on its way", "node_end a"}, got)
}

// TestARouterEmitsNothing: a router is no running node, so Emit does
// nothing with its context (and Wants says so) rather than wait for the
// loop, which is running the router. The run goes on; the deadline only
// bounds a run that would hang.
func TestARouterEmitsNothing(t *testing.T) {
	var wanted bool
	g := graph.New("route")
	g.AddNode("a", noop)
	g.AddNode("b", noop)
	g.AddEdge(graph.Start, "a")
	g.AddConditionalEdges("a", func(ctx context.Context, s graph.State) (string, error) {
		wanted = graph.Wants(ctx, "custom")
		graph.Emit(ctx, "from the router")
		return "b", nil
	}, graph.Paths("b"))
	g.AddEdge("b", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var got []string
	for ev, err := range r.Stream(ctx, nil, graph.Events(graph.EventCustom, graph.EventNodeEnd)) {
		require.NoError(t, err)
		got = append(got, ev.Name()+" "+ev.Path)
	}
	assert.Equal(t, []string{"node_end route/a", "node_end route/b"}, got)
	assert.False(t, wanted)
}

// TestAnEmitAfterItsAttemptReturnedIsDropped: each call of a node — an
// attempt, its error handler — is a node that returns: a goroutine the
// first attempt left running emits during the second, and one the second
// left emits during the error handler; neither event is yielded.
func TestAnEmitAfterItsAttemptReturnedIsDropped(t *testing.T) {
	release := []chan struct{}{make(chan struct{}), make(chan struct{})}
	emitted := []chan struct{}{make(chan struct{}), make(chan struct{})}
	attempt := 0
	g := graph.New("retry")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if attempt > 0 {
			close(release[attempt-1])
			<-emitted[attempt-1]
		}
		graph.Emit(ctx, fmt.Sprintf("attempt %d", attempt+1))
		go func(i int) {
			defer close(emitted[i])
			<-release[i]
			graph.Emit(ctx, fmt.Sprintf("late, from attempt %d", i+1))
		}(attempt)
		attempt++
		return graph.Command{}, errors.New("fails")
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Nanosecond}),
		graph.OnError(func(ctx context.Context, s graph.State, err error) (graph.Command, error) {
			close(release[1])
			<-emitted[1]
			graph.Emit(ctx, "handler")
			return graph.Command{}, nil
		}))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	var got []any
	for _, ev := range collect(t, r, nil, graph.Events(graph.EventCustom)) {
		got = append(got, ev.Data)
	}
	assert.Equal(t, []any{"attempt 1", "attempt 2", "handler"}, got)
}
