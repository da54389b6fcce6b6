package factory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/skills"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
)

// buildAgents loads every agent the plan's steps name — given to the
// team, or from the registry — building the new ones concurrently, each
// as a task of the team's node ("build:<name>", journaled: a team that
// runs again does not build twice).
func (t *teamRun) buildAgents(ctx context.Context) error {
	todo, err := t.loadAgents(ctx)
	if err != nil || len(todo) == 0 {
		return err
	}
	if t.cfg.Builder == nil {
		return fmt.Errorf("factory: the plan needs new agents (%s) but the team has no builder", specNames(todo))
	}
	tasks := make([]graph.Task[Built], len(todo))
	for i, sp := range todo {
		tasks[i] = graph.Task[Built]{Key: "build:" + sp.Name,
			Run:    func(ctx context.Context) (Built, error) { return t.build(ctx, sp) },
			Done:   func(b Built) { t.built(ctx, b) },
			Labels: tierLabel(t.cfg.Builder.Info.Tier)}
	}
	res, err := graph.Schedule(ctx, graph.TaskOptions{Limit: t.cfg.BuildConcurrency, Classify: failBuild}, tasks)
	if err != nil {
		return err
	}
	errs := make([]error, len(res))
	for i, r := range res {
		errs[i] = r.Err
	}
	return errors.Join(errs...)
}

// TierLabel is the placement label of a team's tasks (graph.Task.Labels)
// that says the tier of the model they call: an agent's step the tier of
// the agent, a build the builder's. A runner that places tasks on
// workers reads it (temporalrun's --task-queue tier:reasoning=QUEUE).
const TierLabel = "tier"

// tierLabel returns the labels of a task whose calls go to the model of
// tier; none for no tier.
func tierLabel(tier string) map[string]string {
	if tier == "" {
		return nil
	}
	return map[string]string{TierLabel: tier}
}

// failBuild: a build that fails fails only itself (the team reports every
// failed build together).
func failBuild(error) graph.TaskErrorKind { return graph.TaskFail }

// loadAgents finds the agent of every step, given to the team or in the
// registry, and returns the specs of those left to build, in plan order.
func (t *teamRun) loadAgents(ctx context.Context) ([]plan.AgentSpec, error) {
	t.agents = map[string]Agent{}
	specs := map[string]plan.AgentSpec{}
	for _, sp := range t.plan.NewAgentsNeeded {
		specs[sp.Name] = sp
	}
	var todo []plan.AgentSpec
	for _, st := range t.plan.Steps {
		if _, seen := t.agents[st.AgentName]; seen {
			continue
		}
		if a, ok := t.fixed[st.AgentName]; ok {
			t.agents[st.AgentName] = a
			continue
		}
		a, err := t.cfg.Registry.Get(ctx, st.AgentName)
		switch {
		case err == nil:
			t.agents[st.AgentName] = a
			graph.Emit(ctx, agentevent.Reused{Agent: a.Name, Role: a.Role, Tier: a.Tier, Tools: a.Tools, Skills: a.Skills, Summary: a.Description, System: a.Prompt})
		case errors.Is(err, ErrAgentNotFound):
			sp, ok := specs[st.AgentName]
			if !ok {
				return nil, fmt.Errorf("factory: step %q names agent %q, which neither exists nor is declared in new_agents_needed", st.ID, st.AgentName)
			}
			t.agents[st.AgentName] = Agent{} // placeholder until built
			todo = append(todo, sp)
		default:
			return nil, err
		}
	}
	return todo, nil
}

func specNames(specs []plan.AgentSpec) string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// build builds one new agent and stores it in the registry; what it
// returns has the agent as stored.
func (t *teamRun) build(ctx context.Context, sp plan.AgentSpec) (Built, error) {
	built, err := t.cfg.Builder.build(ctx, sp, t.plan.Locale)
	if err != nil {
		return Built{}, err
	}
	a, err := t.cfg.Registry.Add(ctx, built.Agent)
	if errors.Is(err, store.ErrExists) {
		// Built earlier (a run that stopped after storing it, or another
		// run): the stored agent wins.
		a, err = t.cfg.Registry.Get(ctx, sp.Name)
	}
	if err != nil {
		return Built{}, err
	}
	built.Agent = a
	return built, nil
}

// built gives the team an agent built (now, or read back from the
// journal) and announces it.
func (t *teamRun) built(ctx context.Context, built Built) {
	a := built.Agent
	t.mu.Lock()
	t.agents[a.Name] = a
	t.mu.Unlock()
	graph.Emit(ctx, agentevent.Created{Agent: a.Name, Role: a.Role, Tier: a.Tier, Tools: a.Tools, Skills: a.Skills, Summary: a.Description, System: a.Prompt})
	if len(built.Dropped) > 0 {
		graph.Emit(ctx, agentevent.Warning{Value: fmt.Sprintf(
			"agent %q asked for tools that do not exist and were dropped: %s", a.Name, strings.Join(built.Dropped, ", "))})
	}
	if len(built.DroppedSkills) > 0 {
		graph.Emit(ctx, agentevent.Warning{Value: fmt.Sprintf(
			"agent %q asked for skills that do not exist and were dropped: %s", a.Name, strings.Join(built.DroppedSkills, ", "))})
	}
}

// agentTier is the tier whose model agent a calls: its own, or the basic
// tier for an agent without a known one.
func agentTier(a Agent) llm.Tier {
	tier, err := llm.ParseTier(a.Tier)
	if err != nil {
		return llm.TierBasic
	}
	return tier
}

// agentRun is the id of one run of an agent: its private board's key.
func agentRun(step plan.Step, a Agent) string { return a.Name + "." + step.ID }

// agent makes the ReAct agent of a built agent, for one step: with a
// window over the board as viewer sees it, and the read_context tool to
// read back what the window offloaded.
func (t *teamRun) agent(a Agent, viewer store.Viewer) (*react.Agent, error) {
	tier := agentTier(a)
	model, err := t.cfg.Models.Model(tier)
	if err != nil {
		return nil, fmt.Errorf("factory: agent %q: %w", a.Name, err)
	}
	reg := &tools.Registry{}
	if t.cfg.Tools != nil && len(a.Tools) > 0 {
		reg, _ = t.cfg.Tools.Subset(a.Tools...)
	}
	profile := t.cfg.Models.Profile(tier)
	cfg := react.Config{
		Name: a.Name, Model: model, SystemPrompt: a.Prompt, Tools: reg, MaxTurns: t.cfg.MaxTurns,
		Info: profile.Info(tier),
	}
	if err := giveSkills(&cfg, t.cfg.Skills, a); err != nil {
		return nil, err
	}
	if t.board != nil && !t.cfg.NoWindow {
		if err := t.window(&cfg, a, viewer, profile); err != nil {
			return nil, err
		}
	}
	return react.New(cfg)
}

// window gives an agent's config a window over the board as viewer sees
// it, within the input window of profile, and the read_context tool.
func (t *teamRun) window(cfg *react.Config, a Agent, viewer store.Viewer, profile llm.Profile) error {
	summarizer, err := t.cfg.Models.Model(llm.TierBasic)
	if err != nil {
		return fmt.Errorf("factory: the summarizer for agent %q: %w", a.Name, err)
	}
	return GiveWindow(cfg, t.cfg.Window, window.NewBoardStore(t.board, viewer), summarizer, profile.MaxInputTokens)
}

// GiveWindow gives an agent's config a window with wc's policies that
// offloads to and reads back from bs and summarizes with summarizer,
// within a model input window of maxInput tokens (0: unknown) less a
// reserve for the reply, and the read_context tool to read back what the
// window moved out (unless the agent has a tool of that name already).
// The team's agents and a workflow file's react and worker nodes get
// their windows this way.
func GiveWindow(cfg *react.Config, wc window.Config, bs *window.BoardStore, summarizer llms.Model, maxInput int) error {
	wc.Offloader, wc.Summarizer = bs, summarizer
	cfg.Window = window.New(wc)
	cfg.Budget = window.Budget{MaxInputTokens: maxInput}
	if maxInput > 16_000 {
		cfg.Budget.ReserveForOutput = 4096
	}
	if cfg.Tools == nil {
		cfg.Tools = &tools.Registry{}
	}
	if _, err := cfg.Tools.Get(window.ReadContextName); err == nil {
		return nil
	}
	if err := cfg.Tools.Register(window.ReadContextTool(bs)); err != nil {
		return fmt.Errorf("factory: agent %q: %w", cfg.Name, err)
	}
	return nil
}

// giveSkills gives the agent a's skills, those of the team's it names.
func giveSkills(cfg *react.Config, all *skills.Set, a Agent) error {
	sub, _ := all.Subset(a.Skills...)
	prompt, err := sub.Equip(cfg.SystemPrompt, cfg.Tools)
	if err != nil {
		return fmt.Errorf("factory: agent %q: %w", a.Name, err)
	}
	cfg.SystemPrompt = prompt
	return nil
}
