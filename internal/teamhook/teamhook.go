// Package teamhook sets, from elsewhere in this module, what a factory
// team's public configuration leaves out on purpose: which results each
// step sees. It exists for baselines that measure the team —
// bench/isolation compares isolated steps with CoorAgent's shared
// history — not for workflows, whose steps see their dependencies only.
package teamhook

import "github.com/coorflow/coorflow/nodes/plan"

// Sees returns the ids of the steps whose results step receives as
// handoffs, given the plan with the results so far; it must neither keep
// nor change the plan. A team's default is step.DependsOn.
type Sees func(p *plan.Plan, step plan.Step) []string

// SetSees makes the team configured by cfg, a *factory.TeamConfig, hand
// each step the results see chooses. Package factory installs it (cfg is
// untyped because this package cannot import factory).
var SetSees func(cfg any, see Sees)
