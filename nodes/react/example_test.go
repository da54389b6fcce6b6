package react_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/tools"
)

// weather is the tool of the examples; its argument schema is derived
// from the struct.
var weather = tools.Typed("weather", "Returns today's weather in a city.", nil,
	func(ctx context.Context, args struct {
		City string `json:"city" jsonschema:"required,description=The city, in English"`
	}) (string, error) {
		return "sunny, 24°C in " + args.City, nil
	})

// An agent with a tool, on a scripted model: the model asks for the tool,
// the agent runs it and gives the result back, the model answers.
func Example() {
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"forecaster": {
		{ToolCalls: []scripted.ToolCall{{Name: "weather", Arguments: `{"city":"Lyon"}`}}},
		{Text: "It is sunny in Lyon: 24°C."},
	}}})
	reg, err := tools.NewRegistry(weather)
	if err != nil {
		panic(err)
	}
	agent, err := react.New(react.Config{Name: "forecaster", Model: model, SystemPrompt: "You answer with the weather tool.", Tools: reg})
	if err != nil {
		panic(err)
	}
	res, err := agent.Run(context.Background(), react.Task{Input: "What's the weather in Lyon?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Output)
	fmt.Println("turns:", res.Turns, "tool calls:", res.ToolCalls)
	for _, m := range res.Added {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				fmt.Println("called:", p.FunctionCall.Name, p.FunctionCall.Arguments)
			case llms.ToolCallResponse:
				fmt.Println("result:", p.Content)
			}
		}
	}
	// Output:
	// It is sunny in Lyon: 24°C.
	// turns: 2 tool calls: 1
	// called: weather {"city":"Lyon"}
	// result: sunny, 24°C in Lyon
}

// A chat: the agent as a graph over react.Messages, kept in a thread by a
// saver, so the second turn sees the first.
func ExampleGraph() {
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"forecaster": {
		{ToolCalls: []scripted.ToolCall{{Name: "weather", Arguments: `{"city":"Lyon"}`}}},
		{Text: "Sunny in Lyon: 24°C."},
		{Text: "Yes: at 24°C and sunny, a walk by the Saône is a fine idea."},
	}}})
	reg, err := tools.NewRegistry(weather)
	if err != nil {
		panic(err)
	}
	chat, err := react.Graph(react.Config{Name: "forecaster", Model: model, Tools: reg}, graph.WithSaver(memory.New()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, question := range []string{"Weather in Lyon?", "Good for a walk, then?"} {
		in := graph.Input(graph.AppendTo(react.Messages, llms.TextParts(llms.ChatMessageTypeHuman, question)))
		res, err := chat.Invoke(ctx, in, graph.Thread("walk"))
		if err != nil {
			panic(err)
		}
		msgs := react.Messages.Get(res.State)
		answer := msgs[len(msgs)-1].Parts[0].(llms.TextContent).Text
		fmt.Printf("%s -> %s (%d messages)\n", question, answer, len(msgs))
	}
	second := model.CallsFor("forecaster")[2]
	fmt.Println("turn 2 saw turn 1:", strings.Contains(second.Prompt(), "Sunny in Lyon"))
	// Output:
	// Weather in Lyon? -> Sunny in Lyon: 24°C. (4 messages)
	// Good for a walk, then? -> Yes: at 24°C and sunny, a walk by the Saône is a fine idea. (6 messages)
	// turn 2 saw turn 1: true
}
