package graph

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind says what an Event reports.
type EventKind uint8

// The kinds of event. The engine emits all but EventCustom, which carries
// a value a node emits (Emit): a plain value, or a payload of a package
// above graph whose type names the event (Named).
const (
	EventRunStart   EventKind = iota + 1 // a run (or a subgraph's run) started
	EventRunEnd                          // it ended; State holds the final values
	EventStepStart                       // a step started; Data holds its node names ([]string, not to be modified)
	EventStepEnd                         // a step's writes were applied
	EventNodeStart                       // a task started
	EventNodeEnd                         // a task ended (Duration, Attempt; Err if it failed)
	EventUpdate                          // a task's writes (Writes), in apply order
	EventValues                          // the state after a step (State)
	EventCustom                          // a value from Emit (Data), named by its type (Event.Name)
	EventError                           // the run failed (Err)
	EventInterrupt                       // the run paused (Data: []InterruptInfo)
	EventCheckpoint                      // a checkpoint was stored (Data: checkpoint id)

	maxEventKind

	// taskEnded is no event: a worker's message to the loop that task
	// number Step ended, its result stored (see runOne); Attempt -1 when
	// the worker ended too (workerEnded).
	taskEnded EventKind = 0
	// delivered is no event either: a subgraph's run sends it after an
	// event to learn that the loop has delivered that event (the loop
	// takes the next message only then), and so whether the consumer
	// went on.
	delivered EventKind = maxEventKind
)

var eventKindNames = [...]string{
	EventRunStart: "run_start", EventRunEnd: "run_end", EventStepStart: "step_start",
	EventStepEnd: "step_end", EventNodeStart: "node_start", EventNodeEnd: "node_end",
	EventUpdate: "update", EventValues: "values", EventCustom: "custom", EventError: "error",
	EventInterrupt: "interrupt", EventCheckpoint: "checkpoint",
}

// String returns the kind's name in snake case ("node_end").
func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return "unknown"
}

// eventMask is a set of event kinds.
type eventMask uint64

// allEvents is the mask of every kind.
const allEvents eventMask = 1<<maxEventKind - 2

func (k EventKind) mask() eventMask { return 1 << k }

// has reports whether k is in m.
func (m eventMask) has(k EventKind) bool { return m&k.mask() != 0 }

// Named is a custom event's payload that names its event. Packages above
// graph give their payloads a type with a name: consumers of a stream
// switch on the type, and whatever writes events down — a recorder, an
// HTTP stream, JSON lines — writes the name, which stays the same as long
// as the type says it. A name is snake case, not empty, and none of the
// kinds' names, so that it tells the event apart.
type Named interface {
	EventName() string
}

// nameOf is the name of the custom event carrying v.
func nameOf(v any) string {
	if n, ok := v.(Named); ok {
		return n.EventName()
	}
	return eventKindNames[EventCustom]
}

// eventFilter is what a run's stream takes: the kinds, and the names of
// the custom events (nil names: all).
type eventFilter struct {
	kinds eventMask
	names *nameFilter
}

// nameFilter selects custom events by name: those in only (nil: all) but
// not in skip. Options replace it, never change it: runs share it.
type nameFilter struct {
	only, skip []string
}

// hasCustom reports whether the filter takes custom events named name.
func (f *eventFilter) hasCustom(name string) bool {
	if !f.kinds.has(EventCustom) {
		return false
	}
	n := f.names
	return n == nil || ((n.only == nil || slices.Contains(n.only, name)) && !slices.Contains(n.skip, name))
}

// withNames returns f with a copy of its name filter that change changed.
func (f eventFilter) withNames(change func(n *nameFilter)) eventFilter {
	var n nameFilter
	if f.names != nil {
		n = *f.names
	}
	change(&n)
	f.names = &n
	return f
}

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
	// Data carries the kind's payload; for EventCustom, the emitted value.
	Data any
	// Err is the failure (EventError, EventNodeEnd).
	Err error
	// Time is when the event happened: for EventNodeEnd, when the task
	// ended; a step's start and the starts of the tasks it starts at once
	// share one reading of the clock. Along a run's stream, times never go
	// back: an event timed on a task's goroutine (a task's end, a custom
	// event, a subgraph's event) that reaches the stream after a later
	// one — a sibling's in a parallel step — carries that one's time, by
	// which it had happened. Times carry a monotonic clock reading, so
	// differences between them ignore changes of the wall clock.
	Time time.Time
}

// emitter is a node's context: the context it runs with, carrying where
// its events go and the task whose journal and interrupts it uses. It is
// like context.WithValue(ctx, emitterKey{}, em), in one allocation or
// none (see taskContext).
type emitter struct {
	context.Context
	r    *run
	t    *task
	path string
	node string
	step int
	// scope is the path below the task (WithScope), which keys journal
	// entries and interrupts so that concurrent scopes do not collide.
	scope string
	// only marks the emitter of the one task a run of RunScheduled is
	// for: in such a run, the node's other events are not streamed.
	only bool
	// call, in an emitter WithScope made, is the call whose context it
	// was made from, when calls have contexts of their own (see
	// taskContext).
	call *callContext
}

// callContext is the context of one call of a node (an attempt, or its
// error handler) when calls have contexts of their own (see taskContext):
// its task slot's emitter, whose context it shares, and where the call
// stands as its custom events see it — running, with some Emits on their
// way to the loop, or returned. An Emit that starts after the call
// returned does nothing; the call's end waits for those on their way, so
// the loop delivers every custom event of a task before its end, and the
// slot's emitter, which they read, is not rewritten for the next call
// before they are done. It is small: there is one for every call.
type callContext struct {
	em *emitter
	// n counts the Emits on their way, with callEnded once the call
	// returned and callWaiting once its end waits for them (drains).
	n atomic.Int32
}

const (
	callEnded   = 1 << 30
	callWaiting = 1 << 29
)

// drains holds, while the end of a call waits for its Emits on their way,
// the channel the last of them closes (rare: an Emit racing with its
// node's return).
var drains sync.Map // *callContext -> chan struct{}

// A call's context is its slot emitter's, the run's.
func (c *callContext) Deadline() (time.Time, bool) { return c.em.Context.Deadline() }
func (c *callContext) Done() <-chan struct{}       { return c.em.Context.Done() }
func (c *callContext) Err() error                  { return c.em.Context.Err() }

// Value returns the call for emitterKey and asks the run's context
// otherwise.
func (c *callContext) Value(key any) any {
	if key == (emitterKey{}) {
		return c
	}
	return c.em.Context.Value(key)
}

// timedCall is the context of a call with a context of its own (a node's
// timeout).
type timedCall struct {
	context.Context
	call callContext
}

// Value returns the call for emitterKey and asks the parent otherwise.
func (c *timedCall) Value(key any) any {
	if key == (emitterKey{}) {
		return &c.call
	}
	return c.Context.Value(key)
}

// enter starts an Emit: false when the call has returned. A nil call
// (a context kept by a task slot) is always running.
func (c *callContext) enter() bool {
	if c == nil {
		return true
	}
	for {
		n := c.n.Load()
		if n&callEnded != 0 {
			return false
		}
		if c.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// leave ends an Emit that enter started.
func (c *callContext) leave() {
	if c != nil && c.n.Add(-1) == callEnded|callWaiting {
		ch, _ := drains.Load(c)
		close(ch.(chan struct{}))
	}
}

// running reports whether the call has not returned.
func (c *callContext) running() bool { return c == nil || c.n.Load()&callEnded == 0 }

// end marks the call returned and waits for the Emits on their way: the
// loop takes them while the task runs.
func (c *callContext) end() {
	if c == nil || c.n.Add(callEnded) == callEnded {
		return
	}
	ch := make(chan struct{})
	drains.Store(c, ch)
	if c.n.Add(callWaiting) != callEnded|callWaiting {
		<-ch
	}
	drains.Delete(c)
}

type emitterKey struct{}

// inNode reports whether e is a node's, not a router's (which has no
// task, and runs on the loop's goroutine: its events could not wait for
// the loop to deliver them).
func (e *emitter) inNode() bool { return e.t != nil }

// Value returns the emitter for emitterKey and asks the parent otherwise.
func (e *emitter) Value(key any) any {
	if key == (emitterKey{}) {
		return e
	}
	return e.Context.Value(key)
}

// emitterFrom returns the emitter of ctx, nil outside a running node.
func emitterFrom(ctx context.Context) *emitter {
	e, _ := callOf(ctx)
	return e
}

// callOf returns the emitter of ctx and the call it belongs to (nil for
// a context kept by a task slot, or a router's).
func callOf(ctx context.Context) (*emitter, *callContext) {
	switch v := ctx.Value(emitterKey{}).(type) {
	case *callContext:
		return v.em, v
	case *emitter:
		return v, v.call
	}
	return nil, nil
}

// Name returns the event's name, which streams, recorders and clients
// show: its kind's name ("node_end"), or for a custom event its payload's
// (Named), "custom" for a value without one.
func (ev Event) Name() string {
	if ev.Kind == EventCustom {
		return nameOf(ev.Data)
	}
	return ev.Kind.String()
}

// Emit sends v to the run's stream as a custom event (EventCustom), under
// the path of the calling node (and scope). A v that is Named gives the
// event its name. Outside a running node (in a Router, for one), or when
// the stream does not take events of that name, it does nothing; so does
// a goroutine a node left running that emits with the node's context once
// the node has returned (its event would come after the node's end). The
// stream yields a node's events before its EventNodeEnd. Emit may block
// while the stream's consumer is slow, and returns early when the run is
// cancelled.
func Emit(ctx context.Context, v any) {
	e, call := callOf(ctx)
	if e == nil || !e.inNode() || (e.r.only != nil && !e.only) || !e.r.wantsCustom(nameOf(v)) || !call.enter() {
		return
	}
	e.r.send(ctx, Event{Kind: EventCustom, Path: e.path, Node: e.node, Step: e.step, Data: v, Time: e.r.now()})
	call.leave()
}

// WithScope returns a context whose events carry path/segment, for work
// done on behalf of something inside a node (an agent, a tool call).
// Segments must not contain '/'.
func WithScope(ctx context.Context, segment string) context.Context {
	e, call := callOf(ctx)
	if e == nil {
		return ctx
	}
	segment = strings.ReplaceAll(segment, "/", "_")
	child := *e
	child.Context, child.call = ctx, call
	child.path = e.path + "/" + segment
	child.scope = e.scope + "/" + segment
	return &child
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
// custom events named name, so that producers can skip work nobody will
// see (such as asking a model to stream tokens). Once the node whose
// context ctx is has returned, it reports false: Emit does nothing then.
func Wants(ctx context.Context, name string) bool {
	e, call := callOf(ctx)
	return e != nil && e.inNode() && (e.r.only == nil || e.only) && e.r.wantsCustom(name) && call.running()
}
