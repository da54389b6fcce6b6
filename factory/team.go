package factory

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/teamhook"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/skills"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memories"
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
	// Skills are the skills agents may be given (Agent.Skills names
	// them). An agent with skills has their catalogue in its prompt and
	// the open_skill and read_skill_file tools.
	Skills *skills.Set
	// Memories, when set, remembers the summary of each step the team
	// completes, for the owner of the run: later threads recall it.
	Memories *memories.Memories
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
	// MaxTurns caps each agent's tool turns (react.DefaultMaxTurns).
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
	// Agents are given to the team directly: a step that names one of them
	// runs with it as it is, and the registry is neither read nor written
	// for it. Steps that name other agents find them in the registry, or
	// build them, as usual. Names must be unique.
	Agents []Agent
	// Plan, when set, gives the plan to run instead of the state's
	// (nodes.PlanKey): a fixed plan, such as an exported workflow's, that
	// may depend on the state (the request it serves). The team writes it
	// with its results to nodes.PlanKey, as it does any plan.
	Plan func(ctx context.Context, s graph.State) (*plan.Plan, error)

	// sees chooses the steps whose results a step receives (nil: the
	// steps it depends on); set only through internal/teamhook.
	sees teamhook.Sees
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
// Every build and every step is a task of the node (graph.Schedule), its
// result journaled: after an interrupt or a crash, finished builds and
// steps are not redone.
func Team(cfg TeamConfig) (graph.NodeFunc, error) {
	if cfg.Registry == nil || cfg.Models == nil {
		return nil, errors.New("factory: the team needs a registry and models")
	}
	if cfg.BuildConcurrency <= 0 {
		cfg.BuildConcurrency = 4
	}
	fixed, err := givenAgents(cfg.Agents)
	if err != nil {
		return nil, err
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
		if err := t.remember(ctx); err != nil {
			return graph.Command{}, err
		}
		return graph.Update(nodes.PlanKey.Set(t.plan), nodes.AddFindings(s, found)), nil
	}, nil
}

// givenAgents indexes the agents given to the team by name.
func givenAgents(agents []Agent) (map[string]Agent, error) {
	fixed := make(map[string]Agent, len(agents))
	for _, a := range agents {
		if a.Name == "" {
			return nil, errors.New("factory: an agent given to the team has no name")
		}
		if _, dup := fixed[a.Name]; dup {
			return nil, fmt.Errorf("factory: agent %q is given to the team twice", a.Name)
		}
		fixed[a.Name] = a
	}
	return fixed, nil
}

// teamPlan returns the plan the team runs: the fixed one, or the state's.
func teamPlan(ctx context.Context, cfg TeamConfig, s graph.State) (*plan.Plan, error) {
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

// teamRun is one run of the team node. Its files follow the run: agents.go
// builds the plan's agents, steps.go runs the steps, handoffs.go decides
// what each step sees and writes its results to the mission board.
type teamRun struct {
	cfg    TeamConfig
	fixed  map[string]Agent // given to the team directly, by name
	board  *board.Board
	prefix string // output names: step<N>-<id>

	// head is the plan as every step's task shows it: title and locale.
	head *plan.Plan
	// next maps a step id to the steps that depend on it, fixed before
	// the steps start (the plan itself changes as results come in).
	next map[string][]plan.Step

	// mu guards the agents while they are built and the plan's results
	// while the steps run.
	mu     sync.Mutex
	agents map[string]Agent
	plan   *plan.Plan
}

// open names the run's outputs after the engine's step and opens the
// mission board of the thread, when the team has a store.
func (t *teamRun) open(ctx context.Context) error {
	info, _ := graph.TaskOf(ctx)
	t.prefix = fmt.Sprintf("step%d-", info.Step)
	if t.cfg.Store == nil {
		return nil
	}
	b, err := MissionBoard(ctx, t.cfg.Store, t.cfg.Registry.OwnerOf(ctx))
	if err != nil {
		return err
	}
	t.board = b
	return nil
}

// MissionBoard opens the mission board in s of the thread ctx runs in
// (RuntimeThread, else the engine's thread, else "local"), for owner: the
// board a team's agents share, where windows offload what they move out.
func MissionBoard(ctx context.Context, s store.Store, owner string) (*board.Board, error) {
	info, _ := graph.TaskOf(ctx)
	run := graph.RuntimeString(ctx, graph.RuntimeThread) // the thread as its owner named it
	if run == "" {
		run = info.Thread
	}
	if run == "" {
		run = "local"
	}
	b, err := board.New(s, owner, url.PathEscape(run)) // a board's run id is one path segment
	if err != nil {
		return nil, fmt.Errorf("factory: open the mission board of %q: %w", run, err)
	}
	return b, nil
}

// remember keeps the summary of each step done as a memory of the run's
// owner, once per step (journaled).
func (t *teamRun) remember(ctx context.Context) error {
	m := t.cfg.Memories
	if m == nil {
		return nil
	}
	for _, st := range t.plan.Steps {
		if st.Result == nil || st.Result.Status != plan.StepDone || st.Result.Summary == "" {
			continue
		}
		text := fmt.Sprintf("%s — %s: %s", t.plan.Title, st.Title, st.Result.Summary)
		if _, err := graph.Do(ctx, "remember "+st.ID, func(ctx context.Context) (string, error) {
			mem, err := m.Remember(ctx, m.OwnerOf(ctx), text, st.AgentName)
			return mem.ID, err
		}); err != nil {
			return fmt.Errorf("factory: remember step %s: %w", st.ID, err)
		}
	}
	return nil
}
