package agentevent

import (
	"encoding/json"
	"fmt"
)

// The names of the events (graph.Event.Name): what streams, recorders and
// clients show.
const (
	EventCreated = "agent_created"
	EventReused  = "agent_reused"
	EventStart   = "agent_start"
	EventEnd     = "agent_end"
	// EventSnapshot is the event of a window.Snapshot: what a model call
	// saw. Its payload is window's; readers that cannot import window
	// (the tracer) keep it as JSON.
	EventSnapshot = "snapshot"
	EventWarning  = "warning"
	// EventDirectory is the event of the agents a planner was shown
	// (Directory).
	EventDirectory = "agent_directory"
)

// Info describes an agent in the events of its life.
type Info struct {
	Agent string `json:"agent"`
	// Run is the id of this run of the agent (a plan step, a node run).
	Run  string `json:"run,omitempty"`
	Role string `json:"role,omitempty"`
	Tier string `json:"tier,omitempty"`
	// Task is what the agent was asked (start), Output what it answered
	// (end), Summary a short form of it or, for an agent built, what it
	// is for.
	Task    string   `json:"task,omitempty"`
	Output  string   `json:"output,omitempty"`
	Summary string   `json:"summary,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	// Skills are the names of the skills an agent built was given.
	Skills []string `json:"skills,omitempty"`
	// System is the system prompt of an agent built or reused: with
	// its role, tier, tools and summary (its description), a recording
	// keeps each agent as the run used it, whatever its registry holds
	// later.
	System string `json:"system,omitempty"`
	// Confidence is the agent's own estimate, 0 to 1, when it gives one.
	Confidence float64 `json:"confidence,omitempty"`
	Err        string  `json:"error,omitempty"`
}

// Created is the payload of an agent_created event: a dynamic agent was
// built.
type Created Info

// Reused is the payload of an agent_reused event: a team runs an agent
// of its registry (built earlier, or built in) as the registry held it
// when the team began.
type Reused Info

// Started is the payload of an agent_start event: an agent started work.
type Started Info

// Ended is the payload of an agent_end event: an agent finished, with its
// output or its error.
type Ended Info

// EventName names the event: "agent_created".
func (Created) EventName() string { return EventCreated }

// EventName names the event: "agent_reused".
func (Reused) EventName() string { return EventReused }

// EventName names the event: "agent_start".
func (Started) EventName() string { return EventStart }

// EventName names the event: "agent_end".
func (Ended) EventName() string { return EventEnd }

// Warning is the payload of a warning event: something in a run worth a
// look that did not fail — tools an agent asked for that do not exist, an
// item too large to load into every prompt. Value says what: a sentence,
// or a value that describes itself (a fmt.Stringer). The event's JSON is
// Value's.
type Warning struct {
	Value any
}

// Directory is the payload of an agent_directory event: the agents of
// the registry as a planner (or a plan's review) was shown them. A
// recording keeps it, so that a replay shows the same list whatever the
// registry holds by then.
type Directory struct {
	Agents []DirectoryEntry `json:"agents"`
}

// DirectoryEntry is one agent of a Directory.
type DirectoryEntry struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// EventName names the event: "agent_directory".
func (Directory) EventName() string { return EventDirectory }

// EventName names the event: "warning".
func (Warning) EventName() string { return EventWarning }

// String renders Value.
func (w Warning) String() string { return fmt.Sprint(w.Value) }

// MarshalJSON encodes Value.
func (w Warning) MarshalJSON() ([]byte, error) { return json.Marshal(w.Value) }
