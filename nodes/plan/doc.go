// Package plan holds the plan a planner makes and a team carries out, as
// plain data: its steps with their dependencies and results (Plan, Step,
// StepResult), the new agents it asks for (AgentSpec), its validation
// (Plan.Validate against Rules, Error), the results kept across plans
// (Finding) and what a step receives from the steps it depends on
// (Handoff). It imports nothing of the engine: the channels that carry a
// plan in a graph (nodes.PlanKey, nodes.Findings) and the nodes that make
// and run plans are in package nodes, and the team in package factory.
package plan
