package graph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Start and End are the entry and exit of every graph. Start has outgoing
// edges only, End incoming ones only; neither may name a node.
const (
	Start = "__start__"
	End   = "__end__"
)

// NodeFunc is the code of a node. It reads the state as of the start of its
// step and returns a Command. It must honour ctx: cancellation and node
// timeouts reach it only through ctx. Goroutines it starts may use ctx
// while it runs; once it has returned, ctx stands for the node no more:
// Emit does nothing with it, and TaskOf, PathOf, WithScope, Do and
// Interrupt must not be given it (they may see a later task).
type NodeFunc func(ctx context.Context, s State) (Command, error)

// Router picks a branch of a conditional edge: it returns one of the labels
// declared with the edge. It runs after the step of its node, on the state
// that step produced. Its context tells the node (TaskOf) and the runtime
// values (RuntimeValue); Emit does nothing with it.
type Router func(ctx context.Context, s State) (string, error)

// Branches maps the labels a Router returns to node names.
type Branches map[string]string

// Paths returns branches whose labels are the node names themselves.
func Paths(nodes ...string) Branches {
	b := make(Branches, len(nodes))
	for _, n := range nodes {
		b[n] = n
	}
	return b
}

// ErrorHandler runs when a node has failed for good (after its retries). It
// may return a Command that stands for the node's result — writes and a
// fallback route — or an error, which fails the run.
type ErrorHandler func(ctx context.Context, s State, err error) (Command, error)

// RetryPolicy says whether and when a failed node runs again.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt; 0 or 1 means no retry.
	MaxAttempts int
	// InitialInterval is the wait before the second attempt (default 500ms).
	InitialInterval time.Duration
	// BackoffFactor multiplies the wait after each attempt (default 2).
	BackoffFactor float64
	// MaxInterval caps the wait (default 30s).
	MaxInterval time.Duration
	// Jitter, when true, waits a random duration between half the interval
	// and the full interval.
	Jitter bool
	// RetryOn decides which errors are retried, with errors.Is or errors.As.
	// When nil, every error is retried except panics, context cancellation,
	// interrupts and errors wrapped with Permanent.
	RetryOn func(error) bool
}

// delay returns the wait before attempt+1, given that attempt failed.
func (p RetryPolicy) delay(attempt int) time.Duration {
	d := p.InitialInterval
	if d <= 0 {
		d = 500 * time.Millisecond
	}
	f := p.BackoffFactor
	if f <= 0 {
		f = 2
	}
	maxD := p.MaxInterval
	if maxD <= 0 {
		maxD = 30 * time.Second
	}
	for i := 1; i < attempt && d < maxD; i++ {
		d = time.Duration(float64(d) * f)
	}
	d = min(d, maxD)
	if p.Jitter && d > 1 {
		d = d/2 + rand.N(d/2+1)
	}
	return d
}

// NodeOption configures a node.
type NodeOption func(*nodeSpec)

// WithRetry sets the node's retry policy.
func WithRetry(p RetryPolicy) NodeOption { return func(n *nodeSpec) { n.retry = p } }

// WithTimeout bounds each attempt of the node; an attempt that runs longer
// fails with ErrNodeTimeout (and may be retried).
func WithTimeout(d time.Duration) NodeOption { return func(n *nodeSpec) { n.timeout = d } }

// OnError sets the handler that runs when the node has failed for good.
func OnError(h ErrorHandler) NodeOption { return func(n *nodeSpec) { n.onError = h } }

// Deferred makes the node wait until nothing else is scheduled: when it is
// triggered while other nodes are due to run, it runs after them, once.
func Deferred() NodeOption { return func(n *nodeSpec) { n.deferred = true } }

// StartsTasks declares that the node starts tasks at run time (Schedule),
// as a factory team does. Runners that send tasks to other processes read
// it (Runnable.TaskNodes): Temporal's never runs such a node as a local
// step, whose tasks could not reach other workers. A node that starts
// tasks without declaring it still runs correctly; a runner may then run
// its tasks inside the node.
func StartsTasks() NodeOption { return func(n *nodeSpec) { n.startsTasks = true } }

// Destinations declares the nodes this node may name in Goto or Send. They
// are checked at run time and drawn in Mermaid, and Compile uses them to
// check that every node is reachable and can reach End. End is always a
// valid Goto target and needs no declaring (naming it is allowed): a node
// that routes explicitly may always end its branch.
func Destinations(nodes ...string) NodeOption {
	return func(n *nodeSpec) { n.destinations = append(n.destinations, nodes...) }
}

// Sends declares that the node sends packets to target (see Send) whose
// writes are to channels among keys. Target becomes one of the node's
// destinations. Compile checks that target is a node and that the graph
// declares every key with the same type and reducer, so a key missing from
// graph.New is found before any run; at run time a packet for target that
// writes another channel fails the node.
func Sends(target string, keys ...Channel) NodeOption {
	return func(n *nodeSpec) {
		n.destinations = append(n.destinations, target)
		if n.sends == nil {
			n.sends = make(map[string][]Channel)
		}
		n.sends[target] = append(n.sends[target], keys...)
	}
}

type nodeSpec struct {
	name         string
	fn           NodeFunc
	sub          *Runnable
	retry        RetryPolicy
	timeout      time.Duration
	onError      ErrorHandler
	deferred     bool
	startsTasks  bool
	destinations []string
	// sends holds, per target, the channels its packets may write
	// (declared with Sends).
	sends map[string][]Channel

	// Set by Compile on the Runnable's own copy of the node:
	// out is where the node's edges lead; path is its event path in a
	// run of the root graph.
	out  outgoing
	path string
	// alone is the Data of EventStepStart for a step that runs this node
	// alone, made once: []string{name}.
	alone any
}

// outgoing is where a node's static edges, conditional edges and joins
// lead, resolved once by Compile so that routing a step looks up nothing
// by name.
type outgoing struct {
	// to holds the targets of the static edges (nil for End).
	to       []*nodeSpec
	branches []branch
	joins    []int // indexes into Runnable.joins
}

type branch struct {
	route Router
	ends  Branches
}

type join struct {
	sources []string
	to      string
}

// Graph is a graph under construction. Its methods record nodes and edges;
// problems are kept and reported together by Compile, so building reads as
// a list of calls.
type Graph struct {
	name     string
	channels []Channel
	nodes    map[string]*nodeSpec
	order    []string
	edges    map[string][]string
	branches map[string][]branch
	joins    []join
	problems []string
}

// New starts a graph called name over the given channels.
func New(name string, channels ...Channel) *Graph {
	g := &Graph{
		name:     name,
		nodes:    make(map[string]*nodeSpec),
		edges:    make(map[string][]string),
		branches: make(map[string][]branch),
	}
	if name == "" || strings.ContainsAny(name, "/") {
		g.problemf("graph name %q must be non-empty and contain no '/'", name)
	}
	seen := make(map[string]bool)
	for _, c := range channels {
		if c == nil || c.Name() == "" {
			g.problemf("a channel has no name")
			continue
		}
		if seen[c.Name()] {
			g.problemf("channel %q is declared twice", c.Name())
			continue
		}
		seen[c.Name()] = true
		g.channels = append(g.channels, c)
	}
	return g
}

func (g *Graph) problemf(format string, args ...any) {
	g.problems = append(g.problems, fmt.Sprintf(format, args...))
}

// AddNode adds a node called name running fn.
func (g *Graph) AddNode(name string, fn NodeFunc, opts ...NodeOption) {
	if fn == nil {
		g.problemf("node %q has no function", name)
		return
	}
	g.addNode(&nodeSpec{name: name, fn: fn}, opts)
}

// AddSubgraph adds a compiled graph as the node name. The subgraph shares
// channels with this graph by name (same type and reducer, checked by
// Compile): it starts from this graph's values of the shared channels, and
// the writes it makes to them become the node's writes. Its events carry
// the node's path as their prefix.
func (g *Graph) AddSubgraph(name string, sub *Runnable, opts ...NodeOption) {
	if sub == nil {
		g.problemf("subgraph node %q has no compiled graph", name)
		return
	}
	g.addNode(&nodeSpec{name: name, sub: sub}, opts)
}

func (g *Graph) addNode(n *nodeSpec, opts []NodeOption) {
	switch {
	case n.name == Start || n.name == End:
		g.problemf("node name %q is reserved", n.name)
		return
	case n.name == "" || strings.ContainsAny(n.name, "/[]"):
		g.problemf("node name %q must be non-empty and contain none of / [ ]", n.name)
		return
	case g.nodes[n.name] != nil:
		g.problemf("node %q is added twice", n.name)
		return
	}
	for _, o := range opts {
		o(n)
	}
	g.nodes[n.name] = n
	g.order = append(g.order, n.name)
}

// AddEdge adds a static edge: after from runs, to runs in the next step.
// When several nodes with edges to the same node run in one step, it runs
// once.
func (g *Graph) AddEdge(from, to string) {
	g.edges[from] = append(g.edges[from], to)
}

// AddConditionalEdges adds a conditional edge from from: after from runs,
// route picks a label and the node branches maps it to runs next.
func (g *Graph) AddConditionalEdges(from string, route Router, branches Branches) {
	if route == nil {
		g.problemf("conditional edge from %q has no router", from)
		return
	}
	if len(branches) == 0 {
		g.problemf("conditional edge from %q declares no branches", from)
		return
	}
	g.branches[from] = append(g.branches[from], branch{route: route, ends: branches})
}

// AddJoin adds a join edge: to runs once every node in sources has run
// since to last ran through this join, whatever the steps they ran in.
func (g *Graph) AddJoin(sources []string, to string) {
	if len(sources) == 0 {
		g.problemf("join into %q has no sources", to)
		return
	}
	g.joins = append(g.joins, join{sources: append([]string(nil), sources...), to: to})
}
