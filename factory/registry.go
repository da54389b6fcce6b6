package factory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
)

// Agent is a built agent: what it is, the model tier and tools it uses, and
// its system prompt. Agents are stored in the registry and reused by later
// plans that name them.
type Agent struct {
	Name        string `json:"name"`
	Role        string `json:"role,omitempty"`
	Description string `json:"description"`
	// Thought is the builder's reasoning for its choices.
	Thought string `json:"thought,omitempty"`
	// Tier is the model tier: basic, reasoning, vision or code.
	Tier string `json:"tier"`
	// Tools are names of registered tools.
	Tools []string `json:"tools,omitempty"`
	// Skills are names of the team's skills (TeamConfig.Skills): the
	// agent's prompt lists them, and it opens one with open_skill.
	Skills []string `json:"skills,omitempty"`
	// Brief is the short task description the prompt was written from.
	Brief string `json:"brief,omitempty"`
	// Prompt is the system prompt; PromptPinned says a person wrote or
	// fixed it, so it is never regenerated.
	Prompt       string `json:"prompt"`
	PromptPinned bool   `json:"prompt_pinned,omitempty"`
	// Spec is the plan's description of the agent it was built from.
	Spec    *plan.AgentSpec `json:"spec,omitempty"`
	Builtin bool            `json:"builtin,omitempty"`
	Created time.Time       `json:"created"`
	// Revision is the store revision the agent was read at; pass it back
	// to Update.
	Revision int64 `json:"-"`
}

// ErrAgentNotFound: no agent of that name in the owner's registry.
var ErrAgentNotFound = errors.New("factory: agent not found")

// Registry keeps agents in a context store, under team/agents/<name>, per
// owner. Inside a run whose runtime names an owner (store.RuntimeOwner, as
// the HTTP server sets it), the registry works on that owner's agents, so
// one compiled workflow serves many owners, each with agents of their own;
// elsewhere it works on the owner it was made for. It is safe for
// concurrent use.
type Registry struct {
	store store.Store
	owner string
}

// NewRegistry returns the registry of owner's agents in s.
func NewRegistry(s store.Store, owner string) *Registry {
	return &Registry{store: s, owner: owner}
}

// Owner returns the owner the registry was made for.
func (r *Registry) Owner() string { return r.owner }

// OwnerOf returns the owner whose agents the registry works on in ctx.
func (r *Registry) OwnerOf(ctx context.Context) string {
	if o := graph.RuntimeString(ctx, store.RuntimeOwner); o != "" {
		return o
	}
	return r.owner
}

func agentPath(name string) string { return "team/agents/" + name }

// builtin returns the built-in agent called name.
func builtin(name string) (Agent, bool) {
	for _, a := range DefaultAgents() {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// Get returns the agent called name: the stored one, or the built-in one
// (at revision 0) when none is stored under that name.
func (r *Registry) Get(ctx context.Context, name string) (Agent, error) {
	it, err := r.store.Get(ctx, r.OwnerOf(ctx), agentPath(name))
	if errors.Is(err, store.ErrNotFound) {
		if a, ok := builtin(name); ok {
			return a, nil
		}
		return Agent{}, fmt.Errorf("%w: %q (owner %q)", ErrAgentNotFound, name, r.OwnerOf(ctx))
	}
	if err != nil {
		return Agent{}, fmt.Errorf("factory: read agent %q: %w", name, err)
	}
	var a Agent
	if err := json.Unmarshal([]byte(it.Content), &a); err != nil {
		return Agent{}, fmt.Errorf("factory: agent %q is not readable: %w", name, err)
	}
	a.Revision = it.Revision
	return a, nil
}

// Add stores a new agent. Adding a name that exists fails with an error
// wrapping store.ErrExists.
func (r *Registry) Add(ctx context.Context, a Agent) (Agent, error) {
	if a.Created.IsZero() {
		a.Created = time.Now().UTC()
	}
	b, err := json.Marshal(a)
	if err != nil {
		return a, fmt.Errorf("factory: encode agent %q: %w", a.Name, err)
	}
	m, err := r.store.Add(ctx, r.OwnerOf(ctx), agentPath(a.Name), string(b), store.Attrs{
		ContentType: store.ContentJSON, Labels: board.Prompt{Trust: board.TrustSystem, Trigger: board.TriggerIndex}.Labels(),
	})
	if err != nil {
		return a, fmt.Errorf("factory: add agent %q: %w", a.Name, err)
	}
	a.Revision = m.Revision
	return a, nil
}

// Update replaces an agent, based on the revision it was read at; a stale
// revision is a conflict (store.ErrConflict), never a silent overwrite. A
// built-in agent read at revision 0 is stored by its first update.
func (r *Registry) Update(ctx context.Context, a Agent) (Agent, error) {
	if _, ok := builtin(a.Name); ok && a.Revision == 0 {
		return r.Add(ctx, a)
	}
	b, err := json.Marshal(a)
	if err != nil {
		return a, fmt.Errorf("factory: encode agent %q: %w", a.Name, err)
	}
	m, err := r.store.Edit(ctx, r.OwnerOf(ctx), agentPath(a.Name), store.Replace(a.Revision, string(b)))
	if errors.Is(err, store.ErrNotFound) {
		return a, fmt.Errorf("%w: %q (owner %q)", ErrAgentNotFound, a.Name, r.OwnerOf(ctx))
	}
	if err != nil {
		return a, fmt.Errorf("factory: update agent %q: %w", a.Name, err)
	}
	a.Revision = m.Revision
	return a, nil
}

// ErrBuiltin: a built-in agent cannot be removed (its stored edits can).
var ErrBuiltin = errors.New("factory: built-in agent")

// Remove deletes the agent called name. Removing an edited built-in agent
// restores the original; the original itself cannot be removed.
func (r *Registry) Remove(ctx context.Context, name string) error {
	a, err := r.Get(ctx, name)
	if err != nil {
		return err
	}
	if _, ok := builtin(name); ok && a.Revision == 0 {
		return fmt.Errorf("%w: %q cannot be removed; edit it instead", ErrBuiltin, name)
	}
	if err := r.store.Delete(ctx, r.OwnerOf(ctx), agentPath(name), a.Revision); err != nil {
		return fmt.Errorf("factory: remove agent %q: %w", name, err)
	}
	return nil
}

// List returns every agent, built-in ones included, by name.
func (r *Registry) List(ctx context.Context) ([]Agent, error) {
	var out []Agent
	stored := map[string]bool{}
	opts := store.ListOptions{Limit: store.MaxListLimit}
	for {
		page, err := r.store.List(ctx, r.OwnerOf(ctx), "team/agents/", opts)
		if err != nil {
			return nil, fmt.Errorf("factory: list agents: %w", err)
		}
		for _, m := range page.Items {
			a, err := r.Get(ctx, m.Path[len("team/agents/"):])
			if err != nil {
				return nil, err
			}
			stored[a.Name] = true
			out = append(out, a)
		}
		if page.Next == "" {
			break
		}
		opts.After = page.Next
	}
	for _, a := range DefaultAgents() {
		if !stored[a.Name] {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b Agent) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Cards lists the agents for a planner (nodes.AgentDirectory), and emits
// them as an agent_directory event (agentevent.Directory): a recording
// keeps what the planner was shown.
func (r *Registry) Cards(ctx context.Context) ([]nodes.AgentCard, error) {
	as, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]nodes.AgentCard, len(as))
	dir := agentevent.Directory{Agents: make([]agentevent.DirectoryEntry, len(as))}
	for i, a := range as {
		out[i] = nodes.AgentCard{Name: a.Name, Description: a.Description, Created: a.Created}
		dir.Agents[i] = agentevent.DirectoryEntry{Name: a.Name, Description: a.Description}
	}
	graph.Emit(ctx, dir)
	return out, nil
}
