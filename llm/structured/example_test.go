package structured_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/llm/structured"
)

func ExampleGenerate() {
	type Step struct {
		Title string `json:"title" jsonschema:"required"`
		Kind  string `json:"kind" jsonschema:"required,enum=research|processing"`
	}
	type Plan struct {
		Steps []Step `json:"steps" jsonschema:"required,description=At most 3 steps"`
	}

	// The model forgets a step's kind, then fixes its reply.
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"": {
		{Text: "<think>Two steps.</think>```json\n{\"steps\": [{\"title\": \"Search\"}]}\n```"},
		{Text: `{"steps": [{"title": "Search", "kind": "research"}]}`},
	}}})
	plan, err := structured.Generate[Plan](context.Background(), model, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "Plan a report on Go generics.")})
	fmt.Println(plan, err)
	fmt.Println(model.Calls()[1].Messages[2].Parts[0])
	// Output:
	// {[{Search research}]} <nil>
	// Your reply could not be used:
	// - at /steps/0: missing properties: 'kind'
	// Reply again with only the corrected JSON, matching the schema, with no code fences and no other text.
}
