package store

import (
	"fmt"
	"time"
)

// Priority orders items when a prompt budget cannot hold them all.
type Priority string

// The priorities, most important first.
const (
	PriorityCritical Priority = "critical"
	PriorityHigh     Priority = "high"
	PriorityNormal   Priority = "normal"
	PriorityLow      Priority = "low"
)

// Rank returns 0 for critical up to 3 for low, and 4 for an unknown value,
// so that a lower rank sorts first.
func (p Priority) Rank() int {
	switch p {
	case PriorityCritical:
		return 0
	case PriorityHigh:
		return 1
	case PriorityNormal:
		return 2
	case PriorityLow:
		return 3
	}
	return 4
}

// Trust says who produced an item's content, and so how far a model may
// follow instructions found in it.
type Trust string

// The trust levels, most trusted first.
const (
	TrustSystem Trust = "system" // written by the engine or its configuration
	TrustUser   Trust = "user"   // given by the human user
	TrustModel  Trust = "model"  // written by an agent (a model's output)
	TrustTool   Trust = "tool"   // fetched by a tool from outside (web pages, files, APIs)
)

// Rank returns 0 for system up to 3 for tool, and 4 for an unknown value.
func (t Trust) Rank() int {
	switch t {
	case TrustSystem:
		return 0
	case TrustUser:
		return 1
	case TrustModel:
		return 2
	case TrustTool:
		return 3
	}
	return 4
}

// Sensitivity says how far an item may travel.
type Sensitivity string

// The sensitivities, least sensitive first.
const (
	SensitivityPublic   Sensitivity = "public"   // may be shown to anyone, quoted in reports
	SensitivityInternal Sensitivity = "internal" // for the agents of this owner, not for final output
	SensitivitySecret   Sensitivity = "secret"   // never put into a prompt; read only by code
)

// Trigger says how an item reaches a model.
type Trigger string

// The triggers.
const (
	TriggerAlways Trigger = "always" // its content is loaded into prompts
	TriggerIndex  Trigger = "index"  // its path and metadata are listed in an index the model picks from
	TriggerSearch Trigger = "search" // found only by search
)

// ContentType says how an item's content is to be read.
type ContentType string

// The content types.
const (
	ContentText ContentType = "text"
	ContentJSON ContentType = "json" // valid JSON; objects merge field by field on stale edits
)

// Attrs are the metadata a writer chooses for an item. A zero field takes
// its default when the item is added: priority normal, trust tool (the
// least trusted), sensitivity internal, trigger index, visibility public,
// content type text.
type Attrs struct {
	Priority    Priority    `json:"priority"`
	Trust       Trust       `json:"trust"`
	Sensitivity Sensitivity `json:"sensitivity"`
	Trigger     Trigger     `json:"trigger"`
	Visibility  Visibility  `json:"visibility"`
	ContentType ContentType `json:"content_type"`
}

// Meta describes a stored item without its content.
type Meta struct {
	Path string `json:"path"`
	Attrs
	Size     int64     `json:"size"` // content length in bytes
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Revision int64     `json:"revision"` // 1 when added, +1 per write
}

// Item is a stored item: its metadata and its content.
type Item struct {
	Meta
	Content string `json:"content"`
}

// withDefaults returns a with every zero field set to its default.
func (a Attrs) withDefaults() Attrs {
	if a.Priority == "" {
		a.Priority = PriorityNormal
	}
	if a.Trust == "" {
		a.Trust = TrustTool
	}
	if a.Sensitivity == "" {
		a.Sensitivity = SensitivityInternal
	}
	if a.Trigger == "" {
		a.Trigger = TriggerIndex
	}
	if a.Visibility.Scope == "" {
		a.Visibility.Scope = ScopePublic
	}
	if a.ContentType == "" {
		a.ContentType = ContentText
	}
	return a
}

// validate reports the first field of a (after defaults) that holds an
// unknown value.
func (a Attrs) validate() error {
	if a.Priority.Rank() > 3 {
		return fmt.Errorf("unknown priority %q (want critical, high, normal or low)", a.Priority)
	}
	if a.Trust.Rank() > 3 {
		return fmt.Errorf("unknown trust %q (want system, user, model or tool)", a.Trust)
	}
	switch a.Sensitivity {
	case SensitivityPublic, SensitivityInternal, SensitivitySecret:
	default:
		return fmt.Errorf("unknown sensitivity %q (want public, internal or secret)", a.Sensitivity)
	}
	switch a.Trigger {
	case TriggerAlways, TriggerIndex, TriggerSearch:
	default:
		return fmt.Errorf("unknown trigger %q (want always, index or search)", a.Trigger)
	}
	switch a.ContentType {
	case ContentText, ContentJSON:
	default:
		return fmt.Errorf("unknown content type %q (want text or json)", a.ContentType)
	}
	return a.Visibility.validate()
}
