package llm

import "context"

// agentKey is the context key under which WithAgent stores the caller label.
type agentKey struct{}

// WithAgent returns a copy of ctx labelled with the name of the agent (a
// ReAct agent, a graph node) that makes the model calls made with it.
// Wrappers and scripted models read the label with AgentFrom; it travels
// with the context, so it reaches every call made on the caller's behalf.
func WithAgent(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, agentKey{}, name)
}

// AgentFrom returns the agent label set on ctx by WithAgent, or "" when the
// context carries none.
func AgentFrom(ctx context.Context) string {
	name, _ := ctx.Value(agentKey{}).(string)
	return name
}
