// Package nodes holds prebuilt nodes and the agents they run.
//
// ReAct is an agent that thinks with a model and acts with tools: model
// calls with the tools on offer, the tools the model asks for run
// concurrently, their results go back to the model, until it answers or its
// turn limit is reached (then it is asked for its best answer, without
// tools). Inside a graph node, each model call and each tool call goes
// through the journal (graph.Do), so a node that runs again after an
// interrupt or a crash does not repeat them; tokens, model calls, tool calls
// and results, and the agent's start and end are events under the agent's
// path (graph/node/agent:name).
// The journaling and reporting of model calls is llm.Observe, which any
// node that calls a model directly should use too.
package nodes
