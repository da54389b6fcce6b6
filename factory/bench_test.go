package factory_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
)

// BenchmarkTeamIndependentSteps runs K independent steps whose model calls
// each take 200ms, all at once (the team) and one after another (as
// CoorAgent runs them), and reports the wall time per run and the prompt
// tokens per step.
//
//	go test -run '^$' -bench TeamIndependentSteps -benchtime 3x ./factory
func BenchmarkTeamIndependentSteps(b *testing.B) {
	for _, k := range []int{1, 2, 4, 8, 16} {
		for _, mode := range []string{"concurrent", "sequential"} {
			b.Run(fmt.Sprintf("K=%d/%s", k, mode), func(b *testing.B) {
				pl := &plan.Plan{Title: "Independent"}
				for i := range k {
					pl.Steps = append(pl.Steps, plan.Step{ID: fmt.Sprintf("s%d", i), AgentName: "researcher",
						Title: "Look up", Description: fmt.Sprintf("Look up fact %d.", i), StepType: plan.StepResearch})
				}
				reply := answer("FACT", 0.95)
				var tokens int
				b.ReportAllocs()
				for b.Loop() {
					model := scripted.New(scripted.Script{Latency: 200 * time.Millisecond, Default: &reply})
					ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model}})
					if err != nil {
						b.Fatal(err)
					}
					st := smem.New(store.Config{})
					cfg := factory.TeamConfig{Registry: factory.NewRegistry(st, "acme"), Models: ms, Store: st}
					if mode == "sequential" {
						cfg.StepConcurrency = 1
					}
					team, err := factory.Team(cfg)
					if err != nil {
						b.Fatal(err)
					}
					g := graph.New("bench", nodes.Channels()...)
					g.AddNode("team", team)
					g.AddEdge(graph.Start, "team")
					g.AddEdge("team", graph.End)
					r, err := g.Compile()
					if err != nil {
						b.Fatal(err)
					}
					if _, err := r.Invoke(b.Context(), graph.Input(nodes.PlanKey.Set(pl))); err != nil {
						b.Fatal(err)
					}
					tokens = model.Usage().PromptTokens
				}
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
				b.ReportMetric(float64(tokens)/float64(k), "prompt-tokens/step")
			})
		}
	}
}
