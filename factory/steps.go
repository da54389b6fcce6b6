package factory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
)

// runSteps runs every step without a result as a task of the team's node
// (graph.Schedule, key "step:<id>"): each as soon as the steps it depends
// on are done, the ready ones concurrently (up to StepConcurrency). A
// step's result is journaled as its task's value: a team that runs again
// (a resume, a retry) does not run a finished step again, failed ones
// included. A failed step skips its dependents; with FailFast it stops the
// team. Questions asked by several steps pause the team together, in plan
// order, once the steps that can go on are done. It returns the findings
// of the steps that got a result, in plan order.
func (t *teamRun) runSteps(ctx context.Context) ([]plan.Finding, error) {
	open := map[string]bool{}
	for _, s := range t.plan.Steps {
		open[s.ID] = s.Result == nil
	}
	t.plan.SkipDependents() // a step they need failed in an earlier run
	t.head = &plan.Plan{Title: t.plan.Title, Locale: t.plan.Locale}
	t.next = dependents(t.plan)
	opts := graph.TaskOptions{Limit: t.cfg.StepConcurrency, FailFast: t.cfg.FailFast, Classify: classify}
	res, err := graph.Schedule(ctx, opts, t.stepTasks())
	for _, r := range res {
		if r.Status == graph.TaskFailed && r.Value.Status == plan.StepFailed {
			t.record(strings.TrimPrefix(r.Key, stepKey), r.Value)
		}
	}
	if err != nil {
		if errors.Is(err, graph.ErrInvalidTasks) {
			return nil, fmt.Errorf("factory: the plan's steps cannot run: %w", err)
		}
		return nil, err
	}
	t.plan.SkipDependents()
	var found []plan.Finding
	for _, s := range t.plan.Steps {
		if open[s.ID] && s.Result != nil {
			found = append(found, s.Finding())
		}
	}
	return found, nil
}

// stepKey prefixes a step's id in its task's key, and so in its path.
const stepKey = "step:"

// stepTasks returns the steps without a result as tasks; a dependency
// that has a result already (done: the others have been skipped) is not
// waited for.
func (t *teamRun) stepTasks() []graph.Task[plan.StepResult] {
	var tasks []graph.Task[plan.StepResult]
	for _, s := range t.plan.Steps {
		if s.Result != nil {
			continue
		}
		tk := graph.Task[plan.StepResult]{Key: stepKey + s.ID, Run: t.stepRun(s.ID),
			Fails:  func(res plan.StepResult) error { return stepFailed(s.ID, res) },
			Done:   func(res plan.StepResult) { t.record(s.ID, res) },
			Labels: tierLabel(string(agentTier(t.agents[s.AgentName])))}
		for _, d := range s.DependsOn {
			if ds := t.plan.Step(d); ds == nil || ds.Result == nil {
				tk.Deps = append(tk.Deps, stepKey+d)
			}
		}
		tasks = append(tasks, tk)
	}
	return tasks
}

// dependents maps each step id to the steps that depend on it.
func dependents(p *plan.Plan) map[string][]plan.Step {
	next := map[string][]plan.Step{}
	for _, s := range p.Steps {
		s.Result = nil
		for _, d := range s.DependsOn {
			next[d] = append(next[d], s)
		}
	}
	return next
}

// classify says what a step's error means: a question (graph.Interrupt)
// pauses the step, a failed step fails it, and anything else — the
// context ended, the board cannot be written — stops the team.
func classify(err error) graph.TaskErrorKind {
	var ie *graph.InterruptError
	switch {
	case errors.As(err, &ie):
		return graph.TaskPause
	case errors.Is(err, ErrStepFailed):
		return graph.TaskFail
	default:
		return graph.TaskStop
	}
}

// stepFailed is the failure step id's result stands for: ErrStepFailed
// for a failed step.
func stepFailed(id string, res plan.StepResult) error {
	if res.Status == plan.StepFailed {
		return fmt.Errorf("%w: %s: %s", ErrStepFailed, id, res.Error)
	}
	return nil
}

// record puts step id's result on the plan.
func (t *teamRun) record(id string, res plan.StepResult) {
	t.mu.Lock()
	t.plan.Step(id).Result = &res
	t.mu.Unlock()
}

// stepRun returns the work of step id: it runs the step with its agent,
// given the results it receives from the steps before.
func (t *teamRun) stepRun(id string) func(ctx context.Context) (plan.StepResult, error) {
	return func(ctx context.Context) (plan.StepResult, error) {
		t.mu.Lock()
		step := *t.plan.Step(id)
		a := t.agents[step.AgentName]
		t.mu.Unlock()
		hs, err := t.handoffs(ctx, step)
		if err != nil {
			return plan.StepResult{}, err
		}
		return t.runStep(ctx, step, hs, a)
	}
}

// runStep runs one step with its agent and publishes its result on the
// board.
func (t *teamRun) runStep(ctx context.Context, step plan.Step, hs []plan.Handoff, a Agent) (plan.StepResult, error) {
	viewer := store.Viewer{Task: step.ID, Agent: agentRun(step, a)}
	agent, err := t.agent(a, viewer)
	if err != nil {
		return plan.StepResult{Status: plan.StepFailed, Error: err.Error(), Attempts: 0}, nil
	}
	extra, err := t.visibleNotes(ctx, viewer)
	if err != nil {
		return plan.StepResult{}, err
	}
	res, err := nodes.CarryOut(ctx, nodes.StepRun{Agent: agent, Plan: t.head, Step: step, Handoffs: hs, Extra: extra, Threshold: t.cfg.Threshold})
	if err != nil || t.board == nil || res.Status != plan.StepDone {
		return res, err
	}
	return t.publish(ctx, step, a, res)
}
