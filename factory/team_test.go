package factory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
	ssqlite "github.com/coorflow/coorflow/store/sqlite"
)

func fullScript() scripted.Script {
	builds := scripted.NewBarrier(2) // both builds in flight at once
	branches := scripted.NewBarrier(2)
	withWait := func(r scripted.Reply, b *scripted.Barrier) scripted.Reply { r.Wait = b.Wait; return r }
	return scripted.Script{Agents: map[string][]scripted.Reply{
		"builder:market_analyst":    {withWait(buildReply("market_analyst", "web_search", "teleport"), builds)},
		"builder:tech_analyst":      {withWait(buildReply("tech_analyst"), builds)},
		"metaprompt:market_analyst": {metaReply("market_analyst")},
		"metaprompt:tech_analyst":   {metaReply("tech_analyst")},
		"market_analyst":            {withWait(answer("FACT-A1", 0.9), branches), answer("FACT-A2", 0.9)},
		"tech_analyst":              {withWait(answer("FACT-B1", 0.9), branches), answer("FACT-B2", 0.95)},
		"researcher":                {answer("FACT-A3", 0.85)},
		"coder":                     {answer("FACT-B3", 0.99)},
	}}
}

func TestTeamBuildsAgentsAndRunsIndependentBranchesConcurrently(t *testing.T) {
	e := newEnv(t, smem.New(store.Config{}), fullScript())
	r := e.team(t, factory.TeamConfig{})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a barrier that never opens fails here
	defer cancel()

	var created []string
	var warnings []string
	var final graph.State
	for ev, err := range r.Stream(ctx, graph.Input(nodes.PlanKey.Set(twoBranches()))) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case agentevent.Created:
			created = append(created, d.Agent)
		case agentevent.Warning:
			warnings = append(warnings, d.Value.(string))
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	assert.ElementsMatch(t, []string{"market_analyst", "tech_analyst"}, created)
	assert.Equal(t, []string{`agent "market_analyst" asked for tools that do not exist and were dropped: teleport`}, warnings)
	assert.GreaterOrEqual(t, e.model.MaxInFlight(), 2, "builds and branches overlapped")

	pl := nodes.PlanKey.Get(final)
	for _, s := range pl.Steps {
		require.NotNil(t, s.Result, s.ID)
		assert.Equal(t, plan.StepDone, s.Result.Status, s.ID)
		assert.NotEmpty(t, s.Result.Ref, "the full output is on the board")
		assert.Empty(t, s.Result.Output, "the plan keeps a reference, not the output")
	}
	assert.Equal(t, "found FACT-B3", pl.Step("b3").Result.Summary)
	assert.Len(t, nodes.Findings.Get(final), 6)

	// Isolation: a worker sees only its own task and its dependencies.
	for _, c := range e.model.Calls() {
		prompt := c.Prompt()
		switch c.Agent {
		case "market_analyst", "researcher":
			assert.NotContains(t, prompt, "FACT-B", "%s saw the other branch", c.Agent)
		case "tech_analyst", "coder":
			assert.NotContains(t, prompt, "FACT-A", "%s saw the other branch", c.Agent)
		}
	}
	a2 := e.model.CallsFor("market_analyst")[1].Prompt()
	assert.Contains(t, a2, "The result is FACT-A1.", "a2 got a1's handoff")
	a3 := e.model.CallsFor("researcher")[0].Prompt()
	assert.Contains(t, a3, "FACT-A2")
	assert.NotContains(t, a3, "FACT-A1", "a3 depends on a2 only")

	got, err := e.reg.Get(t.Context(), "market_analyst")
	require.NoError(t, err)
	assert.Equal(t, []string{"web_search"}, got.Tools, "only registered tools")
	assert.Equal(t, "reasoning", got.Tier)
	assert.True(t, strings.HasPrefix(got.Prompt, "You are market_analyst"), got.Prompt)

	out, err := e.store.Get(t.Context(), "acme", pl.Step("a1").Result.Ref)
	require.NoError(t, err)
	assert.Equal(t, "The result is FACT-A1.", out.Content)
}

func TestASecondRunReusesTheBuiltAgentsWithoutABuilderOrMetaPromptCall(t *testing.T) {
	s := smem.New(store.Config{})
	first := newEnv(t, s, fullScript())
	_, err := first.team(t, factory.TeamConfig{}).Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(twoBranches())))
	require.NoError(t, err)

	// The second script has step answers only: a builder or meta-prompt
	// call would fail for want of a reply.
	second := newEnv(t, s, scripted.Script{Agents: map[string][]scripted.Reply{
		"market_analyst": {answer("FACT-A1", 0.9), answer("FACT-A2", 0.9)},
		"tech_analyst":   {answer("FACT-B1", 0.9), answer("FACT-B2", 0.9)},
		"researcher":     {answer("FACT-A3", 0.9)},
		"coder":          {answer("FACT-B3", 0.9)},
	}})
	res, err := second.team(t, factory.TeamConfig{}).Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(twoBranches())))
	require.NoError(t, err)
	assert.True(t, nodes.PlanKey.Get(res.State).Done())
	for _, a := range second.model.Agents() {
		assert.False(t, strings.HasPrefix(a, "builder:") || strings.HasPrefix(a, "metaprompt:"), a)
	}
}

func TestAnInterruptInsideTheTeamResumedInANewProcessRedoesNoFinishedWork(t *testing.T) {
	dir := t.TempDir()
	open := func() (graph.Saver, store.Store) {
		saver, err := sqlite.Open(t.Context(), filepath.Join(dir, "checkpoints.db"))
		require.NoError(t, err)
		st, err := ssqlite.Open(t.Context(), filepath.Join(dir, "store.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = saver.Close(); _ = st.Close() })
		return saver, st
	}
	script := fullScript()
	// tech_analyst gets ask_human, and b2 asks before answering.
	barrier := scripted.NewBarrier(2)
	b := buildReply("tech_analyst", "ask_human")
	b.Wait = barrier.Wait
	script.Agents["builder:tech_analyst"] = []scripted.Reply{b}
	m := buildReply("market_analyst", "web_search")
	m.Wait = barrier.Wait
	script.Agents["builder:market_analyst"] = []scripted.Reply{m}
	script.Agents["tech_analyst"] = []scripted.Reply{script.Agents["tech_analyst"][0], // b1, in step with a1
		{ToolCalls: []scripted.ToolCall{{Name: "ask_human", Arguments: `{"question":"Which vendor?"}`}}}}
	saver, st := open()
	e := newEnv(t, st, script)
	r := e.team(t, factory.TeamConfig{}, graph.WithSaver(saver))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := r.Invoke(ctx, graph.Input(nodes.PlanKey.Set(twoBranches())), graph.Thread("t1"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "coor/team/step:b2/agent:tech_analyst/tool:call_tech_analyst_2_1", res.Interrupts[0].Path)
	firstCalls := len(e.model.Calls())

	// A new process: new saver and store handles, a new graph, and a model
	// scripted with only what is left to do.
	saver2, st2 := open()
	rest := newEnv(t, st2, scripted.Script{Agents: map[string][]scripted.Reply{
		"tech_analyst": {answer("FACT-B2", 0.9)},
		"coder":        {answer("FACT-B3", 0.9)},
	}})
	r2 := rest.team(t, factory.TeamConfig{}, graph.WithSaver(saver2))
	res, err = r2.Invoke(t.Context(), nil, graph.Thread("t1"), graph.Resume("Vendor X"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	pl := nodes.PlanKey.Get(res.State)
	assert.True(t, pl.Done())
	assert.Equal(t, "found FACT-B3", pl.Step("b3").Result.Summary)
	assert.Len(t, rest.model.Calls(), 2, "only b2's last turn and b3 ran")
	assert.Equal(t, []string{"Vendor X"}, toolResults(rest.model.CallsFor("tech_analyst")[0]), "the answer reached the agent as the tool's result")
	assert.Greater(t, firstCalls, 8)
}

func TestAFailedStepIsRecordedAndItsDependentsSkipped(t *testing.T) {
	e := newEnv(t, smem.New(store.Config{}), fullScriptFailing())
	res, err := e.team(t, factory.TeamConfig{}).Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(twoBranches())))
	require.NoError(t, err)
	pl := nodes.PlanKey.Get(res.State)
	assert.Equal(t, plan.StepFailed, pl.Step("b1").Result.Status)
	assert.Contains(t, pl.Step("b1").Result.Error, "provider exploded")
	assert.Equal(t, plan.StepSkipped, pl.Step("b2").Result.Status)
	assert.Equal(t, plan.StepSkipped, pl.Step("b3").Result.Status)
	assert.Equal(t, plan.StepDone, pl.Step("a3").Result.Status, "the other branch went on")

	ff := newEnv(t, smem.New(store.Config{}), fullScriptFailing())
	_, err = ff.team(t, factory.TeamConfig{FailFast: true}).Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(twoBranches())))
	require.ErrorIs(t, err, factory.ErrStepFailed)
	assert.Contains(t, err.Error(), "factory: step failed: b1: react: agent \"tech_analyst\", turn 1:")
}

func fullScriptFailing() scripted.Script {
	s := fullScript()
	s.Agents["tech_analyst"] = []scripted.Reply{{Err: fmt.Errorf("provider exploded")}}
	s.Agents["market_analyst"] = []scripted.Reply{answer("FACT-A1", 0.9), answer("FACT-A2", 0.9)}
	return s
}

func TestALowConfidenceResultRunsOnceMoreDeeper(t *testing.T) {
	pl := &plan.Plan{Title: "One", Steps: []plan.Step{{ID: "s1", AgentName: "researcher", Title: "Check", Description: "Check it.", StepType: plan.StepResearch}}}
	e := newEnv(t, smem.New(store.Config{}), scripted.Script{Agents: map[string][]scripted.Reply{
		"researcher": {answer("SHAKY", 0.4), answer("SOLID", 0.9)},
	}})
	res, err := e.team(t, factory.TeamConfig{}).Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(pl)))
	require.NoError(t, err)
	r := nodes.PlanKey.Get(res.State).Step("s1").Result
	assert.Equal(t, "found SOLID", r.Summary)
	assert.Equal(t, 2, r.Attempts)
	second := e.model.CallsFor("researcher")[1].Prompt()
	assert.Contains(t, second, "A first attempt reached confidence 0.40")
}

var _ = memory.New

func TestAFixedPlanRunsWithTheAgentsGivenToTheTeamAndLeavesTheRegistryAlone(t *testing.T) {
	s := smem.New(store.Config{})
	// Step answers only: a builder or meta-prompt call would fail for want
	// of a reply.
	e := newEnv(t, s, scripted.Script{Agents: map[string][]scripted.Reply{
		"pricing_analyst": {answer("PRICE", 0.9)},
		"researcher":      {answer("MARKET", 0.9)},
	}})
	given := []factory.Agent{
		{Name: "pricing_analyst", Description: "Prices things.", Tier: "reasoning", Tools: []string{"web_search"}, Prompt: "You price one product at a time."},
		{Name: "researcher", Description: "A researcher of our own.", Tier: "basic", Prompt: "You are our researcher, not the built-in one."},
	}
	fixed := func(ctx context.Context, st graph.State) (*plan.Plan, error) {
		return &plan.Plan{Title: "Price " + nodes.Request.Get(st), Locale: "en-US", Steps: []plan.Step{
			{ID: "s1", AgentName: "researcher", Title: "Market", Description: "Study the market of " + nodes.Request.Get(st) + ".", StepType: plan.StepResearch},
			{ID: "s2", AgentName: "pricing_analyst", Title: "Price", Description: "Price it.", StepType: plan.StepProcessing, DependsOn: []string{"s1"}},
		}}, nil
	}
	r := e.team(t, factory.TeamConfig{Agents: given, Plan: fixed})
	res, err := r.Invoke(t.Context(), graph.Input(nodes.Request.Set("bicycles")))
	require.NoError(t, err)

	pl := nodes.PlanKey.Get(res.State)
	require.NotNil(t, pl, "the fixed plan is written with its results")
	assert.Equal(t, "Price bicycles", pl.Title)
	assert.True(t, pl.Done())
	assert.Equal(t, "found PRICE", pl.Step("s2").Result.Summary)
	assert.Equal(t, []string{"pricing_analyst", "researcher"}, e.model.Agents(), "no builder or meta-prompt call")

	calls := e.model.CallsFor("researcher")
	require.Len(t, calls, 1)
	assert.Contains(t, calls[0].Prompt(), "You are our researcher, not the built-in one.", "a given agent shadows the registry's")
	assert.Contains(t, calls[0].Prompt(), "Study the market of bicycles.")
	assert.Contains(t, e.model.CallsFor("pricing_analyst")[0].Prompt(), "MARKET", "handoffs work as usual")

	list, err := e.reg.List(t.Context())
	require.NoError(t, err)
	for _, a := range list {
		assert.True(t, a.Builtin, "nothing was written to the registry: %s", a.Name)
	}
}

func TestTheTeamRefusesBadGivenAgentsAndPlans(t *testing.T) {
	e := newEnv(t, smem.New(store.Config{}), scripted.Script{})
	cases := []struct {
		name string
		cfg  factory.TeamConfig
		want string
	}{
		{"duplicate agent", factory.TeamConfig{Agents: []factory.Agent{{Name: "a"}, {Name: "a"}}}, `factory: agent "a" is given to the team twice`},
		{"agent without name", factory.TeamConfig{Agents: []factory.Agent{{Prompt: "x"}}}, "factory: an agent given to the team has no name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Registry, tc.cfg.Models = e.reg, e.models(t)
			_, err := factory.Team(tc.cfg)
			assert.EqualError(t, err, tc.want)
		})
	}

	failing := func(context.Context, graph.State) (*plan.Plan, error) { return nil, fmt.Errorf("no request") }
	_, err := e.team(t, factory.TeamConfig{Plan: failing}).Invoke(t.Context(), nil)
	assert.ErrorContains(t, err, "factory: the team's plan: no request")
}
