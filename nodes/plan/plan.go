package plan

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Plan is what the planner produces and the team carries out: steps, the
// agent that runs each, and the new agents the steps need. It covers both
// the Deer-Flow shape (research and processing steps run by predefined
// roles) and the CoorAgent shape (new agents, each step naming its agent).
type Plan struct {
	Title            string      `json:"title"`
	Thought          string      `json:"thought"`
	Locale           string      `json:"locale"`
	HasEnoughContext bool        `json:"has_enough_context"`
	NewAgentsNeeded  []AgentSpec `json:"new_agents_needed"`
	Steps            []Step      `json:"steps"`
}

// AgentSpec is an agent the plan needs and the registry does not have yet.
type AgentSpec struct {
	Name         string `json:"name" jsonschema:"required,description=Short snake_case name, unique in the plan"`
	Role         string `json:"role" jsonschema:"required,description=What the agent is, in one sentence"`
	Capabilities string `json:"capabilities" jsonschema:"required,description=What it must be able to do, including the tools it needs"`
	Contribution string `json:"contribution" jsonschema:"required,description=What it contributes to this plan"`
}

// Step types.
const (
	StepResearch   = "research"   // gathers information
	StepProcessing = "processing" // computes, writes code, transforms
)

// Step is one unit of work of a plan.
type Step struct {
	ID          string   `json:"id"`
	AgentName   string   `json:"agent_name"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Note        string   `json:"note,omitempty"`
	StepType    string   `json:"step_type"`
	NeedSearch  bool     `json:"need_search"`
	DependsOn   []string `json:"depends_on,omitempty"`
	// Result is filled when the step has run.
	Result *StepResult `json:"result,omitempty"`
}

// Step statuses.
const (
	StepDone    = "done"
	StepFailed  = "failed"
	StepSkipped = "skipped" // a step it depends on failed
)

// StepResult is the outcome of a step: a short summary and a reference to
// the full output on the mission board, never the agent's transcript.
type StepResult struct {
	Status string `json:"status"`
	// Summary is one or two sentences; Output the full result, kept here
	// only when no board holds it (Ref empty).
	Summary string `json:"summary"`
	Output  string `json:"output,omitempty"`
	Ref     string `json:"ref,omitempty"`
	// Confidence is the agent's own estimate, 0 to 1; Reasoning a short
	// trace of what was tried, kept or dropped, and why.
	Confidence float64 `json:"confidence"`
	Reasoning  string  `json:"reasoning,omitempty"`
	// Sources are the URLs or documents the result rests on.
	Sources  []string `json:"sources,omitempty"`
	Error    string   `json:"error,omitempty"`
	Attempts int      `json:"attempts"`
}

// Clone returns a copy of p that shares nothing mutable with it.
func (p *Plan) Clone() *Plan {
	if p == nil {
		return nil
	}
	c := *p
	c.NewAgentsNeeded = slices.Clone(p.NewAgentsNeeded)
	c.Steps = make([]Step, len(p.Steps))
	for i, s := range p.Steps {
		s.DependsOn = slices.Clone(s.DependsOn)
		if s.Result != nil {
			r := *s.Result
			r.Sources = slices.Clone(r.Sources)
			s.Result = &r
		}
		c.Steps[i] = s
	}
	return &c
}

// Step returns the step with id, or nil.
func (p *Plan) Step(id string) *Step {
	for i := range p.Steps {
		if p.Steps[i].ID == id {
			return &p.Steps[i]
		}
	}
	return nil
}

// Done reports whether every step has a result.
func (p *Plan) Done() bool {
	for _, s := range p.Steps {
		if s.Result == nil {
			return false
		}
	}
	return true
}

var agentNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)

// Rules are what Validate checks a plan against.
type Rules struct {
	// Known reports whether an agent exists already; nil: none does.
	Known func(name string) bool
	// MaxSteps caps the steps (0: no limit).
	MaxSteps int
	// AllowNewAgents lets the plan declare new agents (a team with a
	// factory); without it new_agents_needed must stay empty.
	AllowNewAgents bool
}

// Validate returns the problems of a plan, in words a model can act on:
// steps naming an agent that is neither known nor new, a cycle or an
// unknown id in depends_on, duplicate ids, more steps than r.MaxSteps, a
// new agent that no step uses or that r does not allow, a bad step type. A
// declared new agent that exists is not a problem: the team reuses it.
func (p *Plan) Validate(r Rules) []string {
	known := r.Known
	if known == nil {
		known = func(string) bool { return false }
	}
	maxSteps := r.MaxSteps
	var probs []string
	newAgents := map[string]bool{}
	for _, a := range p.NewAgentsNeeded {
		switch {
		case !agentNamePattern.MatchString(a.Name):
			probs = append(probs, fmt.Sprintf("new agent name %q must be snake_case: lowercase letters, digits and _ (at most 48), starting with a letter", a.Name))
		case newAgents[a.Name]:
			probs = append(probs, fmt.Sprintf("new agent %q is declared twice", a.Name))
		}
		newAgents[a.Name] = true
	}
	if maxSteps > 0 && len(p.Steps) > maxSteps {
		probs = append(probs, fmt.Sprintf("the plan has %d steps; at most %d are allowed: merge or drop steps", len(p.Steps), maxSteps))
	}
	if len(p.Steps) == 0 && !p.HasEnoughContext {
		probs = append(probs, "the plan has no steps but has_enough_context is false")
	}
	ids := map[string]bool{}
	used := map[string]bool{}
	for _, s := range p.Steps {
		if s.ID == "" {
			probs = append(probs, fmt.Sprintf("step %q has no id", s.Title))
		} else if ids[s.ID] {
			probs = append(probs, fmt.Sprintf("step id %q is used twice", s.ID))
		}
		ids[s.ID] = true
		used[s.AgentName] = true
		if !newAgents[s.AgentName] && !known(s.AgentName) {
			probs = append(probs, fmt.Sprintf("step %q names agent %q, which is neither an available agent nor in new_agents_needed", s.ID, s.AgentName))
		}
		if s.StepType != StepResearch && s.StepType != StepProcessing {
			probs = append(probs, fmt.Sprintf("step %q has step_type %q; use %q or %q", s.ID, s.StepType, StepResearch, StepProcessing))
		}
	}
	for _, s := range p.Steps {
		for _, d := range s.DependsOn {
			if !ids[d] {
				probs = append(probs, fmt.Sprintf("step %q depends on %q, which is not a step of the plan", s.ID, d))
			}
		}
	}
	if cycle := p.cycle(); cycle != nil {
		probs = append(probs, fmt.Sprintf("depends_on has a cycle: %s", strings.Join(cycle, " -> ")))
	}
	for _, a := range p.NewAgentsNeeded {
		if !used[a.Name] {
			probs = append(probs, fmt.Sprintf("new agent %q is not used by any step: drop it or give it a step", a.Name))
		}
	}
	if !r.AllowNewAgents && len(p.NewAgentsNeeded) > 0 {
		probs = append(probs, "new_agents_needed must be empty: this team cannot build new agents")
	}
	return probs
}

// cycle returns the ids of a dependency cycle, first id repeated at the
// end, or nil.
func (p *Plan) cycle() []string {
	deps := map[string][]string{}
	for _, s := range p.Steps {
		deps[s.ID] = s.DependsOn
	}
	const (
		unseen = iota
		active
		finished
	)
	state := map[string]int{}
	var stack []string
	var found []string
	var visit func(id string) bool
	visit = func(id string) bool {
		state[id] = active
		stack = append(stack, id)
		for _, d := range deps[id] {
			if _, ok := deps[d]; !ok {
				continue
			}
			switch state[d] {
			case active:
				i := slices.Index(stack, d)
				found = append(slices.Clone(stack[i:]), d)
				return true
			case unseen:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[id] = finished
		return false
	}
	for _, s := range p.Steps {
		if state[s.ID] == unseen && visit(s.ID) {
			return found
		}
	}
	return nil
}

// Ready returns the steps without a result whose dependencies all have
// one, in plan order.
func (p *Plan) Ready() []*Step {
	var out []*Step
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Result != nil {
			continue
		}
		ok := true
		for _, d := range s.DependsOn {
			if ds := p.Step(d); ds == nil || ds.Result == nil {
				ok = false
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}
