package workflows

import (
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/tools"
)

// Node names of the built-in workflows.
const (
	NodeCoordinator = "coordinator"
	NodeBackground  = "background_investigator"
	NodePlanner     = "planner"
	NodeFeedback    = "human_feedback"
	NodeResearch    = "research_team"
	NodeResearcher  = "researcher"
	NodeCoder       = "coder"
	NodeReporter    = "reporter"
	NodeReview      = "review"
	NodeTeam        = "team"
)

// Config configures a built-in workflow.
type Config struct {
	// Models serves the tiers: coordinator and reporter use basic, the
	// planner, the builder and the meta-prompt stage reasoning, agents
	// the tier they were built with.
	Models factory.Models
	// Tools are the tools agents may use; Search, when nil, is the
	// "web_search" tool of Tools, if any.
	Tools  *tools.Registry
	Search tools.Tool
	// Store keeps the agent registry, the mission boards and the
	// meta-prompt cache (in memory when nil), for Owner ("default"). A
	// write that leaves an always-loaded item larger than
	// board.DefaultWarnSize shows as a warning event in the run.
	Store store.Store
	Owner string
	// AutoAccept skips the human review of plans.
	AutoAccept bool
	// MaxSteps per plan (3), MaxIterations of planning (1), MaxTurns per
	// agent (25), the confidence Threshold (0.8).
	MaxSteps      int
	MaxIterations int
	MaxTurns      int
	Threshold     float64
	// FailFast stops the team at the first failed step.
	FailFast bool
	// BuildConcurrency and StepConcurrency bound the team (4 and none).
	BuildConcurrency int
	StepConcurrency  int
	// Graph are options for Compile (a saver, a step limit...).
	Graph []graph.Option
}

func (c *Config) defaults() error {
	if c.Models == nil {
		return errors.New("workflows: Config.Models is required")
	}
	if c.Store == nil {
		c.Store = memory.New(store.Config{})
	}
	c.Store = runStore(c.Store)
	if c.Owner == "" {
		c.Owner = "default"
	}
	if c.Tools == nil {
		c.Tools = &tools.Registry{}
	}
	if c.Search == nil {
		if t, err := c.Tools.Get("web_search"); err == nil {
			c.Search = t
		}
	}
	return nil
}

func (c *Config) model(t llm.Tier) (llms.Model, llm.ModelInfo, error) {
	m, err := c.Models.Model(t)
	if err != nil {
		return nil, llm.ModelInfo{}, fmt.Errorf("workflows: tier %s: %w", t, err)
	}
	return m, llm.ModelInfo{Tier: string(t), Model: c.Models.Profile(t).Model}, nil
}

// front adds the coordinator, planner, review and reporter that both
// workflows share, with the planner handing plans to review and review
// sending accepted plans to next.
func front(g *graph.Graph, c *Config, agents nodes.AgentDirectory, dynamic bool, afterCoordinator, review, next string) error {
	basic, basicInfo, err := c.model(llm.TierBasic)
	if err != nil {
		return err
	}
	reasoning, reasoningInfo, err := c.model(llm.TierReasoning)
	if err != nil {
		return err
	}
	coordinator, err := nodes.Coordinator(nodes.CoordinatorConfig{Model: basic, Info: basicInfo, Next: afterCoordinator})
	if err != nil {
		return err
	}
	planner, err := nodes.Planner(nodes.PlannerConfig{
		Model: reasoning, Info: reasoningInfo, Agents: agents, AllowNewAgents: dynamic,
		MaxSteps: c.MaxSteps, MaxIterations: c.MaxIterations, Review: review, Reporter: NodeReporter,
	})
	if err != nil {
		return err
	}
	rev, err := nodes.HumanReview(nodes.ReviewConfig{
		AutoAccept: c.AutoAccept, Next: next, Replan: NodePlanner,
		Agents: agents, AllowNewAgents: dynamic, MaxSteps: c.MaxSteps,
	})
	if err != nil {
		return err
	}
	reporter, err := nodes.Reporter(nodes.ReporterConfig{Model: basic, Info: basicInfo, Read: factory.OutputReader(c.Store, c.Owner)})
	if err != nil {
		return err
	}
	g.AddNode(NodeCoordinator, coordinator, graph.Destinations(afterCoordinator, graph.End))
	g.AddNode(NodePlanner, planner, graph.Destinations(review, NodeReporter))
	g.AddNode(review, rev, graph.Destinations(next, NodePlanner))
	g.AddNode(NodeReporter, reporter)
	g.AddEdge(graph.Start, NodeCoordinator)
	g.AddEdge(NodeReporter, graph.End)
	return nil
}

// Research returns the Deer-Flow-shaped workflow: coordinator →
// background investigator → planner → human feedback → research team →
// researcher | coder (one step at a time) → … → planner → reporter.
func Research(c Config) (*graph.Runnable, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	g := graph.New("research", nodes.Channels()...)
	if err := front(g, &c, nodes.DefaultAgents, false, NodeBackground, NodeFeedback, NodeResearch); err != nil {
		return nil, err
	}
	bg, err := nodes.BackgroundInvestigator(nodes.BackgroundConfig{Search: c.Search, Next: NodePlanner})
	if err != nil {
		return nil, err
	}
	g.AddNode(NodeBackground, bg, graph.Destinations(NodePlanner))
	g.AddNode(NodeResearch, nodes.ResearchTeam(map[string]string{"researcher": NodeResearcher, "coder": NodeCoder}, NodePlanner),
		graph.Destinations(NodeResearcher, NodeCoder, NodePlanner))
	for _, a := range factory.DefaultAgents()[:2] { // researcher, coder
		agent, err := c.agent(a)
		if err != nil {
			return nil, err
		}
		w, err := nodes.Worker(nodes.WorkerConfig{Agent: agent, Threshold: c.Threshold})
		if err != nil {
			return nil, err
		}
		g.AddNode(a.Name, w)
		g.AddEdge(a.Name, NodeResearch)
	}
	return g.Compile(c.Graph...)
}

func (c *Config) agent(a factory.Agent) (*react.Agent, error) {
	model, info, err := c.model(llm.Tier(a.Tier))
	if err != nil {
		return nil, err
	}
	reg, _ := c.Tools.Subset(a.Tools...)
	return react.New(react.Config{Name: a.Name, Model: model, Info: info, SystemPrompt: a.Prompt, Tools: reg, MaxTurns: c.MaxTurns})
}

// Coor returns the dynamic-agent workflow: coordinator → planner → review
// → team → planner | reporter. The planner may declare new agents; the
// team node builds them (the meta-prompt stage writes their prompts) and
// runs the plan's steps concurrently as a DAG.
func Coor(c Config) (*graph.Runnable, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	reg := factory.NewRegistry(c.Store, c.Owner)
	g := graph.New("coor", nodes.Channels()...)
	if err := front(g, &c, reg, true, NodePlanner, NodeReview, NodeTeam); err != nil {
		return nil, err
	}
	reasoning, info, err := c.model(llm.TierReasoning)
	if err != nil {
		return nil, err
	}
	exp, err := metaprompt.New(metaprompt.Config{Model: reasoning, ModelName: info.Model, Tier: info.Tier, Cache: c.Store, Owner: c.Owner})
	if err != nil {
		return nil, err
	}
	team, err := factory.Team(factory.TeamConfig{
		Registry: reg, Models: c.Models, Tools: c.Tools, Store: c.Store,
		Builder:          &factory.Builder{Model: reasoning, Info: info, Tools: c.Tools, WritePrompt: factory.ExpandWith(exp, c.Tools)},
		BuildConcurrency: c.BuildConcurrency, StepConcurrency: c.StepConcurrency,
		Threshold: c.Threshold, FailFast: c.FailFast, MaxTurns: c.MaxTurns,
	})
	if err != nil {
		return nil, err
	}
	g.AddNode(NodeTeam, team)
	g.AddEdge(NodeTeam, NodePlanner)
	return g.Compile(c.Graph...)
}
