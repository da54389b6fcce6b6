package nodes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
)

func planJSON(t *testing.T, p map[string]any) scripted.Reply {
	t.Helper()
	b, err := json.Marshal(p)
	require.NoError(t, err)
	return scripted.Reply{Text: string(b)}
}

func step(id, agent string, deps ...string) map[string]any {
	if deps == nil {
		deps = []string{}
	}
	return map[string]any{"id": id, "agent_name": agent, "title": "Step " + id, "description": "Do " + id,
		"step_type": "research", "need_search": true, "depends_on": deps}
}

func planMap(steps []map[string]any, agents ...map[string]any) map[string]any {
	if agents == nil {
		agents = []map[string]any{}
	}
	return map[string]any{"title": "A plan", "thought": "think first", "locale": "en-US",
		"has_enough_context": false, "new_agents_needed": agents, "steps": steps}
}

// plannerGraph runs the planner between stub review and reporter nodes.
func plannerGraph(t *testing.T, model *scripted.Model, cfg nodes.PlannerConfig) *graph.Runnable {
	t.Helper()
	cfg.Model, cfg.Review, cfg.Reporter = model, "review", "reporter"
	p, err := nodes.Planner(cfg)
	require.NoError(t, err)
	g := graph.New("plan", nodes.Channels()...)
	g.AddNode("planner", p, graph.Destinations("review", "reporter"))
	g.AddNode("review", noopNode)
	g.AddNode("reporter", noopNode)
	g.AddEdge(graph.Start, "planner")
	g.AddEdge("review", graph.End)
	g.AddEdge("reporter", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func noopNode(context.Context, graph.State) (graph.Command, error) { return graph.Command{}, nil }

func TestPlannerRepairsAPlanWithACycleAndAnUnknownAgent(t *testing.T) {
	bad := planMap([]map[string]any{step("s1", "researcher", "s2"), step("s2", "ghost", "s1")})
	good := planMap([]map[string]any{step("s1", "researcher"), step("s2", "coder", "s1")})
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"planner": {planJSON(t, bad), planJSON(t, good)}}})
	r := plannerGraph(t, model, nodes.PlannerConfig{})
	res, err := r.Invoke(t.Context(), graph.Input(nodes.Request.Set("Compare two databases")))
	require.NoError(t, err)
	p := nodes.PlanKey.Get(res.State)
	require.Len(t, p.Steps, 2)
	assert.Equal(t, []string{"s1"}, p.Steps[1].DependsOn)
	assert.Equal(t, 1, nodes.Iterations.Get(res.State))

	repair := model.CallsFor("planner")[1].Prompt()
	assert.Contains(t, repair, `step "s2" names agent "ghost", which is neither an available agent nor in new_agents_needed`)
	assert.Contains(t, repair, "depends_on has a cycle: s1 -> s2 -> s1")
	assert.Contains(t, model.CallsFor("planner")[0].Prompt(), "Compare two databases")
}

func TestPlannerRejectsAPlanThatStaysInvalid(t *testing.T) {
	bad := planJSON(t, planMap([]map[string]any{step("s1", "ghost"), step("s2", "researcher"), step("s3", "researcher"), step("s4", "researcher")}))
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"planner": {bad, bad, bad}}})
	_, err := plannerGraph(t, model, nodes.PlannerConfig{}).Invoke(t.Context(), graph.Input(nodes.Request.Set("x")))
	require.ErrorIs(t, err, plan.ErrInvalid)
	var pe *plan.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, []string{
		"the plan has 4 steps; at most 3 are allowed: merge or drop steps",
		`step "s1" names agent "ghost", which is neither an available agent nor in new_agents_needed`,
	}, pe.Problems)
	assert.Contains(t, err.Error(), `graph: node "planner" (step 0, attempt 1): plan: the planner's plan is invalid after repairs: the plan has 4 steps`)
}

func TestPlannerChecksNewAgents(t *testing.T) {
	analyst := map[string]any{"name": "market_analyst", "role": "analyst", "capabilities": "markets", "contribution": "view"}
	unused := map[string]any{"name": "idle_agent", "role": "r", "capabilities": "c", "contribution": "c"}
	cases := []struct {
		name      string
		allowNew  bool
		plan      map[string]any
		wantProbs []string
	}{
		{"a new agent without a factory", false, planMap([]map[string]any{step("s1", "market_analyst")}, analyst),
			[]string{"new_agents_needed must be empty: this team cannot build new agents"}},
		{"a new agent no step uses", true, planMap([]map[string]any{step("s1", "market_analyst")}, analyst, unused),
			[]string{`new agent "idle_agent" is not used by any step: drop it or give it a step`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := planJSON(t, c.plan)
			model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"planner": {bad, bad, bad}}})
			_, err := plannerGraph(t, model, nodes.PlannerConfig{AllowNewAgents: c.allowNew}).Invoke(t.Context(), graph.Input(nodes.Request.Set("x")))
			var pe *plan.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.wantProbs, pe.Problems)
		})
	}
}

func TestPlannerGoesToTheReporterWhenEnoughIsKnownOrTheIterationsAreUsed(t *testing.T) {
	enough := planMap([]map[string]any{})
	enough["has_enough_context"] = true
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"planner": {planJSON(t, enough)}}})
	var visited []string
	r := plannerGraph(t, model, nodes.PlannerConfig{})
	for ev, err := range r.Stream(t.Context(), graph.Input(nodes.Request.Set("2+2?"))) {
		require.NoError(t, err)
		if ev.Kind == graph.EventNodeStart {
			visited = append(visited, ev.Node)
		}
	}
	assert.Equal(t, []string{"planner", "reporter"}, visited)

	// After MaxIterations plans, the planner makes no call and hands over.
	silent := scripted.New(scripted.Script{})
	res, err := plannerGraph(t, silent, nodes.PlannerConfig{MaxIterations: 1}).Invoke(t.Context(),
		graph.Input(nodes.Request.Set("x"), nodes.Iterations.Set(1), nodes.PlanKey.Set(&plan.Plan{Title: "done"})))
	require.NoError(t, err)
	assert.Empty(t, silent.Calls())
	assert.Equal(t, "done", nodes.PlanKey.Get(res.State).Title)
}

func TestPlannerSeesResultsNotTranscripts(t *testing.T) {
	enough := planMap([]map[string]any{})
	enough["has_enough_context"] = true
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"planner": {planJSON(t, enough)}}})
	findings := []plan.Finding{
		{StepID: "s1", Title: "Prices", Agent: "researcher", Status: plan.StepDone, Summary: "Prices rose 3%.", Output: strings.Repeat("LONG TRANSCRIPT ", 100), Confidence: 0.9},
		{StepID: "s2", Title: "Costs", Agent: "coder", Status: plan.StepFailed, Error: "python timed out"},
	}
	_, err := plannerGraph(t, model, nodes.PlannerConfig{MaxIterations: 2}).Invoke(t.Context(),
		graph.Input(nodes.Request.Set("x"), nodes.Findings.Set(findings), nodes.Iterations.Set(1), nodes.PlanKey.Set(&plan.Plan{})))
	require.NoError(t, err)
	prompt := model.CallsFor("planner")[0].Prompt()
	assert.Contains(t, prompt, "- [done] s1 Prices (agent researcher, confidence 0.90): Prices rose 3%.")
	assert.Contains(t, prompt, "- [failed] s2 Costs (agent coder, confidence 0.00): python timed out")
	assert.NotContains(t, prompt, "LONG TRANSCRIPT")
}

func TestCoordinatorAnswersSmallTalkAndHandsOffTasksThroughATool(t *testing.T) {
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"coordinator": {
		{Text: "<think>greeting</think>Hello! What can I research for you?"},
		{ToolCalls: []scripted.ToolCall{{Name: "handoff_to_planner", Arguments: `{"task":"Compare SQLite and Postgres for embedding","locale":"en-GB"}`}}},
	}}})
	c, err := nodes.Coordinator(nodes.CoordinatorConfig{Model: model, Next: "planner"})
	require.NoError(t, err)
	g := graph.New("front", nodes.Channels()...)
	g.AddNode("coordinator", c, graph.Destinations("planner", graph.End))
	g.AddNode("planner", noopNode)
	g.AddEdge(graph.Start, "coordinator")
	g.AddEdge("planner", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	res, err := r.Invoke(t.Context(), graph.Input(nodes.Input.Set("hi there!")), graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, "Hello! What can I research for you?", nodes.Answer.Get(res.State))
	assert.Empty(t, nodes.Request.Get(res.State), "the chatter is not a task")
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.NotContains(t, snap.Next, "planner")

	res, err = r.Invoke(t.Context(), graph.Input(nodes.Input.Set("hey, can you compare sqlite vs postgres for me?")), graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, "Compare SQLite and Postgres for embedding", nodes.Request.Get(res.State))
	assert.Equal(t, "en-GB", nodes.Locale.Get(res.State))
	assert.Equal(t, []string{"handoff_to_planner"}, model.CallsFor("coordinator")[1].ToolNames())
	assert.Len(t, nodes.Messages.Get(res.State), 3, "user, reply, user: the conversation as the user sees it")
}

func TestHumanReviewAcceptsReplansOrTakesAnEditedPlan(t *testing.T) {
	rev, err := nodes.HumanReview(nodes.ReviewConfig{Next: "team", Replan: "planner", MaxSteps: 3})
	require.NoError(t, err)
	g := graph.New("review", nodes.Channels()...)
	g.AddNode("review", rev, graph.Destinations("team", "planner"))
	g.AddNode("team", noopNode)
	g.AddNode("planner", noopNode)
	g.AddEdge(graph.Start, "review")
	g.AddEdge("team", graph.End)
	g.AddEdge("planner", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	original := &plan.Plan{Title: "v1", Steps: []plan.Step{{ID: "s1", AgentName: "researcher", StepType: plan.StepResearch}}}

	last := func(thread string, answer any) (graph.Result, []string) {
		t.Helper()
		var visited []string
		for ev, err := range r.Stream(t.Context(), nil, graph.Thread(thread), graph.Resume(answer)) {
			require.NoError(t, err)
			if ev.Kind == graph.EventNodeStart {
				visited = append(visited, ev.Node)
			}
		}
		snap, err := r.State(t.Context(), thread)
		require.NoError(t, err)
		return graph.Result{State: snap.State, Interrupts: snap.Interrupts}, visited
	}
	start := func(thread string) graph.InterruptInfo {
		res, err := r.Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(original)), graph.Thread(thread))
		require.NoError(t, err)
		require.Len(t, res.Interrupts, 1)
		return res.Interrupts[0]
	}

	in := start("accept")
	req := in.Payload.(nodes.ReviewRequest)
	assert.Equal(t, "v1", req.Plan.Title)
	_, visited := last("accept", "accept")
	assert.Equal(t, []string{"review", "team"}, visited)

	start("feedback")
	res, visited := last("feedback", "add a step on costs")
	assert.Equal(t, []string{"review", "planner"}, visited)
	assert.Equal(t, "add a step on costs", nodes.Feedback.Get(res.State))

	start("edit")
	bad := map[string]any{"plan": map[string]any{"title": "v2", "steps": []any{map[string]any{"id": "s1", "agent_name": "ghost", "step_type": "research"}}}}
	res, _ = last("edit", bad)
	require.Len(t, res.Interrupts, 1, "an invalid edit is sent back")
	back := res.Interrupts[0].Payload.(map[string]any)
	assert.Equal(t, []any{`step "s1" names agent "ghost", which is neither an available agent nor in new_agents_needed`}, back["problems"])
	good := map[string]any{"plan": map[string]any{"title": "v2", "steps": []any{map[string]any{"id": "s1", "agent_name": "coder", "step_type": "processing"}}}}
	res, visited = last("edit", good)
	assert.Equal(t, []string{"review", "team"}, visited)
	assert.Equal(t, "v2", nodes.PlanKey.Get(res.State).Title)
}

func TestReporterWritesFromFindingsWithCitationsLast(t *testing.T) {
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"reporter": {
		{Text: "<think>draft first</think># Report\nSQLite suits embedding [1]."},
	}}})
	rep, err := nodes.Reporter(nodes.ReporterConfig{Model: model, Read: func(ctx context.Context, ref string) (string, error) {
		return "FULL TEXT OF " + ref, nil
	}})
	require.NoError(t, err)
	g := graph.New("report", nodes.Channels()...)
	g.AddNode("reporter", rep)
	g.AddEdge(graph.Start, "reporter")
	g.AddEdge("reporter", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(nodes.Request.Set("Which DB?"), nodes.Findings.Set([]plan.Finding{
		{StepID: "s1", Title: "SQLite", Status: plan.StepDone, Ref: "mission/t/outputs/s1", Summary: "fast", Sources: []string{"https://sqlite.org"}},
	})))
	require.NoError(t, err)
	report := nodes.Answer.Get(res.State)
	assert.Equal(t, "# Report\nSQLite suits embedding [1].\n\n## References\n[1] https://sqlite.org", report)
	prompt := model.CallsFor("reporter")[0].Prompt()
	assert.Contains(t, prompt, "FULL TEXT OF mission/t/outputs/s1", "the reporter reads the full result")
}
