package workflows

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
)

// warningsOfAWrite runs a graph whose node "write" adds a large
// always-loaded item through s, and returns the warning events of the run.
func warningsOfAWrite(t *testing.T, s store.Store) []graph.Event {
	t.Helper()
	g := graph.New("warn")
	g.AddNode("write", func(ctx context.Context, st graph.State) (graph.Command, error) {
		_, err := s.Add(ctx, "acme", "project/big", strings.Repeat("x", board.DefaultWarnSize+1), store.Attrs{Labels: board.Prompt{Trigger: board.TriggerAlways}.Labels()})
		return graph.Command{}, err
	})
	g.AddEdge(graph.Start, "write")
	g.AddEdge("write", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	var events []graph.Event
	for ev, err := range r.Stream(t.Context(), nil, graph.Events(graph.EventCustom), graph.CustomEvents(agentevent.EventWarning)) {
		require.NoError(t, err)
		events = append(events, ev)
	}
	return events
}

// The store a workflow runs with reports an always-loaded item that is
// too large in the run's stream, whether it was given or made by default.
func TestALargeAlwaysLoadedItemIsAWarningInTheRun(t *testing.T) {
	given := memory.New(store.Config{})
	env := Env{Store: given}
	env.defaults()
	byDefault := Env{}
	byDefault.defaults()
	for name, s := range map[string]store.Store{"Env with a store": env.Store, "Env by default": byDefault.Store} {
		t.Run(name, func(t *testing.T) {
			events := warningsOfAWrite(t, s)
			require.Len(t, events, 1)
			assert.Equal(t, "warn/write", events[0].Path)
			assert.Equal(t, agentevent.Warning{Value: board.Warning{Owner: "acme", Path: "project/big", Revision: 1, Trigger: board.TriggerAlways,
				Size: board.DefaultWarnSize + 1, Limit: board.DefaultWarnSize}}, events[0].Data)
		})
	}
	_, err := given.Get(t.Context(), "acme", "project/big")
	assert.NoError(t, err, "the write went to the given store")
	assert.Empty(t, warningsOfAWrite(t, memory.New(store.Config{})), "a store of one's own reports nothing")
}
