package workflows_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/workflows"
)

func ExampleParse() {
	src := `
apiVersion: coorflow/v1
name: review
input: topic
output: draft
state:
  topic: {type: string}
  draft: {type: string}
  score: {type: number, minimum: 0, maximum: 1}
models:
  basic: {provider: openai, model: gpt-4o-mini}
nodes:
  write: {type: llm, prompt: "Write about {{ state.topic }}.", output: draft}
  grade: {type: llm, prompt: "Grade 0 to 1: {{ state.draft }}", output: score}
edges:
  - {from: start, to: write}
  - {from: write, to: grade}
  - from: grade
    branches:
      - {when: "state.score < 0.8", to: write}
      - {to: end}
`
	f, err := workflows.Parse("review.yaml", []byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	// A scripted model stands for a provider here (workflows.Resolve finds
	// the real ones).
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"write": {{Text: "A first draft."}, {Text: "A better draft."}},
		"grade": {{Text: "0.5"}, {Text: "Score: 0.9"}},
	}})
	models, _ := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model}})
	ctx := context.Background()
	r, err := f.Compile(ctx, workflows.Env{Models: models})
	if err != nil {
		fmt.Println(err)
		return
	}
	in, _ := f.Input(r, f.InputChannel(), "graphs")
	for ev, err := range r.Stream(ctx, in, graph.Events(graph.EventNodeEnd, graph.EventRunEnd)) {
		switch {
		case err != nil:
			fmt.Println(err)
		case ev.Kind == graph.EventNodeEnd:
			fmt.Println("ran", ev.Node)
		default:
			draft, _ := ev.State.Value(f.OutputChannel())
			fmt.Println(draft)
		}
	}

	_, err = workflows.Parse("bad.yaml", []byte("apiVersion: coorflow/v1\nname: bad\nnodes:\n  a: {type: lmm}\nedges: [{from: start, to: a}]\n"))
	fmt.Println(err)
	// Output:
	// ran write
	// ran grade
	// ran write
	// ran grade
	// A better draft.
	// workflows: bad.yaml:4:13: nodes.a.type: "lmm" is not one of llm, react, coordinator, planner, human_review, team, reporter, router, tool, subgraph, go, interrupt, background_investigator, research_team, worker (did you mean "llm"?)
}

func ExampleLoad() {
	f, err := workflows.Load("testdata/example/brief.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	// The scripted model plays the coordinator, which hands the task off,
	// and the llm node write.
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"coordinator": {{ToolCalls: []scripted.ToolCall{{Name: "handoff_to_planner", Arguments: `{"task":"SQLite for agents","locale":"en-US"}`}}}},
		"write":       {{Text: "SQLite keeps an agent's state in one file.\nIt suits one writer."}},
	}})
	models, _ := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model}})
	ctx := context.Background()
	r, err := f.Compile(ctx, workflows.Env{Models: models})
	if err != nil {
		fmt.Println(err)
		return
	}
	var channels []string
	for _, c := range r.Channels() {
		channels = append(channels, c.Name())
	}
	fmt.Println("channels:", strings.Join(channels, ", "))

	in, _ := f.Input(r, f.InputChannel(), "Could we use SQLite for our agents? thanks!")
	res, err := r.Invoke(ctx, in)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("write was asked:", strings.TrimSpace(model.CallsFor("write")[0].Prompt()))
	answer, _ := res.State.Value(f.OutputChannel())
	fmt.Println(answer)
	// Output:
	// channels: input, messages, request, locale, answer, turn, turns
	// write was asked: Write a two-line brief on: SQLite for agents
	// SQLite keeps an agent's state in one file.
	// It suits one writer.
}
