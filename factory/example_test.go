package factory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memory"
)

// A team runs a two-step plan: the built-in researcher studies the
// market, then a pricing analyst — an agent the plan asks for and the
// team builds first — sets a price from the researcher's handoff. The
// model is scripted, so the run is the same every time.
func ExampleTeam() {
	ctx := context.Background()
	reply := func(v map[string]any) scripted.Reply {
		b, _ := json.Marshal(v)
		return scripted.Reply{Text: string(b)}
	}
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		// The builder chooses the new agent's tier, tools and brief.
		"builder:pricing_analyst": {reply(map[string]any{"thought": "prices need market data", "tier": "basic", "tools": []string{},
			"description": "Sets prices from market data.", "brief": "You set the price of one product from its market."})},
		// Each step's agent ends with its result as JSON.
		"researcher": {reply(map[string]any{"reasoning": "compared three shops", "result": "Rivals sell at 900 to 1,300 EUR.",
			"summary": "Rivals sell at 900 to 1,300 EUR.", "confidence": 0.9})},
		"pricing_analyst": {reply(map[string]any{"reasoning": "placed it mid-market", "result": "Price it at 1,090 EUR.",
			"summary": "Price it at 1,090 EUR.", "confidence": 0.85})},
	}})
	models, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model}})
	if err != nil {
		panic(err)
	}
	st := memory.New(store.Config{})
	registry := factory.NewRegistry(st, "acme")
	team, err := factory.Team(factory.TeamConfig{
		Registry: registry, Models: models, Store: st,
		Builder: &factory.Builder{Model: model, WritePrompt: func(_ context.Context, a factory.Agent, _ string) (string, error) {
			return a.Brief, nil // ExpandWith writes a full prompt with the meta-prompt stage
		}},
	})
	if err != nil {
		panic(err)
	}
	g := graph.New("pricing", nodes.Channels()...)
	g.AddNode("team", team)
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile()
	if err != nil {
		panic(err)
	}

	pl := &plan.Plan{Title: "Price the e-bike", Locale: "en-US",
		NewAgentsNeeded: []plan.AgentSpec{{Name: "pricing_analyst", Role: "pricing analyst",
			Capabilities: "reads market data", Contribution: "the price"}},
		Steps: []plan.Step{
			{ID: "market", AgentName: "researcher", Title: "Market", Description: "Find what rivals charge.", StepType: plan.StepResearch},
			{ID: "price", AgentName: "pricing_analyst", Title: "Price", Description: "Set the price.", StepType: plan.StepProcessing,
				DependsOn: []string{"market"}},
		}}
	res, err := r.Invoke(ctx, graph.Input(nodes.PlanKey.Set(pl)))
	if err != nil {
		panic(err)
	}
	for _, f := range nodes.Findings.Get(res.State) {
		fmt.Printf("%s by %s: %s\n", f.StepID, f.Agent, f.Summary)
	}
	built, err := registry.Get(ctx, "pricing_analyst")
	if err != nil {
		panic(err)
	}
	fmt.Printf("built %s (%s tier): %s\n", built.Name, built.Tier, built.Description)
	handed := strings.Contains(model.CallsFor("pricing_analyst")[0].Prompt(), "Rivals sell at 900 to 1,300 EUR.")
	fmt.Println("the analyst was handed the market result:", handed)
	// Output:
	// market by researcher: Rivals sell at 900 to 1,300 EUR.
	// price by pricing_analyst: Price it at 1,090 EUR.
	// built pricing_analyst (basic tier): Sets prices from market data.
	// the analyst was handed the market result: true
}
