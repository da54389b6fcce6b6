package workflows

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes/plan"
)

// agentName is the form of an agent's name (as plans name agents).
var agentName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)

// fixedTeam is what the plan and agents sections of a team node compile
// to: the agents given to the team, and the fixed plan with its templates.
type fixedTeam struct {
	agents []factory.Agent
	plan   *planSpec // nil: the team runs the state's plan
	title  *template
	steps  []stepTemplates
}

// stepTemplates are the templates of a fixed plan's step.
type stepTemplates struct {
	title, description, note *template
}

// checkTeam checks the agents and plan sections of team node n.
func (f *File) checkTeam(ps *problems, n *fileNode) {
	ft := &fixedTeam{plan: n.Spec.Plan}
	given := map[string]bool{}
	for _, e := range mapping(&n.Spec.Agents, n.Ptr+"/agents") {
		if !agentName.MatchString(e.Name) {
			l := f.doc.loc(e.Ptr)
			ps.at(l.key, l.path, "agent name %q must be snake_case: lowercase letters, digits and _ (at most 48), starting with a letter", e.Name)
			continue
		}
		var a agentSpec
		if err := e.node.Decode(&a); err != nil {
			l := f.doc.loc(e.Ptr)
			ps.at(l.key, l.path, "agent %q: %v", e.Name, err)
			continue
		}
		for i, t := range a.Tools {
			if msg := f.ambiguousMCP(t); msg != "" {
				l := f.doc.loc(fmt.Sprintf("%s/tools/%d", e.Ptr, i))
				ps.at(l.val, l.path, "%s", msg)
			} else if !f.knowsTool(t) {
				l := f.doc.loc(fmt.Sprintf("%s/tools/%d", e.Ptr, i))
				ps.at(l.val, l.path, "unknown tool %q%s", t, suggest(t, f.toolChoices(), "declare it under tools; the file declares"))
			}
		}
		f.skillRefs(ps, e.Ptr, a.Skills)
		tier := a.Tier
		if tier == "" {
			tier = "basic"
		}
		ft.agents = append(ft.agents, factory.Agent{Name: e.Name, Role: a.Role, Description: a.Description,
			Tier: tier, Tools: a.Tools, Skills: a.Skills, Prompt: a.System, PromptPinned: true})
		given[e.Name] = true
	}
	if ft.plan != nil {
		f.checkPlan(ps, n.Ptr+"/plan", ft, given)
	}
	if ft.plan != nil || len(ft.agents) > 0 {
		n.team = ft
	}
}

// checkPlan checks a fixed plan: unique step ids, agents that exist,
// dependencies on steps of the plan without a cycle, and templates.
func (f *File) checkPlan(ps *problems, ptr string, ft *fixedTeam, given map[string]bool) {
	p := ft.plan
	ft.title = f.template(ps, ptr+"/title", p.Title)
	agents := slices.Sorted(maps.Keys(given))
	var builtins []string
	for _, a := range factory.DefaultAgents() {
		builtins = append(builtins, a.Name)
	}
	ids := map[string]int{}
	for i, st := range p.Steps {
		sp := fmt.Sprintf("%s/steps/%d", ptr, i)
		if first, dup := ids[st.ID]; dup {
			l := f.doc.loc(sp + "/id")
			ps.at(l.val, l.path, "step id %q is used twice (first at steps[%d])", st.ID, first)
		} else {
			ids[st.ID] = i
		}
		if !given[st.AgentName] && !slices.Contains(builtins, st.AgentName) {
			l := f.doc.loc(sp + "/agent_name")
			ps.at(l.val, l.path, "step %q names agent %q, which is neither under the node's agents nor built in (%s)%s",
				st.ID, st.AgentName, strings.Join(builtins, ", "), suggest(st.AgentName, append(agents, builtins...), "the agents are"))
		}
		ft.steps = append(ft.steps, stepTemplates{
			title:       f.template(ps, sp+"/title", st.Title),
			description: f.template(ps, sp+"/description", st.Description),
			note:        f.template(ps, sp+"/note", st.Note),
		})
	}
	known := true
	for i, st := range p.Steps {
		for j, d := range st.DependsOn {
			l := f.doc.loc(fmt.Sprintf("%s/steps/%d/depends_on/%d", ptr, i, j))
			switch _, ok := ids[d]; {
			case d == st.ID:
				ps.at(l.val, l.path, "step %q depends on itself", st.ID)
				known = false
			case !ok:
				ps.at(l.val, l.path, "step %q depends on %q, which is not a step of the plan%s", st.ID, d, suggest(d, slices.Sorted(maps.Keys(ids)), "the steps are"))
				known = false
			}
		}
	}
	if known {
		if cycle := stepCycle(p.Steps); cycle != nil {
			l := f.doc.loc(ptr + "/steps")
			ps.at(l.key, l.path, "depends_on has a cycle: %s; a step can only depend on steps that finish before it", strings.Join(cycle, " -> "))
		}
	}
}

// stepCycle returns a cycle of depends_on, as the path that closes it, or
// nil. Every dependency names a step.
func stepCycle(steps []stepSpec) []string {
	deps := map[string][]string{}
	for _, s := range steps {
		deps[s.ID] = s.DependsOn
	}
	const (
		visiting = 1
		done     = 2
	)
	mark := map[string]int{}
	var path []string
	var visit func(id string) []string
	visit = func(id string) []string {
		switch mark[id] {
		case visiting:
			i := slices.Index(path, id)
			return append(slices.Clone(path[i:]), id)
		case done:
			return nil
		}
		mark[id] = visiting
		path = append(path, id)
		for _, d := range deps[id] {
			if c := visit(d); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		mark[id] = done
		return nil
	}
	for _, s := range steps {
		if c := visit(s.ID); c != nil {
			return c
		}
	}
	return nil
}

// fixedPlan returns the function that renders a fixed plan from the state
// when the team runs (factory.TeamConfig.Plan).
func (f *File) fixedPlan(ft *fixedTeam) func(ctx context.Context, s graph.State) (*plan.Plan, error) {
	return func(ctx context.Context, s graph.State) (*plan.Plan, error) {
		p := &plan.Plan{Thought: ft.plan.Thought, Locale: ft.plan.Locale}
		if p.Locale == "" {
			p.Locale = "en-US"
		}
		var err error
		if p.Title, err = ft.title.render(ctx, f.scope, s); err != nil {
			return nil, fmt.Errorf("workflows: the plan's title: %w", err)
		}
		for i, st := range ft.plan.Steps {
			step := plan.Step{ID: st.ID, AgentName: st.AgentName, StepType: st.StepType, NeedSearch: st.NeedSearch,
				DependsOn: slices.Clone(st.DependsOn)}
			if step.StepType == "" {
				step.StepType = plan.StepResearch
			}
			t := ft.steps[i]
			for _, field := range []struct {
				name string
				tmpl *template
				out  *string
			}{{"title", t.title, &step.Title}, {"description", t.description, &step.Description}, {"note", t.note, &step.Note}} {
				if *field.out, err = field.tmpl.render(ctx, f.scope, s); err != nil {
					return nil, fmt.Errorf("workflows: step %s: %s: %w", st.ID, field.name, err)
				}
			}
			p.Steps = append(p.Steps, step)
		}
		return p, nil
	}
}
