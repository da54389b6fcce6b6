package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memories"
	"github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/tools/mcp"
)

// Env is what a workflow's graph runs with: the models, the store and
// the saver the program gives it, where the file declares the graph's
// shape and settings. File.Compile, Research and Coor take it.
type Env struct {
	// Models serves the tiers (Resolve, llm.New or llm.NewStatic); it is
	// required when a node calls a model.
	Models factory.Models
	// Store keeps the agent registry, the mission boards and the
	// meta-prompt cache for Owner (in memory, and "default", when empty).
	// A write that leaves an always-loaded item larger than
	// board.DefaultWarnSize shows as a warning event in the run.
	Store store.Store
	Owner string
	// Getenv resolves ${ENV} references (os.Getenv when nil).
	Getenv func(string) string
	// Warn is told of what does not stop the graph from compiling, such
	// as an optional tool left out; nil discards it.
	Warn func(msg string)
	// LeftOut is told, beside Warn, the name of each optional tool
	// ("web_search") or MCP server ("mcp.<server>") that was left out:
	// the host records them with its runs (runs.Env.LeftOut), since their
	// models see fewer tools. Nil tells no one.
	LeftOut func(name string)
	// LeaveOut names optional tools and MCP servers, as LeftOut tells
	// them, to leave out whether or not they are available: a replay
	// compiles without what the run it replays was without.
	LeaveOut []string
	// Embedder, optional, lets memory across threads (settings.memory,
	// the recall tool) find memories by similarity as well as by words.
	Embedder memories.Embedder
	// Graph are options for graph.Compile (a saver...), after those the
	// file's settings give.
	Graph []graph.Option
	// Python configures the python tool of files that declare it; the
	// file's timeout and interpreter apply on top. Nil, the default,
	// turns code execution off: the tool is there, so that every file
	// compiles, but each call fails with tools.ErrCodeExecDisabled. A
	// program serving callers it does not trust keeps the sandbox (the
	// zero tools.SandboxConfig); one that runs its user's own file may
	// turn it off.
	Python *tools.PythonConfig

	// MCP owns the sessions with the MCP servers of the file's tools.mcp
	// section, which Compile starts to list their tools; the host closes
	// it when it stops. Required for a file with MCP servers (unless
	// Offline).
	MCP *mcp.Hub
	// Offline compiles the graph to be read or drawn, never run: go nodes
	// without their function, unregistered tools and tools whose ${ENV}
	// is unset get stand-ins that fail when called.
	Offline bool
	// AutoAccept accepts every plan without a person's review, whatever
	// the file's auto_accept settings say: for a program no one watches.
	AutoAccept bool
}

// leftOut tells Warn and LeftOut that the optional tool or MCP server
// name was left out, and why.
func (e Env) leftOut(name, why string) {
	e.Warn(why)
	if e.LeftOut != nil {
		e.LeftOut(name)
	}
}

// leaves reports whether the optional tool or MCP server name is to be
// left out (LeaveOut), telling so.
func (e Env) leaves(name, what string) bool {
	if !slices.Contains(e.LeaveOut, name) {
		return false
	}
	e.leftOut(name, what+" is left out: the run replayed was without it")
	return true
}

func (e *Env) defaults() {
	if e.Store == nil {
		e.Store = memory.New(store.Config{})
	}
	e.Store = runStore(e.Store)
	if e.Owner == "" {
		e.Owner = "default"
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Warn == nil {
		e.Warn = func(string) {}
	}
}

// build is one compilation of a file.
type build struct {
	f     *File
	env   Env
	tools *tools.Registry
	reg   *factory.Registry
	mem   *memories.Memories // nil unless the file uses memory
	r     *graph.Runnable    // set once compiled, for decoding writes
	// subs are the subgraphs compiled so far, shared by every build of
	// one Compile: a file included many times is compiled once.
	subs map[*File]*graph.Runnable
	// edgeSteps counts the steps of edges with set, by source and target.
	edgeSteps map[string]int
}

// Compile builds the file's graph: its channels, nodes and edges, with the
// models, tools and store of env.
func (f *File) Compile(ctx context.Context, env Env) (*graph.Runnable, error) {
	env.defaults()
	return f.compile(ctx, env, map[*File]*graph.Runnable{})
}

func (f *File) compile(ctx context.Context, env Env, subs map[*File]*graph.Runnable) (*graph.Runnable, error) {
	b := &build{f: f, env: env, reg: factory.NewRegistry(env.Store, env.Owner), subs: subs, edgeSteps: map[string]int{}}
	var err error
	if b.mem, err = f.memories(env); err != nil {
		return nil, err
	}
	if b.tools, err = f.buildTools(env, b.mem); err != nil {
		return nil, err
	}
	if err := f.addMCPTools(ctx, env, b.tools); err != nil {
		return nil, err
	}
	if err := f.addA2ATools(ctx, env, b.tools); err != nil {
		return nil, err
	}
	keys := make([]graph.Channel, len(f.chans))
	for i, c := range f.chans {
		keys[i] = c.key
	}
	g := graph.New(f.spec.Name, keys...)
	for _, n := range f.nodes {
		if err := b.addNode(ctx, g, n); err != nil {
			return nil, err
		}
	}
	for _, e := range f.edges {
		b.addEdge(g, e)
	}
	opts := []graph.Option{graph.StepLimitSetting(fmt.Sprintf("settings.step_limit in %s", f.path))}
	if s := f.spec.Settings; s.StepLimit > 0 {
		opts = append(opts, graph.StepLimit(s.StepLimit))
	}
	if s := f.spec.Settings; s.MaxConcurrency > 0 {
		opts = append(opts, graph.MaxConcurrency(s.MaxConcurrency))
	}
	r, err := g.Compile(append(opts, env.Graph...)...)
	if err != nil {
		return nil, fmt.Errorf("workflows: %s: %w", f.path, err)
	}
	b.r = r
	return r, nil
}

// graphName maps the file's start and end to the graph's.
func graphName(name string) string {
	switch name {
	case startName:
		return graph.Start
	case endName:
		return graph.End
	}
	return name
}

func graphNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = graphName(n)
	}
	return out
}

func (b *build) addEdge(g *graph.Graph, e *fileEdge) {
	switch {
	case len(e.Join) > 0:
		g.AddJoin(graphNames(e.Join), graphName(e.To))
	case len(e.routes) > 0:
		branches := graph.Branches{}
		for _, r := range e.routes {
			branches[r.label] = graphName(r.to)
			if len(r.set) > 0 {
				branches[r.label] = b.addSetStep(g, e.From, r.to, r.set)
			}
		}
		routes, sc := e.routes, b.f.scope
		g.AddConditionalEdges(graphName(e.From), func(ctx context.Context, s graph.State) (string, error) {
			r, err := pick(ctx, sc, routes, s)
			return r.label, err
		}, branches)
	case len(e.set) > 0:
		g.AddEdge(graphName(e.From), b.addSetStep(g, e.From, e.To, e.set))
	default:
		g.AddEdge(graphName(e.From), graphName(e.To))
	}
}

// pick returns the first route whose condition holds, or the last one.
func pick(ctx context.Context, sc *scope, routes []route, s graph.State) (route, error) {
	for _, r := range routes {
		if r.when == nil {
			return r, nil
		}
		ok, err := sc.evalBool(ctx, r.when, s)
		if err != nil {
			return route{}, fmt.Errorf("workflows: condition %q: %w", r.label, err)
		}
		if ok {
			return r, nil
		}
	}
	return routes[len(routes)-1], nil
}

// model returns the model of a tier.
func (b *build) model(n *fileNode) (llms.Model, llm.ModelInfo, error) {
	tier := llm.Tier(b.f.tierOf(n))
	if b.env.Models == nil {
		return nil, llm.ModelInfo{}, fmt.Errorf("%w for tier %s", ErrNoModel, tier)
	}
	m, err := b.env.Models.Model(tier)
	if err != nil {
		return nil, llm.ModelInfo{}, fmt.Errorf("workflows: node %q: tier %s: %w", n.Name, tier, err)
	}
	return m, b.env.Models.Profile(tier).Info(tier), nil
}

// nodeOptions are the retry policy and timeout of a node.
func nodeOptions(n *fileNode) []graph.NodeOption {
	var opts []graph.NodeOption
	if r := n.Spec.Retry; r != nil {
		p := graph.RetryPolicy{MaxAttempts: r.MaxAttempts, BackoffFactor: r.BackoffFactor, Jitter: r.Jitter}
		p.InitialInterval, _ = time.ParseDuration(r.InitialInterval)
		p.MaxInterval, _ = time.ParseDuration(r.MaxInterval)
		opts = append(opts, graph.WithRetry(p))
	}
	if d, err := time.ParseDuration(n.Spec.Timeout); err == nil && d > 0 {
		opts = append(opts, graph.WithTimeout(d))
	}
	if nodeKinds[n.Spec.Type].startsTasks {
		opts = append(opts, graph.StartsTasks())
	}
	return opts
}

// write makes a write of v to channel c, decoded through the channel's
// type, after checking v against the channel's schema.
func (b *build) write(node string, c *channel, v any) (graph.Write, error) {
	if err := c.check(v); err != nil {
		return graph.Write{}, fmt.Errorf("workflows: node %q wrote a bad value: %w", node, err)
	}
	if c.builtin && c.reducer == "append" {
		// One item for a prebuilt list (set: {messages: '{"role": …}'}):
		// its typed key takes a list of items to append.
		if k := reflect.ValueOf(v).Kind(); k != reflect.Slice && k != reflect.Array {
			v = []any{v}
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return graph.Write{}, fmt.Errorf("workflows: node %q: encode its output: %w", node, err)
	}
	ws, err := b.r.DecodeInput(map[string]json.RawMessage{c.name: raw})
	if err != nil {
		return graph.Write{}, fmt.Errorf("workflows: node %q: %w", node, err)
	}
	return ws[0], nil
}

// checked wraps a node so that what it writes to declared channels is
// checked against their schemas.
func (b *build) checked(name string, fn graph.NodeFunc) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		cmd, err := fn(ctx, s)
		if err != nil {
			return cmd, err
		}
		for _, w := range cmd.Update {
			if c, ok := b.f.byName[w.Channel()]; ok && !c.builtin {
				if err := c.check(w.Value()); err != nil {
					return graph.Command{}, fmt.Errorf("workflows: node %q wrote a bad value: %w", name, err)
				}
			}
		}
		return cmd, nil
	}
}

// metaprompt returns the meta-prompt stage over the team's model.
func (b *build) expander(model llms.Model, info llm.ModelInfo) (*metaprompt.Expander, error) {
	return metaprompt.New(metaprompt.Config{Model: model, ModelName: info.Model, Tier: info.Tier, Provider: info.Provider, Price: info.Price,
		Cache: b.env.Store, Owner: b.env.Owner})
}

// errNoReply is a model reply without a choice.
var errNoReply = errors.New("workflows: the model returned no choice")
