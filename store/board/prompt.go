package board

import (
	"fmt"

	"github.com/coorflow/coorflow/store"
)

// The label keys (store.Attrs.Labels) under which an item's prompt
// metadata is kept.
const (
	LabelPriority    = "priority"
	LabelTrust       = "trust"
	LabelSensitivity = "sensitivity"
	LabelTrigger     = "trigger"
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

// Prompt is the metadata that decides how an item reaches a model: its
// priority, trust, sensitivity and trigger. The store keeps it in the
// item's labels, where it means nothing to the store itself. A zero field
// is no label.
type Prompt struct {
	Priority    Priority
	Trust       Trust
	Sensitivity Sensitivity
	Trigger     Trigger
}

// PromptOf returns the prompt metadata of m. A label m lacks reads as its
// default: priority normal, trust tool (the least trusted), sensitivity
// internal, trigger index.
func PromptOf(m store.Meta) Prompt {
	p := promptLabels(m.Labels)
	if p.Priority == "" {
		p.Priority = PriorityNormal
	}
	if p.Trust == "" {
		p.Trust = TrustTool
	}
	if p.Sensitivity == "" {
		p.Sensitivity = SensitivityInternal
	}
	if p.Trigger == "" {
		p.Trigger = TriggerIndex
	}
	return p
}

// promptLabels reads the prompt labels as they are, without defaults.
func promptLabels(labels map[string]string) Prompt {
	return Prompt{
		Priority:    Priority(labels[LabelPriority]),
		Trust:       Trust(labels[LabelTrust]),
		Sensitivity: Sensitivity(labels[LabelSensitivity]),
		Trigger:     Trigger(labels[LabelTrigger]),
	}
}

// Labels returns the non-zero fields of p as labels, for store.Attrs.
func (p Prompt) Labels() map[string]string {
	labels := map[string]string{}
	for k, v := range map[string]string{
		LabelPriority: string(p.Priority), LabelTrust: string(p.Trust),
		LabelSensitivity: string(p.Sensitivity), LabelTrigger: string(p.Trigger),
	} {
		if v != "" {
			labels[k] = v
		}
	}
	return labels
}

// Check reports the first field of p that holds an unknown value; zero
// fields are fine. The error wraps store.ErrInvalid.
func (p Prompt) Check() error {
	if p.Priority != "" && p.Priority.Rank() > 3 {
		return fmt.Errorf("%w: unknown priority %q (want critical, high, normal or low)", store.ErrInvalid, p.Priority)
	}
	if p.Trust != "" && p.Trust.Rank() > 3 {
		return fmt.Errorf("%w: unknown trust %q (want system, user, model or tool)", store.ErrInvalid, p.Trust)
	}
	switch p.Sensitivity {
	case "", SensitivityPublic, SensitivityInternal, SensitivitySecret:
	default:
		return fmt.Errorf("%w: unknown sensitivity %q (want public, internal or secret)", store.ErrInvalid, p.Sensitivity)
	}
	switch p.Trigger {
	case "", TriggerAlways, TriggerIndex, TriggerSearch:
	default:
		return fmt.Errorf("%w: unknown trigger %q (want always, index or search)", store.ErrInvalid, p.Trigger)
	}
	return nil
}
