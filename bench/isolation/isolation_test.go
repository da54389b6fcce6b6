package isolation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/teamhook"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
)

// output is a realistic step result of about 2,000 tokens with one key
// fact in the middle.
func output(id string) string {
	var b strings.Builder
	for i := range 40 {
		if i == 20 {
			fmt.Fprintf(&b, "The key finding of this step is KEYFACT-%s, confirmed by two independent sources. ", id)
		}
		fmt.Fprintf(&b, "Paragraph %d of step %s reviews measurements, vendor documentation and field reports, comparing latency, durability and operating cost across the candidate systems under sustained load. ", i, id)
	}
	return b.String()
}

// plan12 has four threads of three chained steps: t1a -> t1b -> t1c, ...
func plan12() *plan.Plan {
	p := &plan.Plan{Title: "Twelve steps", Locale: "en-US"}
	for th := 1; th <= 4; th++ {
		prev := ""
		for _, s := range []string{"a", "b", "c"} {
			id := fmt.Sprintf("t%d%s", th, s)
			st := plan.Step{ID: id, AgentName: "researcher", Title: "Step " + id, Description: "Investigate " + id + ".", StepType: plan.StepResearch}
			if prev != "" {
				st.DependsOn = []string{prev}
			}
			p.Steps = append(p.Steps, st)
			prev = id
		}
	}
	return p
}

// sharedHistory is CoorAgent's shared history: a step sees the results of
// every step completed before it.
func sharedHistory(p *plan.Plan, step plan.Step) []string {
	var ids []string
	for _, s := range p.Steps {
		if s.Result != nil && s.ID != step.ID {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// run runs the team then the reporter on plan12 and returns the model.
func run(t *testing.T, shareAll bool) *scripted.Model {
	t.Helper()
	byStep := func(c scripted.Call) string {
		p := c.Prompt()
		i := strings.Index(p, "This is step ")
		if i < 0 {
			return ""
		}
		return strings.Fields(p[i+len("This is step "):])[0]
	}
	var rules []scripted.Rule
	for _, st := range plan12().Steps {
		ans, _ := json.Marshal(map[string]any{"reasoning": "read and compared sources", "result": output(st.ID),
			"summary": "KEYFACT-" + st.ID + " holds", "confidence": 0.9})
		id := st.ID
		rules = append(rules, scripted.Rule{Agent: "researcher", Match: func(c scripted.Call) bool { return byStep(c) == id },
			Reply: scripted.Reply{Text: string(ans)}})
	}
	model := scripted.New(scripted.Script{Rules: rules, Agents: map[string][]scripted.Reply{"reporter": {{Text: "# Report"}}}})
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model, Profile: llm.Profile{Model: "scripted", MaxInputTokens: 128_000}}})
	require.NoError(t, err)
	st := smem.New(store.Config{})
	cfg := factory.TeamConfig{Registry: factory.NewRegistry(st, "acme"), Models: ms, Store: st}
	if shareAll {
		cfg.StepConcurrency = 1 // one step at a time, in plan order
		teamhook.SetSees(&cfg, sharedHistory)
	}
	team, err := factory.Team(cfg)
	require.NoError(t, err)
	reporter, err := nodes.Reporter(nodes.ReporterConfig{Model: model, Read: func(ctx context.Context, ref string) (string, error) {
		it, err := st.Get(ctx, "acme", ref)
		return it.Content, err
	}})
	require.NoError(t, err)
	g := graph.New("coor", nodes.Channels()...)
	g.AddNode("team", team)
	g.AddNode("reporter", reporter)
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", "reporter")
	g.AddEdge("reporter", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(plan12()), nodes.Request.Set("Compare the systems")))
	require.NoError(t, err)
	return model
}

func TestIsolationSavesPromptTokens(t *testing.T) {
	isolated := run(t, false)
	shared := run(t, true)
	iu, su := isolated.Usage(), shared.Usage()
	saved := 1 - float64(iu.PromptTokens)/float64(su.PromptTokens)
	t.Logf("prompt tokens, 12 steps of ~%d tokens each:", llm.EstimateTokens(output("x")))
	t.Logf("  shared history (CoorAgent): %7d  (steps %d, reporter %d)", su.PromptTokens, su.PromptTokens-shared.UsageFor("reporter").PromptTokens, shared.UsageFor("reporter").PromptTokens)
	t.Logf("  isolated (coorflow):        %7d  (steps %d, reporter %d)", iu.PromptTokens, iu.PromptTokens-isolated.UsageFor("reporter").PromptTokens, isolated.UsageFor("reporter").PromptTokens)
	t.Logf("  saved: %.1f%%", 100*saved)
	assert.GreaterOrEqual(t, saved, 0.60, "at least 60% fewer prompt tokens")

	report := isolated.CallsFor("reporter")[0].Prompt()
	for _, st := range plan12().Steps {
		assert.Contains(t, report, "KEYFACT-"+st.ID, "every step's key fact reaches the reporter")
	}
	// The baseline: a step sees every result so far, other threads' too.
	for _, c := range shared.CallsFor("researcher") {
		if p := c.Prompt(); strings.Contains(p, "This is step t2a") {
			assert.Contains(t, p, "KEYFACT-t1a")
			assert.Contains(t, p, "KEYFACT-t1c")
		}
	}
	// Isolation itself: a step sees its own thread only.
	for _, c := range isolated.CallsFor("researcher") {
		p := c.Prompt()
		if strings.Contains(p, "This is step t1c") {
			assert.Contains(t, p, "KEYFACT-t1b")
			assert.NotContains(t, p, "KEYFACT-t2")
			assert.NotContains(t, p, "KEYFACT-t1a", "only its direct dependency")
		}
	}
}
