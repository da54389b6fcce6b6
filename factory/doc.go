// Package factory builds the agents a plan needs, at run time, and runs the
// plan's steps with them — all inside one graph node, so the graph stays
// static.
//
// The Registry keeps agents in the context store, per owner (list, get,
// edit with compare-and-swap, remove); a plan that names an existing agent
// reuses it, and DefaultAgents (researcher, coder, reporter) are always
// there. The Builder turns an agent spec from the plan into an Agent: a
// model call with structured output chooses its tier, its tools (only
// registered ones; unknown names are dropped and reported) and a short
// brief, and the meta-prompt stage (ExpandWith) writes its system prompt.
//
// Team is the node: it builds every new agent concurrently, then runs the
// plan's steps as a DAG — each step as soon as its dependencies are done,
// concurrently — with each agent seeing only its task, its dependencies'
// handoffs and the board items its visibility allows. Results go to the
// mission board; the plan keeps a summary, a confidence, a reasoning trace
// and a reference per step. Builds and steps are tasks of the node
// (graph.Schedule, keys "build:<name>" and "step:<id>", so a step's events
// and questions are at coor/team/step:<id>): the engine's scheduler runs
// them, journals each one's result — an interrupt or a crash in the middle
// of the team node redoes neither — lists them in the thread's State, and
// lets a runner run each apart from the node (graph.RunScheduled).
package factory
