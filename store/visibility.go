package store

import (
	"fmt"
	"strings"
)

// Scope is the kind of audience an item is visible to.
type Scope string

// The scopes.
const (
	ScopePublic Scope = "public" // every agent of the owner
	ScopeTask   Scope = "task"   // the agents working on one task
	ScopeAgent  Scope = "agent"  // one agent run
)

// Visibility labels an item with the audience that may see it. ID is the
// task id for ScopeTask and the agent run id for ScopeAgent, empty for
// ScopePublic.
type Visibility struct {
	Scope Scope  `json:"scope"`
	ID    string `json:"id,omitempty"`
}

// Public returns the visibility of an item every agent may see.
func Public() Visibility { return Visibility{Scope: ScopePublic} }

// TaskScoped returns the visibility of an item only the agents working on
// task may see.
func TaskScoped(task string) Visibility { return Visibility{Scope: ScopeTask, ID: task} }

// AgentScoped returns the visibility of an item only the agent run agent
// may see.
func AgentScoped(agent string) Visibility { return Visibility{Scope: ScopeAgent, ID: agent} }

// Viewer identifies who is looking: the task an agent works on and the
// agent's run id.
type Viewer struct {
	Task  string `json:"task,omitempty"`
	Agent string `json:"agent,omitempty"`
}

// Allows reports whether w may see an item labelled v. Public items are
// visible to everyone; task items to viewers of that task; agent items to
// that agent run only. An empty id never matches.
func (v Visibility) Allows(w Viewer) bool {
	switch v.Scope {
	case ScopePublic, "":
		return true
	case ScopeTask:
		return v.ID != "" && v.ID == w.Task
	case ScopeAgent:
		return v.ID != "" && v.ID == w.Agent
	}
	return false
}

// String returns "public", "task:<id>" or "agent:<id>".
func (v Visibility) String() string {
	if v.Scope == ScopePublic || v.Scope == "" {
		return string(ScopePublic)
	}
	return string(v.Scope) + ":" + v.ID
}

// ParseVisibility parses the form String returns.
func ParseVisibility(s string) (Visibility, error) {
	scope, id, _ := strings.Cut(s, ":")
	v := Visibility{Scope: Scope(scope), ID: id}
	if err := v.validate(); err != nil {
		return Visibility{}, fmt.Errorf("%w: %s", ErrInvalid, err)
	}
	return v, nil
}

func (v Visibility) validate() error {
	switch v.Scope {
	case ScopePublic:
		if v.ID != "" {
			return fmt.Errorf("public visibility takes no id (got %q)", v.ID)
		}
	case ScopeTask, ScopeAgent:
		if v.ID == "" {
			return fmt.Errorf("%s visibility needs the %s id it is scoped to", v.Scope, v.Scope)
		}
	default:
		return fmt.Errorf("unknown visibility scope %q (want public, task or agent)", v.Scope)
	}
	return nil
}
