package factory_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
)

func TestQuestionsFromSeveralStepsPauseTheTeamTogether(t *testing.T) {
	asking := scripted.NewBarrier(2) // a1 and b1 ask while both are in flight
	ask := func(q string) scripted.Reply {
		return scripted.Reply{Wait: asking.Wait, ToolCalls: []scripted.ToolCall{{Name: "ask_human", Arguments: `{"question":"` + q + `"}`}}}
	}
	e := newEnv(t, smem.New(store.Config{}), scripted.Script{Agents: map[string][]scripted.Reply{
		"asker_a": {ask("Which vendor?"), answer("A1", 0.9), answer("A2", 0.9)},
		"asker_b": {ask("Which year?"), answer("B1", 0.9)},
		"worker":  {answer("C1", 0.9), answer("C2", 0.9)},
	}})
	given := []factory.Agent{
		{Name: "asker_a", Tier: "basic", Tools: []string{"ask_human"}, Prompt: "You ask when unsure."},
		{Name: "asker_b", Tier: "basic", Tools: []string{"ask_human"}, Prompt: "You ask when unsure."},
		{Name: "worker", Tier: "basic", Prompt: "You work."},
	}
	step := func(id, agent string, deps ...string) plan.Step {
		return plan.Step{ID: id, AgentName: agent, Title: id, Description: "Do " + id + ".", StepType: plan.StepResearch, DependsOn: deps}
	}
	pl := &plan.Plan{Title: "Ask", Steps: []plan.Step{
		step("a1", "asker_a"), step("a2", "asker_a", "a1"), step("b1", "asker_b"), step("c1", "worker"), step("c2", "worker", "c1"),
	}}
	r := e.team(t, factory.TeamConfig{Agents: given}, graph.WithSaver(memory.New()))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a barrier that never opens fails here
	defer cancel()

	res, err := r.Invoke(ctx, graph.Input(nodes.PlanKey.Set(pl)), graph.Thread("t1"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	var paths []string
	answers := map[string]any{}
	for _, in := range res.Interrupts {
		paths = append(paths, in.Path)
		answers[in.ID] = "yes"
	}
	assert.Equal(t, []string{"coor/team/step:a1/agent:asker_a/tool:call_asker_a_1_1",
		"coor/team/step:b1/agent:asker_b/tool:call_asker_b_1_1"}, paths, "both questions, in plan order")
	assert.Len(t, e.model.CallsFor("worker"), 2, "the branch without questions ran to its end")
	assert.Empty(t, e.model.CallsFor("asker_a")[1:], "a2 waits for a1's answer")

	// The steps are tasks of the team's node: State lists them.
	snap, err := r.State(ctx, "t1")
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 1)
	var tasks []string
	for _, nt := range snap.Tasks[0].Tasks {
		tasks = append(tasks, nt.Path+" "+string(nt.Status))
	}
	assert.Equal(t, []string{"coor/team/step:a1 interrupted", "coor/team/step:b1 interrupted",
		"coor/team/step:c1 done", "coor/team/step:c2 done"}, tasks)

	res, err = r.Invoke(ctx, nil, graph.Thread("t1"), graph.ResumeEach(answers))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	done := nodes.PlanKey.Get(res.State)
	assert.True(t, done.Done())
	assert.Equal(t, "found A2", done.Step("a2").Result.Summary)
	assert.Len(t, e.model.CallsFor("worker"), 2, "finished steps are not redone")
	assert.Equal(t, []string{"yes"}, toolResults(e.model.CallsFor("asker_b")[1]))
}

func TestTheTeamRunsAtMostStepConcurrencyStepsAtOnce(t *testing.T) {
	two := scripted.NewBarrier(2) // opens only with two steps in flight
	held := answer("HELD", 0.9)
	held.Wait = two.Wait
	e := newEnv(t, smem.New(store.Config{}), scripted.Script{Agents: map[string][]scripted.Reply{
		"researcher": {held, held, answer("LAST", 0.9)},
	}})
	pl := &plan.Plan{Title: "Three"}
	for _, id := range []string{"s1", "s2", "s3"} {
		pl.Steps = append(pl.Steps, plan.Step{ID: id, AgentName: "researcher", Title: id, Description: "Do " + id + ".", StepType: plan.StepResearch})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := e.team(t, factory.TeamConfig{StepConcurrency: 2}).Invoke(ctx, graph.Input(nodes.PlanKey.Set(pl)))
	require.NoError(t, err)
	assert.True(t, nodes.PlanKey.Get(res.State).Done())
	assert.Equal(t, 2, e.model.MaxInFlight())
}

func TestAPlanWhoseStepsDoNotFormADAGIsRefusedBeforeAnyStepRuns(t *testing.T) {
	cases := []struct {
		name string
		deps map[string][]string
		want string
	}{
		{"unknown dependency", map[string][]string{"s2": {"zz"}},
			`factory: the plan's steps cannot run: graph: invalid tasks: task "step:s2" depends on "step:zz", which is not a task`},
		{"cycle", map[string][]string{"s1": {"s2"}, "s2": {"s1"}},
			`factory: the plan's steps cannot run: graph: invalid tasks: the tasks depend on each other in a cycle: step:s1 -> step:s2 -> step:s1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, smem.New(store.Config{}), scripted.Script{})
			pl := twoSteps()
			for i := range pl.Steps {
				pl.Steps[i].DependsOn = tc.deps[pl.Steps[i].ID]
			}
			_, err := e.team(t, factory.TeamConfig{}).Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(pl)))
			require.ErrorIs(t, err, graph.ErrInvalidTasks)
			assert.ErrorContains(t, err, tc.want)
			assert.Empty(t, e.model.Calls(), "no step ran")
		})
	}
}

// TestTheTeamRunsWithEachTaskApartFromItsNode runs every build and step of
// the team in a run of its own (graph.RunScheduled), as a runner that
// gives each task an activity on any worker does: the team ends as in
// one process, with every agent called once per step. Each task carries
// the tier of the model it calls (factory.TierLabel), for such a runner
// to place it: a step its agent's, a build the builder's.
func TestTheTeamRunsWithEachTaskApartFromItsNode(t *testing.T) {
	e := newEnv(t, smem.New(store.Config{}), fullScript())
	saver := memory.New()
	exp, err := metaprompt.New(metaprompt.Config{Model: e.model, ModelName: "scripted-reasoning", Cache: e.store, Owner: "acme"})
	require.NoError(t, err)
	builder := &factory.Builder{Model: e.model, Info: llm.ModelInfo{Tier: "vision"}, Tools: e.tools, WritePrompt: factory.ExpandWith(exp, e.tools)}
	r := e.team(t, factory.TeamConfig{Builder: builder}, graph.WithSaver(saver))
	var mu sync.Mutex
	tiers := map[string]string{}
	exec := graph.TaskExecutorFunc(func(ctx context.Context, c graph.TaskCall, _ func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
		mu.Lock()
		tiers[c.Key] = c.Labels[factory.TierLabel]
		mu.Unlock()
		return r.RunScheduled(ctx, c, graph.WithSaver(saver), graph.Thread(c.Thread))
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a barrier that never opens fails here
	defer cancel()
	res, err := r.Invoke(ctx, graph.Input(nodes.PlanKey.Set(twoBranches())), graph.Thread("apart"), graph.WithTaskExecutor(exec))
	require.NoError(t, err)
	pl := nodes.PlanKey.Get(res.State)
	require.True(t, pl.Done())
	assert.Equal(t, "found FACT-B3", pl.Step("b3").Result.Summary)
	for agent, n := range map[string]int{"builder:market_analyst": 1, "builder:tech_analyst": 1,
		"market_analyst": 2, "tech_analyst": 2, "researcher": 1, "coder": 1} {
		assert.Len(t, e.model.CallsFor(agent), n, agent)
	}
	assert.Contains(t, e.model.CallsFor("market_analyst")[1].Prompt(), "The result is FACT-A1.", "a2 got a1's handoff")
	assert.Equal(t, map[string]string{"build:market_analyst": "vision", "build:tech_analyst": "vision",
		"step:a1": "reasoning", "step:a2": "reasoning", "step:b1": "reasoning", "step:b2": "reasoning",
		"step:a3": "basic", "step:b3": "code"}, tiers, "each task's tier label")
}
