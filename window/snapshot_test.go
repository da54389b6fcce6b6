package window_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/window"
)

func snapshotRequest() window.Request {
	return window.Request{Agent: "researcher-1", Budget: window.Budget{MaxInputTokens: 400, ReserveForOutput: 100},
		Parts: []window.Part{
			{Name: "system", Kind: window.KindSystem, Text: "You are a researcher.", Required: true},
			{Name: "index", Kind: window.KindMemory, Text: words(400), Priority: board.PriorityLow, Ref: "memory/index"},
			{Name: "task", Kind: window.KindTask, Text: "Compare Go web frameworks.", Required: true},
			{Name: "history", Kind: window.KindHistory, Messages: []llms.MessageContent{
				toolCall("c1", "web_search", `{"query":"chi"}`), toolResult("c1", "web_search", "chi is small."),
			}},
		}}
}

func TestSnapshotIsPublishedAsAnEvent(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	var built window.Snapshot
	g := graph.New("research")
	g.AddNode("researcher", func(ctx context.Context, _ graph.State) (graph.Command, error) {
		res, err := b.Assemble(graph.WithScope(ctx, "agent:researcher-1"), snapshotRequest())
		built = res.Snapshot
		return graph.Command{}, err
	})
	g.AddEdge(graph.Start, "researcher")
	g.AddEdge("researcher", graph.End)
	run, err := g.Compile()
	require.NoError(t, err)

	var events []graph.Event
	for ev, err := range run.Stream(t.Context(), nil, graph.Events(graph.EventCustom), graph.CustomEvents(agentevent.EventSnapshot)) {
		require.NoError(t, err)
		events = append(events, ev)
	}
	require.Len(t, events, 1)
	ev := events[0]
	assert.Equal(t, agentevent.EventSnapshot, ev.Name())
	assert.Equal(t, "research/researcher/agent:researcher-1", ev.Path)
	assert.Equal(t, "researcher", ev.Node)
	snap, ok := ev.Data.(window.Snapshot)
	require.True(t, ok, "%T", ev.Data)
	assert.Equal(t, built, snap)

	assert.Equal(t, "researcher-1", snap.Agent)
	assert.Equal(t, 300, snap.Limit)
	var names []string
	for _, p := range snap.Parts {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"system", "index", "task", "history"}, names)
	index, _ := snap.Part("index")
	assert.True(t, index.Omitted)
	assert.Equal(t, []string{"memory/index"}, index.Refs)
	assert.Contains(t, index.Reason, "over budget: needs 404 tokens")
	for _, name := range []string{"system", "task", "history"} {
		p, _ := snap.Part(name)
		assert.True(t, p.Included, name)
		assert.Positive(t, p.Tokens, name)
	}
}

func TestAssembleOutsideAGraphPublishesNothing(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	_, err := b.Assemble(t.Context(), snapshotRequest())
	require.NoError(t, err)
}

func TestSnapshotJSON(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	res, err := b.Assemble(t.Context(), snapshotRequest())
	require.NoError(t, err)
	data, err := json.MarshalIndent(res.Snapshot, "", "  ")
	require.NoError(t, err)
	golden(t, "snapshot.json", string(data)+"\n")
	var back window.Snapshot
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, res.Snapshot, back)
}
