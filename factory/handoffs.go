package factory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/teamhook"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
)

func init() {
	teamhook.SetSees = func(cfg any, see teamhook.Sees) { cfg.(*TeamConfig).sees = see }
}

// handoffs returns what step receives from the steps it depends on (or
// those TeamConfig.sees chooses): their full results, read back from the
// board.
func (t *teamRun) handoffs(ctx context.Context, step plan.Step) ([]plan.Handoff, error) {
	hs := t.handoffsOnPlan(step)
	if t.board == nil {
		return hs, nil
	}
	viewer := store.Viewer{Task: step.ID, Agent: agentRun(step, t.agents[step.AgentName])}
	for i := range hs {
		if hs[i].Ref == "" {
			continue
		}
		it, err := t.board.Get(ctx, viewer, hs[i].Ref)
		if err != nil {
			return nil, fmt.Errorf("factory: read the result of step %s for step %s: %w", hs[i].From, step.ID, err)
		}
		hs[i].Text = it.Content
	}
	return hs, nil
}

// handoffsOnPlan returns step's handoffs as the plan has them: summaries
// and, for results on the board, their references.
func (t *teamRun) handoffsOnPlan(step plan.Step) []plan.Handoff {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cfg.sees != nil {
		step.DependsOn = t.cfg.sees(t.plan, step)
	}
	hs := t.plan.Handoffs(step)
	for i := range hs {
		hs[i].Ref = t.plan.Step(hs[i].From).Result.Ref
	}
	return hs
}

// visibleNotes returns the board items that are loaded into every prompt
// and that viewer may see — shared notes and its own private board. Other
// steps' outputs, handoffs and the progress log are left out: results reach
// a step only as handoffs from the steps it depends on.
func (t *teamRun) visibleNotes(ctx context.Context, viewer store.Viewer) (string, error) {
	if t.board == nil {
		return "", nil
	}
	metas, err := t.board.Visible(ctx, viewer)
	if err != nil {
		return "", fmt.Errorf("factory: read the mission board: %w", err)
	}
	var b strings.Builder
	for _, m := range metas {
		rel := strings.TrimPrefix(m.Path, t.board.Prefix())
		if board.PromptOf(m).Trigger != board.TriggerAlways || rel == "progress" || rel == "plan" ||
			strings.HasPrefix(rel, "outputs/") || strings.HasPrefix(rel, "handoffs/") {
			continue
		}
		it, err := t.board.Get(ctx, viewer, m.Path)
		if err != nil {
			return "", fmt.Errorf("factory: read %s: %w", m.Path, err)
		}
		fmt.Fprintf(&b, "### %s\n%s\n", rel, it.Content)
	}
	return b.String(), nil
}

// publish puts a done step's full output on the board — the plan keeps a
// reference — logs its progress and hands it off to the steps that
// depend on it. It goes through the journal: a step is published once.
func (t *teamRun) publish(ctx context.Context, step plan.Step, a Agent, res plan.StepResult) (plan.StepResult, error) {
	return graph.Do(ctx, "publish "+step.ID, func(ctx context.Context) (plan.StepResult, error) {
		ref, err := t.board.PutOutput(ctx, t.prefix+step.ID, res.Output)
		if err != nil {
			return res, fmt.Errorf("factory: store the output of step %s: %w", step.ID, err)
		}
		res.Ref, res.Output = ref, ""
		if _, err := t.board.AppendProgress(ctx, a.Name, fmt.Sprintf("%s %s: %s", step.ID, res.Status, res.Summary)); err != nil {
			return res, fmt.Errorf("factory: record the progress of step %s: %w", step.ID, err)
		}
		return res, t.handOff(ctx, step, a, fmt.Sprintf("%s\n\nFull result: %s", res.Summary, ref))
	})
}

// handOff writes text to the board as step's handoff to each step that
// depends on it.
func (t *teamRun) handOff(ctx context.Context, step plan.Step, a Agent, text string) error {
	for _, d := range t.next[step.ID] {
		if _, err := t.board.PutHandoff(ctx, agentRun(step, a), agentRun(d, t.agents[d.AgentName]), text); err != nil && !errors.Is(err, store.ErrExists) {
			return fmt.Errorf("factory: hand off step %s to %s: %w", step.ID, d.ID, err)
		}
	}
	return nil
}

// OutputReader returns a function that reads back a step output the team
// stored on a mission board, for the owner of the run in ctx (the
// store.RuntimeOwner runtime value, owner when there is none) — what the
// reporter needs.
func OutputReader(s store.Store, owner string) func(ctx context.Context, ref string) (string, error) {
	return func(ctx context.Context, ref string) (string, error) {
		o := graph.RuntimeString(ctx, store.RuntimeOwner)
		if o == "" {
			o = owner
		}
		it, err := s.Get(ctx, o, ref)
		if err != nil {
			return "", err
		}
		return it.Content, nil
	}
}
