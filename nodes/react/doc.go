// Package react is the ReAct agent: an agent that thinks with a model and
// acts with tools. Each turn calls the model with the tools on offer; the
// tools the model asks for run concurrently and their results go back to
// the model, until it answers or its turn limit is reached (then it is
// asked for its best answer, without tools).
//
// New makes an Agent from a Config; Agent.Run works on a Task; Agent.Node
// and Agent.TextNode make graph nodes of it; Graph compiles a whole graph
// around it over the Messages channel — a chat agent that keeps its
// conversation in the graph's state, LangGraph's create_react_agent.
//
// Inside a graph node, each model call goes through llm.Observe and each
// tool call through tools.Observe: both are journaled (graph.Do), so a node
// that runs again after an interrupt or a crash does not repeat them, and
// reported as events — tokens, model calls, tool calls and results, and the
// agent's start and end — under the agent's path (graph/node/agent:name).
package react
