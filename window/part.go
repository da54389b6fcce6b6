package window

import (
	"fmt"
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/store/board"
)

// Kind says what a part of a window holds.
type Kind string

// The kinds of part, in the order a window usually lists them.
const (
	KindSystem     Kind = "system"      // the agent's system prompt
	KindMemory     Kind = "memory"      // memory and the index of the context store
	KindTask       Kind = "task"        // what the agent is asked to do
	KindHandoff    Kind = "handoff"     // what a dependency handed over
	KindSteps      Kind = "steps"       // the completed steps of the plan
	KindHistory    Kind = "history"     // the agent's own conversation
	KindToolResult Kind = "tool_result" // tool output given as context
)

var kinds = []Kind{KindSystem, KindMemory, KindTask, KindHandoff, KindSteps, KindHistory, KindToolResult}

// Part is one piece of a window. Its content is Messages when set, the
// rendered Steps for a KindSteps part, and Text otherwise.
//
// Parts are laid out in the order given; Priority only decides what is
// left out when the budget is short. Consecutive text parts with the same
// role are joined into one message (paragraphs separated by a blank
// line), because some providers keep only one system message or one text
// per message.
type Part struct {
	// Name identifies the part in the snapshot and in Result.Compacted; it
	// must be unique within a request.
	Name string
	// Kind says what the part holds, and sets the defaults of Priority and
	// Role.
	Kind Kind
	// Priority orders parts when the budget cannot hold them all; empty
	// means DefaultPriority(Kind).
	Priority board.Priority
	// Required parts are cut short to fit, never left out.
	Required bool
	// Role is the role of the message holding Text or Steps; empty means
	// system for KindSystem and KindMemory, human for the others.
	Role llms.ChatMessageType
	// Text is the content of a text part.
	Text string
	// Messages is the content of a conversation part (KindHistory, or tool
	// messages). An assistant message with tool calls must be followed by
	// the tool messages that answer it, in the same part: the window never
	// separates them.
	Messages []llms.MessageContent
	// Steps are the completed steps of a KindSteps part, oldest first,
	// rendered in full or tiered (see Config.Steps).
	Steps []Step
	// Ref is where the full content lives (a store path), if anywhere; a
	// truncated part points to it.
	Ref string
}

// DefaultPriority returns the priority of a part of kind k that sets
// none: critical for the system prompt and the task, high for handoffs and
// history, normal for memory, steps and tool results.
func DefaultPriority(k Kind) board.Priority {
	switch k {
	case KindSystem, KindTask:
		return board.PriorityCritical
	case KindHandoff, KindHistory:
		return board.PriorityHigh
	}
	return board.PriorityNormal
}

// defaultRole returns the role of a text part of kind k.
func defaultRole(k Kind) llms.ChatMessageType {
	if k == KindSystem || k == KindMemory {
		return llms.ChatMessageTypeSystem
	}
	return llms.ChatMessageTypeHuman
}

// validate checks the parts of a request.
func validateParts(parts []Part) error {
	seen := make(map[string]bool, len(parts))
	for i, p := range parts {
		switch {
		case p.Name == "":
			return fmt.Errorf("%w: part %d has no name", ErrInvalidPart, i)
		case seen[p.Name]:
			return fmt.Errorf("%w: part name %q is used twice", ErrInvalidPart, p.Name)
		case !knownKind(p.Kind):
			return fmt.Errorf("%w: part %q has unknown kind %q (want one of %v)", ErrInvalidPart, p.Name, p.Kind, kinds)
		case p.Messages != nil && (p.Text != "" || len(p.Steps) > 0):
			return fmt.Errorf("%w: part %q has both messages and text or steps", ErrInvalidPart, p.Name)
		case len(p.Steps) > 0 && p.Kind != KindSteps:
			return fmt.Errorf("%w: part %q of kind %q has steps (only %q parts do)", ErrInvalidPart, p.Name, p.Kind, KindSteps)
		case p.Priority != "" && p.Priority.Rank() > board.PriorityLow.Rank():
			return fmt.Errorf("%w: part %q has unknown priority %q", ErrInvalidPart, p.Name, p.Priority)
		}
		seen[p.Name] = true
	}
	return nil
}

func knownKind(k Kind) bool { return slices.Contains(kinds, k) }
