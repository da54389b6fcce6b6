package graph

import (
	"context"
	"strings"
	"time"
)

// EventKind says what an Event reports.
type EventKind uint8

// The kinds of event. The engine emits the first group; packages built on
// it (llm, tools, nodes, factory, window) emit the second through Publish.
const (
	EventRunStart   EventKind = iota + 1 // a run (or a subgraph's run) started
	EventRunEnd                          // it ended; State holds the final values
	EventStepStart                       // a step started; Data holds its node names ([]string)
	EventStepEnd                         // a step's writes were applied
	EventNodeStart                       // a task started
	EventNodeEnd                         // a task ended (Duration, Attempt; Err if it failed)
	EventUpdate                          // a task's writes (Writes), in apply order
	EventValues                          // the state after a step (State)
	EventCustom                          // a value from Emit (Data)
	EventError                           // the run failed (Err)
	EventInterrupt                       // the run paused (Data: []InterruptInfo)
	EventCheckpoint                      // a checkpoint was stored (Data: checkpoint id)

	EventToken        // a chunk of model output (Data: string)
	EventModelCall    // a model call ended (Data: the caller's record)
	EventToolCall     // a tool call started (Data: the call)
	EventToolResult   // a tool call ended (Data: the result)
	EventAgentCreated // a dynamic agent was built (Data: the agent)
	EventAgentStart   // an agent started work (Data: its task)
	EventAgentEnd     // an agent finished (Data: its result)
	EventSnapshot     // what a model call saw (Data: the snapshot)
	EventWarning      // something worth a look that did not fail (Data)

	maxEventKind
)

var eventKindNames = [...]string{
	EventRunStart: "run_start", EventRunEnd: "run_end", EventStepStart: "step_start",
	EventStepEnd: "step_end", EventNodeStart: "node_start", EventNodeEnd: "node_end",
	EventUpdate: "update", EventValues: "values", EventCustom: "custom", EventError: "error",
	EventInterrupt: "interrupt", EventCheckpoint: "checkpoint", EventToken: "token",
	EventModelCall: "model_call", EventToolCall: "tool_call", EventToolResult: "tool_result",
	EventAgentCreated: "agent_created", EventAgentStart: "agent_start", EventAgentEnd: "agent_end",
	EventSnapshot: "snapshot", EventWarning: "warning",
}

// String returns the kind's name in snake case ("node_end").
func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return "unknown"
}

// EventMask is a set of event kinds.
type EventMask uint64

// AllEvents is the mask of every kind.
const AllEvents EventMask = 1<<maxEventKind - 2

func (k EventKind) mask() EventMask { return 1 << k }

// Has reports whether k is in m.
func (m EventMask) Has(k EventKind) bool { return m&k.mask() != 0 }

// Event is one thing that happened in a run. Which fields are set depends
// on Kind; Path, Kind and Time always are.
type Event struct {
	Kind EventKind
	// Path locates the source: the graph's name, then the node, then any
	// scopes below it (subgraph nodes, agents), joined with '/'. A task
	// started by a Send packet shows as node[i].
	Path string
	// Node is the node the event concerns, if any; Step its step.
	Node    string
	Step    int
	Attempt int
	// Duration of a node (EventNodeEnd).
	Duration time.Duration
	// Writes of a task (EventUpdate).
	Writes []Write
	// State after a step (EventValues) or at the end of a run (EventRunEnd).
	State State
	// Data carries the kind's payload.
	Data any
	// Err is the failure (EventError, EventNodeEnd).
	Err  error
	Time time.Time
}

// emitter is what a node's context carries: where its events go, and the
// task whose journal and interrupts it uses.
type emitter struct {
	r    *run
	t    *task
	path string
	node string
	step int
	// scope is the path below the task (WithScope), which keys journal
	// entries and interrupts so that concurrent scopes do not collide.
	scope string
}

type emitterKey struct{}

func emitterFrom(ctx context.Context) *emitter {
	e, _ := ctx.Value(emitterKey{}).(*emitter)
	return e
}

// Emit sends v to the run's stream as a custom event, under the path of the
// calling node (and scope). Outside a running node it does nothing.
func Emit(ctx context.Context, v any) {
	Publish(ctx, Event{Kind: EventCustom, Data: v})
}

// Publish sends ev to the run's stream. Path, Node, Step and Time are filled
// from ctx when empty. It is how packages above graph report model tokens,
// tool calls and agent events. Outside a running node it does nothing. It
// may block while the stream's consumer is slow, and returns early when the
// run is cancelled.
func Publish(ctx context.Context, ev Event) {
	e := emitterFrom(ctx)
	if e == nil || !e.r.wants(ev.Kind) {
		return
	}
	if ev.Path == "" {
		ev.Path = e.path
	}
	if ev.Node == "" {
		ev.Node, ev.Step = e.node, e.step
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.r.send(ctx, ev)
}

// WithScope returns a context whose events carry path/segment, for work
// done on behalf of something inside a node (an agent, a tool call).
// Segments must not contain '/'.
func WithScope(ctx context.Context, segment string) context.Context {
	e := emitterFrom(ctx)
	if e == nil {
		return ctx
	}
	segment = strings.ReplaceAll(segment, "/", "_")
	child := *e
	child.path = e.path + "/" + segment
	child.scope = e.scope + "/" + segment
	return context.WithValue(ctx, emitterKey{}, &child)
}

// PathOf returns the event path of ctx: the node's path and its scopes, or
// "" outside a running node.
func PathOf(ctx context.Context) string {
	if e := emitterFrom(ctx); e != nil {
		return e.path
	}
	return ""
}

// Wants reports whether the stream of the run that ctx belongs to takes
// events of kind k, so that producers can skip work nobody will see (such as
// asking a model to stream tokens).
func Wants(ctx context.Context, k EventKind) bool {
	e := emitterFrom(ctx)
	return e != nil && e.r.wants(k)
}
