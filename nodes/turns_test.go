package nodes_test

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
)

func TestCoordinatorBeginsATurnPerInputAndKeepsTheConversation(t *testing.T) {
	handoff := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "handoff_to_planner", Arguments: `{"task":"the task","locale":"en-US"}`}}}
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"coordinator": {handoff, {Text: "You're welcome!"}}}})
	c, err := nodes.Coordinator(nodes.CoordinatorConfig{Model: model, Next: "planner"})
	require.NoError(t, err)
	// The planner stands for a turn's work: it leaves what a turn leaves.
	work := func(_ context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(nodes.PlanKey.Set(&plan.Plan{Title: "p"}), nodes.Iterations.Set(2), nodes.Feedback.Set("more"),
			nodes.Background.Set("bg"), nodes.Findings.Set([]plan.Finding{{StepID: "s1", Turn: nodes.CurrentTurn.Get(s).N}}),
			nodes.Messages.Set([]nodes.ChatMessage{{Role: "assistant", Content: "the report"}}), nodes.Answer.Set("the report")), nil
	}
	g := graph.New("front", nodes.Channels()...)
	g.AddNode("coordinator", c, graph.Destinations("planner", graph.End))
	g.AddNode("planner", work)
	g.AddEdge(graph.Start, "coordinator")
	g.AddEdge("planner", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	_, err = r.Invoke(t.Context(), graph.Input(nodes.Input.Set("do the task")), graph.Thread("t"),
		graph.WithRuntime(map[string]any{graph.RuntimeRun: "r-1"}))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(nodes.Input.Set("thanks")), graph.Thread("t"),
		graph.WithRuntime(map[string]any{graph.RuntimeRun: "r-2"}))
	require.NoError(t, err)

	s := res.State
	assert.Nil(t, nodes.PlanKey.Get(s), "turn 2 starts without turn 1's plan")
	assert.Zero(t, nodes.Iterations.Get(s), "the planner's rounds count per turn")
	assert.Empty(t, nodes.Feedback.Get(s))
	assert.Empty(t, nodes.Background.Get(s))
	assert.Empty(t, nodes.Request.Get(s), "the coordinator answered turn 2 itself")
	assert.Equal(t, "You're welcome!", nodes.Answer.Get(s))
	assert.Len(t, nodes.Findings.Get(s), 1, "what turn 1 found stays")
	assert.Equal(t, nodes.Turn{N: 2, Input: "thanks", Run: "r-2", Answer: "You're welcome!"}, nodes.CurrentTurn.Get(s))
	assert.Equal(t, []nodes.Turn{{N: 2, Input: "thanks", Run: "r-2", Answer: "You're welcome!"}}, nodes.Turns.Get(s),
		"turn 1 ended without a reporter here: only turn 2 is recorded")
	assert.Equal(t, []string{"user", "assistant", "user", "assistant"}, roles(nodes.Messages.Get(s)))

	prompt := model.CallsFor("coordinator")[1].Messages
	require.Len(t, prompt, 4, "system, the conversation so far, the new message")
	assert.Equal(t, "the report", prompt[2].Parts[0].(llms.TextContent).Text)
}

func roles(ms []nodes.ChatMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role)
	}
	return out
}

func TestPlannerRevisesThePlanOnFeedbackEvenAtItsRoundLimit(t *testing.T) {
	revised := planMap([]map[string]any{step("s1", "researcher"), step("s2", "researcher")})
	revised["title"] = "v2"
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"planner": {planJSON(t, revised)}}})
	var visited []string
	var final graph.State
	v1 := &plan.Plan{Title: "v1", Steps: []plan.Step{{ID: "s1", AgentName: "researcher", StepType: plan.StepResearch}}}
	for ev, err := range plannerGraph(t, model, nodes.PlannerConfig{MaxIterations: 1}).Stream(t.Context(), graph.Input(
		nodes.Request.Set("checkpoint rates"), nodes.PlanKey.Set(v1), nodes.Iterations.Set(1),
		nodes.Feedback.Set("also look at fsync cost on macOS"))) {
		require.NoError(t, err)
		if ev.Kind == graph.EventNodeStart {
			visited = append(visited, ev.Node)
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	calls := model.CallsFor("planner")
	require.Len(t, calls, 1, "feedback gets a model call")
	assert.Contains(t, calls[0].Prompt(), "# The reviewer's feedback on it\nalso look at fsync cost on macOS")
	assert.Contains(t, calls[0].Prompt(), `"title":"v1"`, "with the plan it is about")
	assert.Equal(t, []string{"planner", "review"}, visited, "the new plan goes to the review")
	assert.Equal(t, "v2", nodes.PlanKey.Get(final).Title)
	assert.Empty(t, nodes.Feedback.Get(final))
	assert.Equal(t, 1, nodes.Iterations.Get(final), "a revision is not a round")
}

func TestPlannerSaysWhenItStopsAtItsRoundLimit(t *testing.T) {
	done := &plan.Plan{Title: "done", Steps: []plan.Step{{ID: "s1", Result: &plan.StepResult{Status: plan.StepDone}}}}
	failed := &plan.Plan{Title: "failed", Steps: []plan.Step{
		{ID: "s1", Result: &plan.StepResult{Status: plan.StepDone}},
		{ID: "s2", Result: &plan.StepResult{Status: plan.StepFailed, Error: "timeout"}}}}
	for _, c := range []struct {
		name     string
		plan     *plan.Plan
		wantNote string
	}{
		{"every step done", done, ""},
		{"a step failed", failed, "planning stopped at its limit of 2 rounds per turn (max_iterations: 2); the answer uses what the steps found, and steps s2 did not complete"},
	} {
		t.Run(c.name, func(t *testing.T) {
			silent := scripted.New(scripted.Script{})
			var warnings []string
			var final graph.State
			for ev, err := range plannerGraph(t, silent, nodes.PlannerConfig{MaxIterations: 2}).Stream(t.Context(),
				graph.Input(nodes.Request.Set("x"), nodes.Iterations.Set(2), nodes.PlanKey.Set(c.plan))) {
				require.NoError(t, err)
				if w, ok := ev.Data.(agentevent.Warning); ok {
					warnings = append(warnings, w.String())
				}
				if ev.Kind == graph.EventRunEnd {
					final = ev.State
				}
			}
			assert.Empty(t, silent.Calls())
			assert.Equal(t, c.wantNote, nodes.CurrentTurn.Get(final).Note)
			if c.wantNote == "" {
				assert.Empty(t, warnings, "a plan whose steps all completed lost nothing to the limit: no warning")
				return
			}
			require.Len(t, warnings, 1, "the run says so")
			assert.Contains(t, warnings[0], "planner: planning stopped at its limit of 2 rounds per turn (max_iterations: 2)")
		})
	}
}

func TestReporterEndsTheTurnAndAddsTheRoundLimitNote(t *testing.T) {
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"reporter": {{Text: "# Rates\nAbout 1,000/s."}}}})
	rep, err := nodes.Reporter(nodes.ReporterConfig{Model: model})
	require.NoError(t, err)
	g := graph.New("report", nodes.Channels()...)
	g.AddNode("reporter", rep)
	g.AddEdge(graph.Start, "reporter")
	g.AddEdge("reporter", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	note := "planning stopped at its limit of 1 round per turn (max_iterations: 1); the answer uses what the steps found, and steps s2 did not complete"
	res, err := r.Invoke(t.Context(), graph.Input(nodes.Request.Set("rates?"),
		nodes.CurrentTurn.Set(nodes.Turn{N: 2, Input: "and the rates?", Note: note}),
		nodes.Turns.Set([]nodes.Turn{{N: 1, Input: "what is a WAL?", Answer: "A write-ahead log."}}),
		nodes.Findings.Set([]plan.Finding{
			{StepID: "s1", Title: "Old", Status: plan.StepDone, Summary: "old summary", Output: "OLD FULL OUTPUT", Turn: 1, Ref: "mission/t/s1"},
			{StepID: "s1", Title: "New", Status: plan.StepDone, Summary: "new summary", Output: "NEW FULL OUTPUT", Turn: 2},
		})))
	require.NoError(t, err)
	answer := nodes.Answer.Get(res.State)
	assert.Equal(t, "# Rates\nAbout 1,000/s.\n\n_Note: "+note+"._", answer)
	turns := nodes.Turns.Get(res.State)
	require.Len(t, turns, 2)
	assert.Equal(t, nodes.Turn{N: 2, Input: "and the rates?", Request: "rates?", Answer: "Rates About 1,000/s. _Note: " + note + "._", Note: note}, turns[1])

	prompt := model.CallsFor("reporter")[0].Prompt()
	assert.Contains(t, prompt, "NEW FULL OUTPUT", "this turn's results in full")
	assert.Contains(t, prompt, "# Earlier in this conversation\n## Turn 1\nUser: what is a WAL?\n")
	assert.Contains(t, prompt, "old summary (ref: mission/t/s1)", "earlier turns' results as summaries with their reference")
	assert.NotContains(t, prompt, "OLD FULL OUTPUT")
}

func TestOnlyTheAcceptanceWordsAcceptAPlan(t *testing.T) {
	for _, a := range []string{"y", "Y", "ok", "OK", "lgtm", "LGTM", "yes", "accept", " Yes ", "ok.", "LGTM!", "approved"} {
		assert.True(t, nodes.IsAcceptance(a), "%q accepts", a)
	}
	for _, f := range []string{"also look at fsync cost on macOS", "no", "yes, but add costs", "n", "", "ok ok"} {
		assert.False(t, nodes.IsAcceptance(f), "%q is not an acceptance", f)
	}

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
	for _, answer := range []string{"y", "LGTM", "also look at fsync cost on macOS"} {
		thread := "t-" + answer
		_, err := r.Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(&plan.Plan{Title: "v1"})), graph.Thread(thread))
		require.NoError(t, err)
		var visited []string
		for ev, err := range r.Stream(t.Context(), nil, graph.Thread(thread), graph.Resume(answer)) {
			require.NoError(t, err)
			if ev.Kind == graph.EventNodeStart {
				visited = append(visited, ev.Node)
			}
		}
		want := []string{"review", "team"}
		if !nodes.IsAcceptance(answer) {
			want = []string{"review", "planner"}
		}
		assert.Equal(t, want, visited, answer)
	}
}
