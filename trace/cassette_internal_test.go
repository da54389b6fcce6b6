package trace

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

// The Cassette hashes requests with llm.EncodeRequest; the hash must be the
// one llm.Observe records, or no replay would match.
func TestRequestHashIsTheOneObserveRecords(t *testing.T) {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Add 2 and 3, then say \"done\" — ünïcode."),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.TextContent{Text: "Calling."},
			llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "add", Arguments: `{"a":2,"b":3}`}},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "add", Content: "5"}}},
		{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{llms.ImageURLContent{URL: "https://example.com/a.png"}}},
	}
	tools := []llms.Tool{
		{Type: "function", Function: &llms.FunctionDefinition{Name: "add", Parameters: map[string]any{"type": "object"}}},
		{Type: "function", Function: &llms.FunctionDefinition{Name: "search"}},
	}
	model := llm.Observe(scripted.New(scripted.Script{Default: &scripted.Reply{Text: "done"}}), llm.ModelInfo{Tier: "basic"})
	g := graph.New("h", graph.NewKey[string]("x"))
	g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
		_, err := model.GenerateContent(ctx, msgs, llms.WithTools(tools))
		return graph.Update(), err
	})
	g.AddEdge(graph.Start, "call")
	g.AddEdge("call", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	var recorded *llm.ModelCall
	for ev, err := range r.Stream(t.Context(), graph.Input(), graph.Events(graph.EventCustom), graph.CustomEvents(llm.EventModelCall)) {
		require.NoError(t, err)
		if mc, ok := ev.Data.(llm.ModelCall); ok {
			recorded = &mc
		}
	}
	require.NotNil(t, recorded)
	req, hash := llm.EncodeRequest(msgs, llms.CallOptions{Tools: tools})
	assert.Equal(t, recorded.Hash, hash)
	assert.JSONEq(t, string(recorded.Request), string(req))
}
