package react

import (
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
)

// Messages is the conversation of a graph made by Graph: the user's
// messages and everything the agent added — its replies, tool calls
// included, and the tool results — in order. Its values are langchaingo
// messages, the agent's own currency; a write appends
// (graph.AppendTo(Messages, msgs...)).
var Messages = graph.NewKey("messages", graph.Append[llms.MessageContent]())

// NodeName is the name of the agent's node in a graph made by Graph.
const NodeName = "agent"

// Graph compiles a graph that runs the agent cfg configures on the
// conversation in Messages (LangGraph's create_react_agent): its one node,
// NodeName, continues the conversation (Task.History) and appends to
// Messages what the agent added (Result.Added). The graph is named
// after the agent; opts are given to Compile.
//
// Each Invoke with a new user message is one turn. With a saver and a
// thread (graph.WithSaver, graph.Thread) the conversation is kept in the
// thread, so a turn sees the turns before it:
//
//	chat, _ := react.Graph(cfg, graph.WithSaver(saver))
//	ask := llms.TextParts(llms.ChatMessageTypeHuman, "What is 2 + 3?")
//	res, err := chat.Invoke(ctx, graph.Input(graph.AppendTo(react.Messages, ask)), graph.Thread("t1"))
//	answer := react.Messages.Get(res.State) // the last message is the answer
//
// A conversation that is empty when the node runs is an error.
func Graph(cfg Config, opts ...graph.Option) (*graph.Runnable, error) {
	a, err := New(cfg)
	if err != nil {
		return nil, err
	}
	g := graph.New(cfg.Name, Messages)
	g.AddNode(NodeName, a.ChatNode())
	g.AddEdge(graph.Start, NodeName)
	g.AddEdge(NodeName, graph.End)
	r, err := g.Compile(opts...)
	if err != nil {
		return nil, fmt.Errorf("react: graph of agent %q: %w", cfg.Name, err)
	}
	return r, nil
}

// ErrNoMessages: a chat node ran on an empty conversation.
var ErrNoMessages = errors.New("react: no messages")

// ChatNode returns the node of Graph: it runs the agent on the
// conversation in Messages and appends what the agent added.
func (a *Agent) ChatNode() graph.NodeFunc {
	return a.Node(
		func(s graph.State) (Task, error) {
			msgs := Messages.Get(s)
			if len(msgs) == 0 {
				return Task{}, fmt.Errorf("%w: agent %q has no conversation to answer: write the user's message to react.Messages", ErrNoMessages, a.cfg.Name)
			}
			return Task{History: msgs}, nil
		},
		func(r *Result) (graph.Command, error) {
			return graph.Update(graph.AppendTo(Messages, r.Added...)), nil
		})
}
