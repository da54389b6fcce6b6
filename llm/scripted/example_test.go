package scripted_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

func Example() {
	m := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"researcher": {
			{ToolCalls: []scripted.ToolCall{{Name: "web_search", Arguments: `{"query":"go 1.18"}`}}},
			{Text: "Go 1.18 added generics."},
		},
	}})
	ctx := llm.WithAgent(context.Background(), "researcher")
	search := llms.WithTools([]llms.Tool{{Type: "function",
		Function: &llms.FunctionDefinition{Name: "web_search"}}})

	resp, _ := m.GenerateContent(ctx, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "What did Go 1.18 add?")}, search)
	tc := resp.Choices[0].ToolCalls[0]
	fmt.Println(tc.ID, tc.FunctionCall.Name, tc.FunctionCall.Arguments)

	answer, _ := m.Call(ctx, "(tool result)", search)
	fmt.Println(answer)

	_, err := m.Call(ctx, "anything else?")
	fmt.Println(err)
	// Output:
	// call_researcher_1_1 web_search {"query":"go 1.18"}
	// Go 1.18 added generics.
	// scripted: agent "researcher" turn 3: script exhausted: 2 replies scripted, all used
}
