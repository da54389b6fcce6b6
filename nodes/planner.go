package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/structured"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/window"
)

// AgentCard describes an agent a plan may name.
type AgentCard struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Created is when the agent was built (zero for a built-in one); the
	// planner prefers recent agents among equally fitting ones.
	Created time.Time `json:"created,omitzero"`
}

// AgentDirectory lists the agents that exist (the factory's registry).
type AgentDirectory interface {
	Cards(ctx context.Context) ([]AgentCard, error)
}

// StaticAgents is a fixed AgentDirectory.
type StaticAgents []AgentCard

// Cards returns the agents.
func (s StaticAgents) Cards(context.Context) ([]AgentCard, error) { return s, nil }

// DefaultAgents are the predefined roles of the research workflow.
var DefaultAgents = StaticAgents{
	{Name: "researcher", Description: "Searches the web and reads pages to gather facts, with sources."},
	{Name: "coder", Description: "Writes and runs Python to compute, analyse data or check claims."},
}

// PlannerConfig configures the planner node.
type PlannerConfig struct {
	Model llms.Model
	Info  llm.ModelInfo
	// Agents lists the agents steps may name (DefaultAgents when nil).
	Agents AgentDirectory
	// AllowNewAgents lets plans declare new agents (the coor workflow).
	AllowNewAgents bool
	// MaxSteps caps the steps of a plan (default 3); MaxIterations the
	// planner's rounds in one turn (default 1): plans made from the
	// request and the results so far, while the revisions a reviewer asks
	// for do not count; Repairs the times the model is asked to fix an
	// invalid plan (default 2).
	MaxSteps      int
	MaxIterations int
	Repairs       int
	// MaxAgents caps the agents the planner is shown (DefaultMaxAgents):
	// those that fit the request best, so that its prompt does not grow
	// with every agent the team ever built. A plan may still name any
	// agent of Agents.
	MaxAgents int
	// Review is the node that receives a new plan; Reporter the node that
	// writes the report once enough is known or the iterations are used.
	Review   string
	Reporter string
	// Recall, when set, returns what earlier threads learned that bears on
	// the request (store/memories); the planner's prompt shows it.
	Recall func(ctx context.Context, request string) (string, error)
}

func (c *PlannerConfig) defaults() {
	if c.Agents == nil {
		c.Agents = DefaultAgents
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = 3
	}
	if c.MaxIterations <= 0 {
		c.MaxIterations = 1
	}
	if c.Repairs <= 0 {
		c.Repairs = 2
	}
	if c.MaxAgents <= 0 {
		c.MaxAgents = DefaultMaxAgents
	}
}

// Planner returns the planner node. It reads Request, Locale, Background,
// Feedback, the current turn's Findings and, as summaries with references,
// the earlier turns of the conversation; it writes PlanKey, Iterations and
// CurrentTurn and goes to the reviewer, or to the reporter when enough is
// known. A reviewer's feedback always gets a new plan, made with the
// feedback. When the plan of the turn's last allowed round has run, it
// goes to the reporter; when steps of that plan did not complete it says
// so: a warning event, and a note on the turn.
func Planner(cfg PlannerConfig) (graph.NodeFunc, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("%w: the planner needs a model", ErrNoModel)
	}
	if cfg.Review == "" || cfg.Reporter == "" {
		return nil, errors.New("nodes: the planner needs its Review and Reporter nodes")
	}
	cfg.defaults()
	model := window.Observe(llm.Observe(cfg.Model, cfg.Info))
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		turn := CurrentTurn.Get(s)
		rounds := Iterations.Get(s)
		revising := Feedback.Get(s) != "" && PlanKey.Get(s) != nil
		if !revising && PlanKey.Get(s) != nil && rounds >= cfg.MaxIterations {
			if len(unfinished(PlanKey.Get(s))) == 0 {
				// Every step of the last plan completed: the limit cut
				// nothing short, so there is nothing to warn about.
				return graph.Goto(cfg.Reporter), nil
			}
			note := roundLimitNote(cfg.MaxIterations, PlanKey.Get(s))
			graph.Emit(ctx, agentevent.Warning{Value: "planner: " + note})
			turn.Note = note // the answer says it too
			return graph.Goto(cfg.Reporter, CurrentTurn.Set(turn)), nil
		}
		cards, err := cfg.Agents.Cards(ctx)
		if err != nil {
			return graph.Command{}, fmt.Errorf("nodes: planner: list agents: %w", err)
		}
		known := map[string]bool{}
		for _, c := range cards {
			known[c.Name] = true
		}
		locale := Locale.Get(s)
		if locale == "" {
			locale = "en-US"
		}
		sys := prompt("planner", map[string]string{"max_steps": fmt.Sprint(cfg.MaxSteps), "locale": locale})
		if !cfg.AllowNewAgents {
			sys += "\nThis team has no factory: new_agents_needed must stay empty.\n"
		}
		sys += planSchemaNote()
		shown := pickAgents(cards, Request.Get(s), usedAgents(s), cfg.MaxAgents)
		input := agentList(shown, len(cards)) + "\n" + plannerInput(s, locale)
		if cfg.Recall != nil {
			recalled, err := graph.Do(ctx, "recall", func(ctx context.Context) (string, error) { return cfg.Recall(ctx, Request.Get(s)) })
			if err != nil {
				return graph.Command{}, fmt.Errorf("nodes: planner: recall: %w", err)
			}
			if recalled != "" {
				input += "\n# What earlier conversations with this user learned (may be out of date)\n" + recalled
			}
		}
		// What stays the same from turn to turn comes first — the
		// instructions, the earlier turns — and what changes last.
		msgs := append([]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, sys)}, turnMessages(s)...)
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, input))
		ctx = llm.WithAgent(ctx, "planner")
		p, err := generatePlan(ctx, model, msgs, func(n string) bool { return known[n] }, cfg)
		if err != nil {
			return graph.Command{}, err
		}
		if p.Locale == "" {
			p.Locale = locale
		}
		writes := []graph.Write{PlanKey.Set(p), Feedback.Set("")}
		if !revising {
			rounds++
			writes = append(writes, Iterations.Set(1))
		}
		turn.Plan, turn.Rounds = p.Title, rounds
		writes = append(writes, CurrentTurn.Set(turn))
		if p.HasEnoughContext {
			return graph.Goto(cfg.Reporter, writes...), nil
		}
		return graph.Goto(cfg.Review, writes...), nil
	}, nil
}

// planSchemaNote asks for the plan as JSON of planDraft's schema.
var planSchemaNote = sync.OnceValue(func() string {
	schema, err := structured.SchemaFor[planDraft]()
	if err != nil {
		panic(err) // a fixed Go type: fails every test if wrong
	}
	return "\n# Reply\nReply with only a JSON value that matches this JSON Schema, with no code fences and no other text:\n" + string(schema) + "\n"
})

// unfinished returns the ids of the steps of p that did not complete.
func unfinished(p *plan.Plan) []string {
	var ids []string
	if p == nil {
		return nil
	}
	for _, st := range p.Steps {
		if st.Result == nil || st.Result.Status != plan.StepDone {
			ids = append(ids, st.ID)
		}
	}
	return ids
}

// roundLimitNote says that the planner stopped at its round limit, and
// which steps of the last plan did not complete.
func roundLimitNote(limit int, p *plan.Plan) string {
	rounds := "1 round"
	if limit != 1 {
		rounds = fmt.Sprintf("%d rounds", limit)
	}
	note := fmt.Sprintf("planning stopped at its limit of %s per turn (max_iterations: %d); the answer uses what the steps found", rounds, limit)
	if open := unfinished(p); len(open) > 0 {
		note += fmt.Sprintf(", and steps %s did not complete", strings.Join(open, ", "))
	}
	return note
}

func plannerInput(s graph.State, locale string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Request\n%s\n\nLocale: %s\n", Request.Get(s), locale)
	if bg := Background.Get(s); bg != "" {
		fmt.Fprintf(&b, "\n# Background investigation\n%s\n", bg)
	}
	if len(Turns.Get(s)) > 0 {
		b.WriteString("\nThe earlier turns of this conversation are above, as summaries: build on them, and do not plan again what is known.\n")
	}
	if r := plan.ResultsView(turnFindings(s)); r != "" {
		fmt.Fprintf(&b, "\n# Results of the steps run so far\n%s", r)
	}
	if fb := Feedback.Get(s); fb != "" {
		prev, _ := json.Marshal(PlanKey.Get(s))
		fmt.Fprintf(&b, "\n# Your previous plan\n%s\n\n# The reviewer's feedback on it\n%s\n", prev, fb)
	}
	return b.String()
}

// generatePlan asks for a plan and checks it, sending the problems back
// until it is valid or the repairs are used.
func generatePlan(ctx context.Context, model llms.Model, msgs []llms.MessageContent, known func(string) bool, cfg PlannerConfig) (*plan.Plan, error) {
	var last []string
	var lastJSON []byte
	for attempt := 0; attempt <= cfg.Repairs; attempt++ {
		// The schema is in the system prompt (planSchemaNote), which stays
		// the same from call to call, not after the request.
		draft, err := structured.Generate[planDraft](ctx, model, msgs, structured.WithRepairs(cfg.Repairs), structured.WithInstruction(""))
		if err != nil {
			return nil, fmt.Errorf("nodes: planner: %w", err)
		}
		p := draft.plan()
		last = validate(p, known, cfg.MaxSteps, cfg.AllowNewAgents)
		if len(last) == 0 {
			return p, nil
		}
		lastJSON, _ = json.Marshal(draft)
		msgs = append(msgs,
			llms.TextParts(llms.ChatMessageTypeAI, string(lastJSON)),
			llms.TextParts(llms.ChatMessageTypeHuman, "This plan cannot be run:\n- "+strings.Join(last, "\n- ")+
				"\nFix every problem and reply with the whole corrected plan."))
	}
	return nil, &plan.Error{Problems: last, Output: string(lastJSON)}
}

// validate checks p against the agents that exist and the limits of cfg.
func validate(p *plan.Plan, known func(string) bool, maxSteps int, allowNew bool) []string {
	return p.Validate(plan.Rules{Known: known, MaxSteps: maxSteps, AllowNewAgents: allowNew})
}

// planDraft is what the model is asked for: a Plan without results.
type planDraft struct {
	Title            string           `json:"title" jsonschema:"required,description=A short title for the plan"`
	Thought          string           `json:"thought" jsonschema:"required,description=Your reasoning about the request and how to approach it"`
	Locale           string           `json:"locale" jsonschema:"required,description=The user's language as a locale such as en-US or zh-CN"`
	HasEnoughContext bool             `json:"has_enough_context" jsonschema:"required,description=True only if what is known already answers the request fully"`
	NewAgentsNeeded  []plan.AgentSpec `json:"new_agents_needed" jsonschema:"required,description=Agents the steps need that are not in the list of available agents; empty if none"`
	Steps            []stepDraft      `json:"steps" jsonschema:"required"`
}

type stepDraft struct {
	ID          string   `json:"id" jsonschema:"required,description=Short unique id such as s1"`
	AgentName   string   `json:"agent_name" jsonschema:"required,description=The available or new agent that runs the step"`
	Title       string   `json:"title" jsonschema:"required"`
	Description string   `json:"description" jsonschema:"required,description=Exactly what to do and what to deliver"`
	Note        string   `json:"note,omitempty"`
	StepType    string   `json:"step_type" jsonschema:"required,enum=research|processing"`
	NeedSearch  bool     `json:"need_search" jsonschema:"required"`
	DependsOn   []string `json:"depends_on" jsonschema:"required,description=Ids of the steps whose results this step needs; empty if none"`
}

func (d planDraft) plan() *plan.Plan {
	p := &plan.Plan{Title: d.Title, Thought: d.Thought, Locale: d.Locale, HasEnoughContext: d.HasEnoughContext,
		NewAgentsNeeded: d.NewAgentsNeeded}
	for _, s := range d.Steps {
		p.Steps = append(p.Steps, plan.Step{ID: s.ID, AgentName: s.AgentName, Title: s.Title, Description: s.Description,
			Note: s.Note, StepType: s.StepType, NeedSearch: s.NeedSearch, DependsOn: s.DependsOn})
	}
	return p
}
