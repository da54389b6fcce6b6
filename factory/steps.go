package factory

import (
	"context"
	"errors"
	"fmt"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/dag"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
)

// runSteps runs every step without a result with the DAG runner: each as
// soon as the steps it depends on are done, the ready ones concurrently
// (up to StepConcurrency). A failed step skips its dependents; with
// FailFast it stops the team. Questions asked by several steps pause the
// team together, once the steps that can go on are done. It returns the
// findings of the steps that got a result, in plan order.
func (t *teamRun) runSteps(ctx context.Context) ([]plan.Finding, error) {
	open := map[string]bool{}
	for _, s := range t.plan.Steps {
		open[s.ID] = s.Result == nil
	}
	t.plan.SkipDependents() // a step they need failed in an earlier run
	t.head = &plan.Plan{Title: t.plan.Title, Locale: t.plan.Locale}
	t.next = dependents(t.plan)
	opts := dag.Options{Limit: t.cfg.StepConcurrency, FailFast: t.cfg.FailFast, Classify: classify}
	if _, err := dag.Run(ctx, stepTasks(t.plan), opts, t.runTask); err != nil {
		if errors.Is(err, dag.ErrInvalid) {
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

// stepTasks returns the steps without a result as tasks of the DAG
// runner; a dependency that has a result already (done: the others have
// been skipped) is not waited for.
func stepTasks(p *plan.Plan) []dag.Task {
	var tasks []dag.Task
	for _, s := range p.Steps {
		if s.Result != nil {
			continue
		}
		tk := dag.Task{ID: s.ID}
		for _, d := range s.DependsOn {
			if ds := p.Step(d); ds == nil || ds.Result == nil {
				tk.Deps = append(tk.Deps, d)
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

// classify tells the DAG runner what a step's error means: a question
// (graph.Interrupt) pauses the step, a failed step fails it, and anything
// else — the context ended, the board cannot be written — stops the team.
func classify(err error) dag.Kind {
	var ie *graph.InterruptError
	switch {
	case errors.As(err, &ie):
		return dag.Pause
	case errors.Is(err, ErrStepFailed):
		return dag.Fail
	default:
		return dag.Stop
	}
}

// runTask runs step id and records its result on the plan; a failed step
// returns ErrStepFailed.
func (t *teamRun) runTask(ctx context.Context, id string) error {
	t.mu.Lock()
	step := *t.plan.Step(id)
	a := t.agents[step.AgentName]
	t.mu.Unlock()
	hs, err := t.handoffs(ctx, step)
	if err != nil {
		return err
	}
	res, err := t.runStep(ctx, step, hs, a)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.plan.Step(id).Result = &res
	t.mu.Unlock()
	if res.Status == plan.StepFailed {
		return fmt.Errorf("%w: %s: %s", ErrStepFailed, id, res.Error)
	}
	return nil
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
	res, err := nodes.RunStep(ctx, nodes.StepRun{Agent: agent, Plan: t.head, Step: step, Handoffs: hs, Extra: extra, Threshold: t.cfg.Threshold})
	if err != nil || t.board == nil || res.Status != plan.StepDone {
		return res, err
	}
	return t.publish(ctx, step, a, res)
}
