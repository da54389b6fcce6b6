package llm

import (
	"fmt"
	"slices"
)

// Tier names a class of model that callers ask for by capability rather
// than by name. A configuration maps each tier to a concrete model.
type Tier string

// The model tiers.
const (
	// TierBasic is the everyday model; every configuration has one, and
	// tiers without their own model fall back to it.
	TierBasic Tier = "basic"
	// TierReasoning is a model for planning and long chains of thought.
	TierReasoning Tier = "reasoning"
	// TierVision is a model that accepts images.
	TierVision Tier = "vision"
	// TierCode is a model tuned for writing code.
	TierCode Tier = "code"
)

// allTiers lists the tiers in their canonical order.
var allTiers = []Tier{TierBasic, TierReasoning, TierVision, TierCode}

// Tiers returns every known tier, basic first.
func Tiers() []Tier { return slices.Clone(allTiers) }

// Valid reports whether t is one of the known tiers.
func (t Tier) Valid() bool { return slices.Contains(allTiers, t) }

// ParseTier returns the tier named s. An unknown name gives an error
// wrapping ErrUnknownTier that lists the known ones.
func ParseTier(s string) (Tier, error) {
	t := Tier(s)
	if !t.Valid() {
		return "", fmt.Errorf("%w %q (known tiers: %v)", ErrUnknownTier, s, allTiers)
	}
	return t, nil
}
