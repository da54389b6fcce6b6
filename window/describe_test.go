package window_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/window"
)

// snapshotsOf runs call in a node of a graph and returns the snapshots it
// published.
func snapshotsOf(t *testing.T, call func(ctx context.Context) error) []window.Snapshot {
	t.Helper()
	g := graph.New("g")
	g.AddNode("n", func(ctx context.Context, _ graph.State) (graph.Command, error) {
		return graph.Command{}, call(llm.WithAgent(ctx, "planner"))
	})
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	run, err := g.Compile()
	require.NoError(t, err)
	var snaps []window.Snapshot
	for ev, err := range run.Stream(t.Context(), nil, graph.Events(graph.EventCustom), graph.CustomEvents(agentevent.EventSnapshot)) {
		require.NoError(t, err)
		snaps = append(snaps, ev.Data.(window.Snapshot))
	}
	return snaps
}

func answering(n int) *scripted.Model {
	replies := make([]scripted.Reply, n)
	for i := range replies {
		replies[i] = scripted.Reply{Text: "ok"}
	}
	return scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"planner": replies}})
}

// An agent that sends its messages as they are records what each call
// saw: system, task and history, whole, with the tokens sent.
func TestObservePublishesWhatACallSentAsItIs(t *testing.T) {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You plan."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Plan a trip to Lyon."),
		toolCall("c1", "web_search", `{"query":"Lyon"}`), toolResult("c1", "web_search", "Lyon is in France."),
	}
	model := window.Observe(llm.Observe(answering(1), llm.ModelInfo{Tier: "basic"}))
	snaps := snapshotsOf(t, func(ctx context.Context) error {
		_, err := model.GenerateContent(ctx, msgs)
		return err
	})
	require.Len(t, snaps, 1)
	s := snaps[0]
	assert.Equal(t, "planner", s.Agent)
	assert.Equal(t, 4, s.Messages)
	assert.Zero(t, s.Limit, "no known limit")
	assert.Equal(t, llm.EstimateMessages(msgs), s.TotalTokens)
	assert.Equal(t, s.TotalTokens, s.FullTokens, "nothing left out")
	assert.Empty(t, s.Policies)
	var names []string
	for _, p := range s.Parts {
		names = append(names, p.Name)
		assert.True(t, p.Included, p.Name)
		assert.Positive(t, p.Tokens, p.Name)
		assert.Equal(t, p.FullTokens, p.Tokens, p.Name)
	}
	assert.Equal(t, []string{"system", "task", "history"}, names)
	d := window.Describe(t.Context(), "planner", msgs)
	d.Time = s.Time
	assert.Equal(t, s, d, "Describe is what Observe publishes")
}

// A call whose window a Builder assembled has the Builder's snapshot, not
// a second one; wrapping twice publishes once.
func TestACallHasOneSnapshot(t *testing.T) {
	b := window.New(window.Config{})
	req := window.Request{Budget: window.Budget{MaxInputTokens: 4000}, Parts: []window.Part{
		{Name: "system", Kind: window.KindSystem, Text: "You plan.", Required: true},
		{Name: "task", Kind: window.KindTask, Text: "Plan a trip.", Required: true},
	}}
	tests := []struct {
		name  string
		call  func(ctx context.Context, m llms.Model) error
		limit int
	}{
		{"through a Builder", func(ctx context.Context, m llms.Model) error {
			_, _, err := b.Generate(ctx, window.Observe(m), req)
			return err
		}, 4000},
		{"wrapped twice", func(ctx context.Context, m llms.Model) error {
			_, err := window.Observe(window.Observe(m)).GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Hi.")})
			return err
		}, 0},
		{"wrapped around llm.Observe around another", func(ctx context.Context, m llms.Model) error {
			inner := llm.Observe(window.Observe(m), llm.ModelInfo{})
			_, err := window.Observe(inner).GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Hi.")})
			return err
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snaps := snapshotsOf(t, func(ctx context.Context) error { return tt.call(ctx, answering(1)) })
			require.Len(t, snaps, 1)
			assert.Equal(t, tt.limit, snaps[0].Limit)
		})
	}
}

// Outside a graph a wrapped model is the model: nothing is published and
// the answer is the model's.
func TestObserveOutsideAGraph(t *testing.T) {
	resp, err := window.Observe(answering(1)).GenerateContent(llm.WithAgent(t.Context(), "planner"),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Hi.")})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Choices[0].Content)
}
