package plan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coorflow/coorflow/nodes/plan"
)

func step(id, agent string, deps ...string) plan.Step {
	return plan.Step{ID: id, AgentName: agent, Title: "Step " + id, StepType: plan.StepResearch, DependsOn: deps}
}

func known(names ...string) func(string) bool {
	return func(n string) bool {
		for _, k := range names {
			if k == n {
				return true
			}
		}
		return false
	}
}

func TestValidateReportsEveryProblemAgainstTheRules(t *testing.T) {
	analyst := plan.AgentSpec{Name: "market_analyst"}
	tests := []struct {
		name  string
		plan  plan.Plan
		rules plan.Rules
		want  []string
	}{
		{"a valid plan", plan.Plan{Steps: []plan.Step{step("s1", "researcher"), step("s2", "coder", "s1")}},
			plan.Rules{Known: known("researcher", "coder")}, nil},
		{"unknown agent, cycle, unknown dependency", plan.Plan{Steps: []plan.Step{step("s1", "ghost", "s2"), step("s2", "researcher", "s1", "s9")}},
			plan.Rules{Known: known("researcher")}, []string{
				`step "s1" names agent "ghost", which is neither an available agent nor in new_agents_needed`,
				`step "s2" depends on "s9", which is not a step of the plan`,
				`depends_on has a cycle: s1 -> s2 -> s1`,
			}},
		{"too many steps", plan.Plan{Steps: []plan.Step{step("s1", "researcher"), step("s2", "researcher")}},
			plan.Rules{Known: known("researcher"), MaxSteps: 1}, []string{
				"the plan has 2 steps; at most 1 are allowed: merge or drop steps",
			}},
		{"a new agent where none is allowed", plan.Plan{NewAgentsNeeded: []plan.AgentSpec{analyst}, Steps: []plan.Step{step("s1", "market_analyst")}},
			plan.Rules{}, []string{"new_agents_needed must be empty: this team cannot build new agents"}},
		{"a new agent that is allowed", plan.Plan{NewAgentsNeeded: []plan.AgentSpec{analyst}, Steps: []plan.Step{step("s1", "market_analyst")}},
			plan.Rules{AllowNewAgents: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.plan.Validate(tt.rules))
		})
	}
}

func TestAFailedStepSkipsItsDependentsAndHandsNothingOn(t *testing.T) {
	p := &plan.Plan{Steps: []plan.Step{step("a", "researcher"), step("b", "researcher", "a"), step("c", "researcher", "b"), step("d", "coder")}}
	p.Step("a").Result = &plan.StepResult{Status: plan.StepFailed, Error: "timed out"}
	p.Step("d").Result = &plan.StepResult{Status: plan.StepDone, Summary: "done", Output: "the full output"}

	skipped := p.SkipDependents()
	var ids []string
	for _, f := range skipped {
		ids = append(ids, f.StepID+" "+f.Status)
	}
	assert.Equal(t, []string{"b skipped", "c skipped"}, ids)
	assert.Equal(t, "step a, which it needs, did not complete", p.Step("b").Result.Error)
	assert.True(t, p.Done())

	e := step("e", "coder", "a", "d")
	assert.Equal(t, []plan.Handoff{{From: "d", Agent: "coder", Title: "Step d", Summary: "done", Text: "the full output"}}, p.Handoffs(e),
		"only done steps hand their result on")
}
