package window

import (
	"context"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

// assembledKey marks the context of a model call whose messages a
// Builder assembled and whose snapshot is already published.
type assembledKey struct{}

// withAssembled marks ctx: the call made with it has its snapshot.
func withAssembled(ctx context.Context) context.Context {
	return context.WithValue(ctx, assembledKey{}, true)
}

func assembled(ctx context.Context) bool {
	v, _ := ctx.Value(assembledKey{}).(bool)
	return v
}

// Describe returns the snapshot of a model call that sends msgs as they
// are, with no Builder: the leading system messages are the part
// "system", the first user message after them the part "task", every
// later message the part "history". Each part is included whole and no
// policy is applied; the limit is unknown. agent labels it (empty means
// llm.AgentFrom(ctx)).
func Describe(ctx context.Context, agent string, msgs []llms.MessageContent) Snapshot {
	i := 0
	for i < len(msgs) && msgs[i].Role == llms.ChatMessageTypeSystem {
		i++
	}
	var parts []Part
	if i > 0 {
		parts = append(parts, Part{Name: "system", Kind: KindSystem, Messages: msgs[:i]})
	}
	if i < len(msgs) && msgs[i].Role == llms.ChatMessageTypeHuman {
		parts = append(parts, Part{Name: "task", Kind: KindTask, Messages: msgs[i : i+1]})
		i++
	}
	if i < len(msgs) {
		parts = append(parts, Part{Name: "history", Kind: KindHistory, Messages: msgs[i:]})
	}
	a := describer.newAssembly(ctx, Request{Agent: agent, Parts: parts})
	return a.result().Snapshot
}

// describer measures the calls Describe reports; it applies no policy.
var describer = &Builder{cfg: Config{}.withDefaults()}

// Observe wraps a model so that every call made through it publishes the
// snapshot of what it sent, as a Builder's calls do: agents that send
// their messages as they are (a coordinator, a planner, a reporter, a
// ReAct agent without a Builder) record what each call saw too. A call
// whose messages a Builder assembled (Generate, CallWithOverflowRetry)
// already published its snapshot and passes through; so does every call
// made inside another observed call. Wrap outside llm.Observe, so that a
// call answered from the journal still reports what it saw:
//
//	model := window.Observe(llm.Observe(m, info))
func Observe(m llms.Model) llms.Model {
	if _, ok := m.(observed); ok {
		return m
	}
	return observed{m: m}
}

type observed struct{ m llms.Model }

func (o observed) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, o, prompt, opts...)
}

func (o observed) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	if !assembled(ctx) {
		if graph.Wants(ctx, agentevent.EventSnapshot) {
			graph.Emit(ctx, Describe(ctx, llm.AgentFrom(ctx), msgs))
		}
		ctx = withAssembled(ctx)
	}
	return o.m.GenerateContent(ctx, msgs, opts...)
}
