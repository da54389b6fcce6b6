package metaprompt_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memory"
)

func ExampleExpander_Expand() {
	ctx := context.Background()
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"metaprompt:fact_checker": {{Text: "```markdown\n" + strings.Join([]string{
			"You check each claim in a draft against its cited sources.",
			"",
			"# Steps",
			"1. List the claims.",
			"2. Read each cited source with fetch_url and reason about whether it supports the claim.",
			"",
			"# Output Format",
			"A table with one row per claim: claim, evidence, verdict.",
			"",
			"# Notes",
			"- Mark a claim unverified when its source cannot be read.",
		}, "\n") + "\n```"}},
	}})
	exp, err := metaprompt.New(metaprompt.Config{
		Model: model, ModelName: "gpt-4o-mini",
		Cache: memory.New(store.Config{}), Owner: "alice",
	})
	if err != nil {
		panic(err)
	}
	brief := metaprompt.Brief{
		Name:  "fact_checker",
		Role:  "fact checker",
		Tools: []metaprompt.Tool{{Name: "fetch_url", Description: "Fetch a web page as text."}},
		Task:  "Check the claims of the draft report against their sources.",
	}
	p, err := exp.Expand(ctx, brief)
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Split(p.Text, "\n")[0])
	again, _ := exp.Expand(ctx, brief)
	fmt.Println("cached:", again.Cached, "model calls:", len(model.Calls()))
	// Output:
	// You check each claim in a draft against its cited sources.
	// cached: true model calls: 1
}

func ExampleCheck() {
	for _, p := range metaprompt.Check("# Researcher\n\n# Steps\n1. Search.\n") {
		fmt.Println(strings.TrimSpace(string(p.Kind) + " " + p.Section))
	}
	// Output:
	// first_line
	// missing_section # Output Format
	// missing_section # Notes
	// no_reasoning
}
