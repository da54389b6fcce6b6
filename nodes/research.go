package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/tools"
)

// ResearchTeam returns the step router of the research workflow: it picks
// the next step of the plan that has no result, in plan order, and sends
// it to the worker node named for the step's agent (workers maps agent
// names to nodes; a step whose agent has no node goes by step type:
// research to workers["researcher"], processing to workers["coder"]).
// Steps whose dependency failed are already marked skipped by the worker
// (plan.Plan.SkipDependents). When every step has a result it goes to planner.
func ResearchTeam(workers map[string]string, planner string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		p := PlanKey.Get(s)
		if p == nil {
			return graph.Goto(planner), nil
		}
		ready := p.Ready()
		if len(ready) == 0 {
			return graph.Goto(planner), nil
		}
		st := ready[0]
		node, ok := workers[st.AgentName]
		if !ok {
			node = workers["researcher"]
			if st.StepType == plan.StepProcessing {
				node = workers["coder"]
			}
		}
		if node == "" {
			return graph.Command{}, fmt.Errorf("nodes: research team: no worker for step %q (agent %q, type %q)", st.ID, st.AgentName, st.StepType)
		}
		return graph.Goto(node, CurrentStep.Set(st.ID)), nil
	}
}

// WorkerConfig configures a research-team worker node.
type WorkerConfig struct {
	Agent *react.Agent
	// Threshold is the confidence under which the step runs once more
	// (DefaultConfidenceThreshold when 0).
	Threshold float64
}

// Worker returns a node that runs the plan's CurrentStep with its agent,
// records the result on the plan and in Findings, and marks the steps that
// depended on a failed step as skipped.
func Worker(cfg WorkerConfig) (graph.NodeFunc, error) {
	if cfg.Agent == nil {
		return nil, fmt.Errorf("%w: a worker needs an agent", ErrNoModel)
	}
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		p := PlanKey.Get(s)
		id := CurrentStep.Get(s)
		if p == nil || p.Step(id) == nil {
			return graph.Command{}, fmt.Errorf("nodes: worker %q: the plan has no step %q", cfg.Agent.Name(), id)
		}
		step := *p.Step(id)
		res, err := RunStep(ctx, StepRun{Agent: cfg.Agent, Plan: p, Step: step, Handoffs: p.Handoffs(step), Threshold: cfg.Threshold})
		if err != nil {
			return graph.Command{}, err
		}
		np := p.Clone()
		np.Step(id).Result = &res
		found := []plan.Finding{np.Step(id).Finding()}
		found = append(found, np.SkipDependents()...)
		return graph.Update(PlanKey.Set(np), AddFindings(s, found)), nil
	}, nil
}

// BackgroundConfig configures the background investigator.
type BackgroundConfig struct {
	// Search is the web search tool (tools.WebSearch); the node writes
	// nothing when it is nil.
	Search tools.Tool
	// Next is the planner.
	Next    string
	Timeout time.Duration
}

// BackgroundInvestigator returns a node that searches the web for the
// Request before planning, so the planner starts from facts, and writes
// what it found to Background. A failed search is noted, not fatal.
func BackgroundInvestigator(cfg BackgroundConfig) (graph.NodeFunc, error) {
	if cfg.Next == "" {
		return nil, fmt.Errorf("nodes: the background investigator needs its Next node")
	}
	var search *tools.Caller
	if cfg.Search != nil {
		reg, err := tools.NewRegistry(cfg.Search)
		if err != nil {
			return nil, fmt.Errorf("nodes: background investigator: %w", err)
		}
		search = tools.Observe(reg, tools.RecordFailures()) // a failed search is noted, and stays noted
	}
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		if search == nil {
			return graph.Goto(cfg.Next), nil
		}
		args, _ := json.Marshal(map[string]any{"query": Request.Get(s)})
		res, err := search.Run(ctx, tools.Call{Name: cfg.Search.Name(), Args: args}, tools.RunOptions{Timeout: cfg.Timeout})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Goto(cfg.Next, Background.Set(res.Text())), nil
	}, nil
}
