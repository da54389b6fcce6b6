package graph

import (
	"context"
	"maps"
)

// WithRuntime gives a run values that its nodes, tools and sub-agents can
// read — a user id, an API key, a tenant — and that never become state: they
// are not checkpointed, not streamed in events, and not part of anything a
// model sees unless a node puts them there. A resumed run gets the runtime
// values of the call that resumes it, not those of the first call.
// Several calls merge, later keys winning.
func WithRuntime(values map[string]any) Option {
	return func(c *config) {
		m := make(map[string]any, len(c.runtime)+len(values))
		maps.Copy(m, c.runtime)
		maps.Copy(m, values)
		c.runtime = m
	}
}

// RuntimeValue returns the runtime value key of the run that ctx belongs
// to (see WithRuntime).
func RuntimeValue(ctx context.Context, key string) (any, bool) {
	e := emitterFrom(ctx)
	if e == nil {
		return nil, false
	}
	v, ok := e.r.cfg.runtime[key]
	return v, ok
}

// RuntimeString returns a runtime value that is a string, or "".
func RuntimeString(ctx context.Context, key string) string {
	v, _ := RuntimeValue(ctx, key)
	s, _ := v.(string)
	return s
}

// Runtime keys the engine's hosts set (the HTTP server, the CLI) and its
// packages read: the thread as the host's client named it, and the id of
// the run.
const (
	RuntimeThread = "coorflow.thread"
	RuntimeRun    = "coorflow.run"
)
