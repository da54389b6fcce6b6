package factory

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/structured"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/skills"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
)

//go:embed prompts/*.md
var promptFiles embed.FS

// PromptWriter writes an agent's system prompt from its brief (the
// meta-prompt stage).
type PromptWriter func(ctx context.Context, a Agent, locale string) (string, error)

// Builder turns the plan's description of a new agent into a built agent:
// a model call chooses its tier, tools (only registered ones) and brief,
// and the PromptWriter expands the brief into its system prompt.
type Builder struct {
	Model llms.Model
	Info  llm.ModelInfo
	// Tools are the tools that exist; an agent can only get these.
	Tools *tools.Registry
	// Skills are the skills an agent may be given (skills.Set.Catalog
	// shows them to the builder's model); nil for none.
	Skills *skills.Set
	// WritePrompt writes the system prompt; required.
	WritePrompt PromptWriter
}

// buildDraft is what the builder's model is asked for.
type buildDraft struct {
	Thought     string   `json:"thought" jsonschema:"required,description=Your reasoning for the choices below"`
	Description string   `json:"description" jsonschema:"required,description=One sentence: what the agent does"`
	Tier        string   `json:"tier" jsonschema:"required,enum=basic|reasoning|vision|code"`
	Tools       []string `json:"tools" jsonschema:"required,description=Names of tools from the list; may be empty"`
	Skills      []string `json:"skills,omitempty" jsonschema:"description=Names of skills from the list of skills; may be empty"`
	Brief       string   `json:"brief" jsonschema:"required,description=Three to six sentences: task, method, deliverable"`
}

// Built is the outcome of Build.
type Built struct {
	Agent Agent
	// Dropped are tool names the model chose that do not exist;
	// DroppedSkills the skill names.
	Dropped       []string
	DroppedSkills []string
}

// Build builds the agent spec describes. The whole build goes through the
// journal (graph.Do), so a node that runs again does not build twice.
func (b *Builder) Build(ctx context.Context, spec plan.AgentSpec, locale string) (Built, error) {
	if err := b.check(); err != nil {
		return Built{}, err
	}
	return graph.Do(ctx, "build "+spec.Name, func(ctx context.Context) (Built, error) {
		return b.build(graph.WithScope(ctx, "build:"+spec.Name), spec, locale)
	})
}

// build is Build without a journal entry or a scope of its own, for a
// caller that builds the agent as a task of its node (graph.Schedule
// journals the task's value and scopes its events, "build:<name>").
func (b *Builder) build(ctx context.Context, spec plan.AgentSpec, locale string) (Built, error) {
	if err := b.check(); err != nil {
		return Built{}, err
	}
	ctx = llm.WithAgent(ctx, "builder:"+spec.Name)
	d, err := structured.Generate[buildDraft](ctx, window.Observe(llm.Observe(b.Model, b.Info)), b.messages(spec, locale))
	if err != nil {
		return Built{}, fmt.Errorf("factory: build agent %q: %w", spec.Name, err)
	}
	var keep, dropped []string
	for _, t := range d.Tools {
		switch {
		case b.Tools != nil && slices.Contains(b.Tools.Names(), t):
			if !slices.Contains(keep, t) {
				keep = append(keep, t)
			}
		default:
			dropped = append(dropped, t)
		}
	}
	skillSet, droppedSkills := b.Skills.Subset(d.Skills...)
	s := spec
	a := Agent{Name: spec.Name, Role: spec.Role, Description: d.Description, Thought: d.Thought,
		Tier: d.Tier, Tools: keep, Skills: skillSet.Names(), Brief: d.Brief, Spec: &s}
	prompt, err := b.WritePrompt(ctx, a, locale)
	if err != nil {
		return Built{}, fmt.Errorf("factory: write the prompt of agent %q: %w", spec.Name, err)
	}
	a.Prompt = prompt
	return Built{Agent: a, Dropped: dropped, DroppedSkills: droppedSkills}, nil
}

func (b *Builder) check() error {
	if b.Model == nil || b.WritePrompt == nil {
		return errors.New("factory: a builder needs a model and a prompt writer")
	}
	return nil
}

func (b *Builder) messages(spec plan.AgentSpec, locale string) []llms.MessageContent {
	var list strings.Builder
	if b.Tools != nil {
		for _, t := range b.Tools.List() {
			fmt.Fprintf(&list, "- %s: %s\n", t.Name(), t.Description())
		}
	}
	if list.Len() == 0 {
		list.WriteString("(none)\n")
	}
	sys, _ := promptFiles.ReadFile("prompts/builder.md")
	text := strings.ReplaceAll(string(sys), "{{tools}}", list.String())
	if b.Skills.Len() > 0 {
		text += "\n# Available skills\nAn agent given a skill sees its name and description and opens it when its task calls for it. " +
			"Choose `skills` only from this list, by exact name; none is fine.\n"
		text += b.Skills.List()
	}
	user := fmt.Sprintf("# The agent the plan needs\nName: %s\nRole: %s\nCapabilities: %s\nContribution: %s\nLocale: %s\n",
		spec.Name, spec.Role, spec.Capabilities, spec.Contribution, locale)
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, text),
		llms.TextParts(llms.ChatMessageTypeHuman, user),
	}
}
