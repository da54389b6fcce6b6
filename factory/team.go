package factory

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
)

// Models gives the model of a tier (llm.Models does).
type Models interface {
	Model(llm.Tier) (llms.Model, error)
	Profile(llm.Tier) llm.Profile
}

// TeamConfig configures the team node.
type TeamConfig struct {
	Registry *Registry
	Builder  *Builder
	Models   Models
	// Tools are the tools agents may be given.
	Tools *tools.Registry
	// Store holds the mission board: full outputs, handoffs, progress.
	// Without it, outputs stay inline in the plan.
	Store store.Store
	// BuildConcurrency caps agents built at once (default 4);
	// StepConcurrency steps run at once (0: no cap).
	BuildConcurrency int
	StepConcurrency  int
	// Threshold is the confidence under which a step runs once more,
	// deeper (nodes.DefaultConfidenceThreshold when 0).
	Threshold float64
	// FailFast stops the team at the first failed step; by default a
	// failed step is recorded, its dependents skipped, and the rest run.
	FailFast bool
	// MaxTurns caps each agent's tool turns (nodes.DefaultMaxTurns).
	MaxTurns int
	// Window holds the context policies of the agents' windows (budgets,
	// thresholds); the team sets their offloader and summarizer. The zero
	// value takes the mission's defaults.
	Window window.Config
	// NoWindow sends agents their whole context as it is. By default,
	// with a Store, each agent's calls are assembled by a window over the
	// mission board (large results offloaded and readable back with the
	// read_context tool, long histories summarized, snapshots published),
	// within the input window of its model's profile.
	NoWindow bool
	// ShareAllResults hands every step the full results of all the steps
	// completed before it, and runs the steps one at a time in plan order
	// — CoorAgent's shared history. It exists to measure what isolation
	// saves; leave it off.
	ShareAllResults bool
	// Agents are given to the team directly: a step that names one of them
	// runs with it as it is, and the registry is neither read nor written
	// for it. Steps that name other agents find them in the registry, or
	// build them, as usual. Names must be unique.
	Agents []Agent
	// Plan, when set, gives the plan to run instead of the state's
	// (nodes.PlanKey): a fixed plan, such as an exported workflow's, that
	// may depend on the state (the request it serves). The team writes it
	// with its results to nodes.PlanKey, as it does any plan.
	Plan func(ctx context.Context, s graph.State) (*nodes.Plan, error)
}

// ErrStepFailed: with FailFast, a step failed.
var ErrStepFailed = errors.New("factory: step failed")

// Team returns the team node. Given the plan (nodes.PlanKey, or
// TeamConfig.Plan), it builds every new agent the plan declares —
// concurrently, reusing the agents given to it (TeamConfig.Agents) and
// those the registry already has — then runs the steps as a DAG: every step whose
// dependencies are done runs at once, each as a ReAct agent that sees only
// its task, its dependencies' handoffs and the board items its visibility
// allows. Each result is a summary, a confidence and a reasoning trace plus
// a reference to the full output on the mission board; a result under the
// confidence threshold runs once more, deeper. It writes the plan with its
// results and the findings, and follows its edges (back to the planner).
// Every build and every step goes through the journal: after an interrupt
// or a crash, finished builds and steps are not redone.
func Team(cfg TeamConfig) (graph.NodeFunc, error) {
	if cfg.Registry == nil || cfg.Models == nil {
		return nil, errors.New("factory: the team needs a registry and models")
	}
	if cfg.BuildConcurrency <= 0 {
		cfg.BuildConcurrency = 4
	}
	fixed := make(map[string]Agent, len(cfg.Agents))
	for _, a := range cfg.Agents {
		if a.Name == "" {
			return nil, errors.New("factory: an agent given to the team has no name")
		}
		if _, dup := fixed[a.Name]; dup {
			return nil, fmt.Errorf("factory: agent %q is given to the team twice", a.Name)
		}
		fixed[a.Name] = a
	}
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		p, err := teamPlan(ctx, cfg, s)
		if err != nil {
			return graph.Command{}, err
		}
		t := &teamRun{cfg: cfg, fixed: fixed, plan: p.Clone()}
		if err := t.open(ctx); err != nil {
			return graph.Command{}, err
		}
		if err := t.buildAgents(ctx); err != nil {
			return graph.Command{}, err
		}
		found, err := t.runSteps(ctx)
		if err != nil {
			return graph.Command{}, err
		}
		// Plan order, not finishing order: what follows must not depend on
		// timing.
		order := map[string]int{}
		for i, st := range t.plan.Steps {
			order[st.ID] = i
		}
		slices.SortStableFunc(found, func(a, b nodes.Finding) int { return order[a.StepID] - order[b.StepID] })
		return graph.Update(nodes.PlanKey.Set(t.plan), nodes.Findings.Set(found)), nil
	}, nil
}

// teamPlan returns the plan the team runs: the fixed one, or the state's.
func teamPlan(ctx context.Context, cfg TeamConfig, s graph.State) (*nodes.Plan, error) {
	if cfg.Plan == nil {
		if p := nodes.PlanKey.Get(s); p != nil {
			return p, nil
		}
		return nil, errors.New("factory: the team has no plan to run")
	}
	p, err := cfg.Plan(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("factory: the team's plan: %w", err)
	}
	if p == nil {
		return nil, errors.New("factory: the team has no plan to run")
	}
	return p, nil
}

// teamRun is one run of the team node.
type teamRun struct {
	cfg    TeamConfig
	fixed  map[string]Agent // given to the team directly, by name
	plan   *nodes.Plan
	board  *board.Board
	prefix string // output names: step<N>-<id>

	// next maps a step id to the steps that depend on it, fixed before
	// the steps start (the plan itself changes as results come in).
	next map[string][]nodes.Step

	mu     sync.Mutex
	agents map[string]Agent
}

func (t *teamRun) open(ctx context.Context) error {
	info, _ := graph.TaskOf(ctx)
	run := graph.RuntimeString(ctx, graph.RuntimeThread) // the thread as its owner named it
	if run == "" {
		run = info.Thread
	}
	if run == "" {
		run = "local"
	}
	run = url.PathEscape(run) // a board's run id is one path segment
	t.prefix = fmt.Sprintf("step%d-", info.Step)
	if t.cfg.Store == nil {
		return nil
	}
	b, err := board.New(t.cfg.Store, t.cfg.Registry.OwnerOf(ctx), run)
	if err != nil {
		return fmt.Errorf("factory: open the mission board of %q: %w", run, err)
	}
	t.board = b
	return nil
}

// buildAgents loads every agent the plan's steps name — given to the
// team, or from the registry — building the new ones concurrently.
func (t *teamRun) buildAgents(ctx context.Context) error {
	t.agents = map[string]Agent{}
	specs := map[string]nodes.AgentSpec{}
	for _, sp := range t.plan.NewAgentsNeeded {
		specs[sp.Name] = sp
	}
	var todo []nodes.AgentSpec
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
		case errors.Is(err, ErrAgentNotFound):
			sp, ok := specs[st.AgentName]
			if !ok {
				return fmt.Errorf("factory: step %q names agent %q, which neither exists nor is declared in new_agents_needed", st.ID, st.AgentName)
			}
			t.agents[st.AgentName] = Agent{} // placeholder until built
			todo = append(todo, sp)
		default:
			return err
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if t.cfg.Builder == nil {
		return fmt.Errorf("factory: the plan needs new agents (%s) but the team has no builder", specNames(todo))
	}
	sem := make(chan struct{}, t.cfg.BuildConcurrency)
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, sp := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			errs[i] = t.build(ctx, sp)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func specNames(specs []nodes.AgentSpec) string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

func (t *teamRun) build(ctx context.Context, sp nodes.AgentSpec) error {
	built, err := t.cfg.Builder.Build(ctx, sp, t.plan.Locale)
	if err != nil {
		return err
	}
	a, err := t.cfg.Registry.Add(ctx, built.Agent)
	if errors.Is(err, store.ErrExists) {
		// Built earlier (a run that stopped after storing it, or another
		// run): the stored agent wins.
		a, err = t.cfg.Registry.Get(ctx, sp.Name)
	}
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.agents[sp.Name] = a
	t.mu.Unlock()
	graph.Publish(ctx, graph.Event{Kind: graph.EventAgentCreated, Data: graph.AgentEvent{
		Agent: a.Name, Role: a.Role, Tier: a.Tier, Tools: a.Tools, Summary: a.Description,
	}})
	if len(built.Dropped) > 0 {
		graph.Publish(ctx, graph.Event{Kind: graph.EventWarning, Data: fmt.Sprintf(
			"agent %q asked for tools that do not exist and were dropped: %s", a.Name, strings.Join(built.Dropped, ", "))})
	}
	return nil
}

type outcome struct {
	id  string
	res nodes.StepResult
	err error
}

// runSteps runs every step without a result, each as soon as its
// dependencies are done, and returns their findings.
func (t *teamRun) runSteps(ctx context.Context) ([]nodes.Finding, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	head := &nodes.Plan{Title: t.plan.Title, Locale: t.plan.Locale}
	t.next = map[string][]nodes.Step{}
	for _, s := range t.plan.Steps {
		for _, d := range s.DependsOn {
			s.Result = nil
			t.next[d] = append(t.next[d], s)
		}
	}
	done := make(chan outcome)
	started := map[string]bool{}
	running := 0
	var found []nodes.Finding
	var first error
	var paused []error // interrupts: the run pauses once the others are done
	for {
		found = append(found, nodes.SkipDependents(t.plan)...)
		if first == nil {
			limit := t.cfg.StepConcurrency
			if t.cfg.ShareAllResults {
				limit = 1
			}
			for _, st := range t.plan.Ready() {
				if started[st.ID] || (limit > 0 && running >= limit) {
					continue
				}
				started[st.ID] = true
				running++
				step, a := *st, t.agents[st.AgentName]
				hs, err := t.handoffs(ctx, step)
				if err != nil {
					first = err
					cancel()
					break
				}
				go func() {
					res, err := t.runStep(ctx, head, step, hs, a)
					done <- outcome{id: step.ID, res: res, err: err}
				}()
			}
		}
		if running == 0 {
			if first == nil && len(paused) > 0 {
				return found, errors.Join(paused...)
			}
			return found, first
		}
		o := <-done
		running--
		var ie *graph.InterruptError
		switch {
		case errors.As(o.err, &ie):
			paused = append(paused, o.err)
		case o.err != nil:
			if first == nil {
				first = o.err
				cancel()
			}
		case first == nil:
			st := t.plan.Step(o.id)
			st.Result = &o.res
			found = append(found, nodes.FindingOf(*st))
			if o.res.Status == nodes.StepFailed && t.cfg.FailFast {
				first = fmt.Errorf("%w: %s: %s", ErrStepFailed, o.id, o.res.Error)
				cancel()
			}
		}
	}
}

// runStep runs one step with its agent and publishes its result on the
// board.
func (t *teamRun) runStep(ctx context.Context, head *nodes.Plan, step nodes.Step, hs []nodes.Handoff, a Agent) (nodes.StepResult, error) {
	viewer := store.Viewer{Task: step.ID, Agent: agentRun(step, a)}
	agent, err := t.agent(a, viewer)
	if err != nil {
		return nodes.StepResult{Status: nodes.StepFailed, Error: err.Error(), Attempts: 0}, nil
	}
	extra, err := t.visibleNotes(ctx, viewer)
	if err != nil {
		return nodes.StepResult{}, err
	}
	res, err := nodes.RunStep(ctx, nodes.StepRun{Agent: agent, Plan: head, Step: step, Handoffs: hs, Extra: extra, Threshold: t.cfg.Threshold})
	if err != nil || t.board == nil || res.Status != nodes.StepDone {
		return res, err
	}
	return graph.Do(ctx, "publish "+step.ID, func(ctx context.Context) (nodes.StepResult, error) {
		ref, err := t.board.PutOutput(ctx, t.prefix+step.ID, res.Output)
		if err != nil {
			return res, fmt.Errorf("factory: store the output of step %s: %w", step.ID, err)
		}
		res.Ref, res.Output = ref, ""
		if _, err := t.board.AppendProgress(ctx, a.Name, fmt.Sprintf("%s %s: %s", step.ID, res.Status, res.Summary)); err != nil {
			return res, fmt.Errorf("factory: record the progress of step %s: %w", step.ID, err)
		}
		for _, d := range t.next[step.ID] {
			text := fmt.Sprintf("%s\n\nFull result: %s", res.Summary, ref)
			if _, err := t.board.PutHandoff(ctx, agentRun(step, a), agentRun(d, t.agents[d.AgentName]), text); err != nil && !errors.Is(err, store.ErrExists) {
				return res, fmt.Errorf("factory: hand off step %s to %s: %w", step.ID, d.ID, err)
			}
		}
		return res, nil
	})
}

// handoffs returns what step receives from the steps it depends on: their
// full results, read back from the board.
func (t *teamRun) handoffs(ctx context.Context, step nodes.Step) ([]nodes.Handoff, error) {
	if t.cfg.ShareAllResults {
		step.DependsOn = nil
		for _, s := range t.plan.Steps {
			if s.Result != nil && s.ID != step.ID {
				step.DependsOn = append(step.DependsOn, s.ID)
			}
		}
	}
	hs := nodes.HandoffsFor(t.plan, step)
	if t.board == nil {
		return hs, nil
	}
	for i := range hs {
		ref := t.plan.Step(hs[i].From).Result.Ref
		if ref == "" {
			continue
		}
		hs[i].Ref = ref
		it, err := t.board.Get(ctx, store.Viewer{Task: step.ID, Agent: agentRun(step, t.agents[step.AgentName])}, ref)
		if err != nil {
			return nil, fmt.Errorf("factory: read the result of step %s for step %s: %w", hs[i].From, step.ID, err)
		}
		hs[i].Text = it.Content
	}
	return hs, nil
}

// agentRun is the id of one run of an agent: its private board's key.
func agentRun(step nodes.Step, a Agent) string { return a.Name + "." + step.ID }

// agent makes the ReAct agent of a built agent, for one step: with a
// window over the board as viewer sees it, and the read_context tool to
// read back what the window offloaded.
func (t *teamRun) agent(a Agent, viewer store.Viewer) (*nodes.ReAct, error) {
	tier, err := llm.ParseTier(a.Tier)
	if err != nil {
		tier = llm.TierBasic
	}
	model, err := t.cfg.Models.Model(tier)
	if err != nil {
		return nil, fmt.Errorf("factory: agent %q: %w", a.Name, err)
	}
	reg := &tools.Registry{}
	if t.cfg.Tools != nil && len(a.Tools) > 0 {
		reg, _ = t.cfg.Tools.Subset(a.Tools...)
	}
	profile := t.cfg.Models.Profile(tier)
	cfg := nodes.ReActConfig{
		Name: a.Name, Model: model, SystemPrompt: a.Prompt, Tools: reg, MaxTurns: t.cfg.MaxTurns,
		Info: llm.ModelInfo{Tier: string(tier), Model: profile.Model},
	}
	if t.board != nil && !t.cfg.NoWindow {
		summarizer, err := t.cfg.Models.Model(llm.TierBasic)
		if err != nil {
			return nil, fmt.Errorf("factory: the summarizer for agent %q: %w", a.Name, err)
		}
		bs := window.NewBoardStore(t.board, viewer)
		wc := t.cfg.Window
		wc.Offloader, wc.Summarizer = bs, summarizer
		cfg.Window = window.New(wc)
		cfg.Budget = window.Budget{MaxInputTokens: profile.MaxInputTokens}
		if profile.MaxInputTokens > 16_000 {
			cfg.Budget.ReserveForOutput = 4096
		}
		if err := reg.Register(window.ReadContextTool(bs)); err != nil {
			return nil, fmt.Errorf("factory: agent %q: %w", a.Name, err)
		}
	}
	return nodes.NewReAct(cfg)
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

// OutputReader returns a function that reads back a step output the team
// stored on a mission board, for the owner of the run in ctx (the
// graph.RuntimeOwner runtime value, owner when there is none) — what the
// reporter needs.
func OutputReader(s store.Store, owner string) func(ctx context.Context, ref string) (string, error) {
	return func(ctx context.Context, ref string) (string, error) {
		o := graph.RuntimeString(ctx, graph.RuntimeOwner)
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
