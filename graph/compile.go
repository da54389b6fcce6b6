package graph

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Runnable is a compiled graph: immutable, safe for concurrent runs.
type Runnable struct {
	name     string
	layout   *layout
	nodes    map[string]*nodeSpec
	order    []string
	edges    map[string][]string
	branches map[string][]branch
	joins    []join
	// joinsOf lists, per source node, the indexes of the joins it feeds.
	joinsOf map[string][]int
	// start is where Start's edges lead.
	start    outgoing
	defaults config
	// results holds the task result buffers of ended runs (*[]taskResult),
	// for the next runs: a wide step's are large.
	results sync.Pool
}

// Name returns the graph's name.
func (r *Runnable) Name() string { return r.name }

// Compile checks the graph and returns it ready to run. Every problem found
// is reported at once in a *CompileError (errors.Is ErrInvalidGraph).
// Options given here are the defaults of every run.
func (g *Graph) Compile(opts ...Option) (*Runnable, error) {
	problems := slices.Clone(g.problems)
	problems = append(problems, g.checkEdges()...)
	problems = append(problems, g.checkSubgraphs()...)
	if len(problems) == 0 {
		problems = append(problems, g.checkPaths()...)
	}
	if len(problems) > 0 {
		return nil, &CompileError{Graph: g.name, Problems: problems}
	}
	r := &Runnable{
		name:     g.name,
		layout:   newLayout(slices.Clone(g.channels)),
		nodes:    make(map[string]*nodeSpec, len(g.nodes)),
		order:    slices.Clone(g.order),
		edges:    maps.Clone(g.edges),
		branches: maps.Clone(g.branches),
		joins:    slices.Clone(g.joins),
		joinsOf:  make(map[string][]int),
	}
	for i, j := range r.joins {
		for _, s := range j.sources {
			r.joinsOf[s] = append(r.joinsOf[s], i)
		}
	}
	for name, n := range g.nodes {
		c := *n // the Graph may change and compile again: resolve in a copy
		c.path = r.name + "/" + name
		c.alone = []string{name}
		r.nodes[name] = &c
	}
	for name, n := range r.nodes {
		n.out = r.outgoingOf(name)
	}
	r.start = r.outgoingOf(Start)
	r.defaults.stepLimit = defaultStepLimit
	r.defaults.apply(opts)
	return r, nil
}

// outgoingOf resolves where the edges from the node called name lead.
// An edge to End resolves to nil: Compile has checked that every other
// target is a node.
func (r *Runnable) outgoingOf(name string) outgoing {
	out := outgoing{branches: r.branches[name], joins: r.joinsOf[name]}
	for _, to := range r.edges[name] {
		out.to = append(out.to, r.nodes[to])
	}
	return out
}

func (g *Graph) isNode(name string) bool { return g.nodes[name] != nil }

// checkEdges reports edges, branches, joins and destinations that name
// unknown or reserved nodes, and nodes with no way out.
func (g *Graph) checkEdges() []string {
	var p []string
	for _, from := range sortedKeys(g.edges) {
		for _, to := range g.edges[from] {
			p = append(p, g.checkEnds("edge "+from+" -> "+to, from, to)...)
		}
	}
	for _, from := range sortedKeys(g.branches) {
		for _, b := range g.branches[from] {
			for _, label := range sortedKeys(b.ends) {
				to := b.ends[label]
				p = append(p, g.checkEnds(fmt.Sprintf("conditional edge %s -> %s (branch %q)", from, to, label), from, to)...)
			}
		}
	}
	for _, j := range g.joins {
		what := fmt.Sprintf("join %v -> %s", j.sources, j.to)
		for _, s := range j.sources {
			if !g.isNode(s) {
				p = append(p, fmt.Sprintf("%s: unknown source node %q", what, s))
			}
		}
		if !g.isNode(j.to) {
			p = append(p, fmt.Sprintf("%s: unknown target node %q", what, j.to))
		}
	}
	mine := newLayout(g.channels)
	for _, name := range g.order {
		for _, d := range g.nodes[name].destinations {
			if d != End && !g.isNode(d) {
				p = append(p, fmt.Sprintf("node %q declares unknown destination %q", name, d))
			}
		}
		p = append(p, g.checkSends(mine, name)...)
	}
	if len(g.edges[Start]) == 0 && len(g.branches[Start]) == 0 {
		p = append(p, fmt.Sprintf("no edge from Start: add g.AddEdge(graph.Start, %q) or a conditional edge from graph.Start", g.firstNode()))
	}
	for _, name := range g.order {
		if len(g.successors(name)) == 0 {
			p = append(p, fmt.Sprintf("node %q has no outgoing edge: add an edge (to graph.End if the run should stop there) or declare where its Goto goes with graph.Destinations", name))
		}
	}
	return p
}

// checkSends reports packets declared with Sends that are for End or
// write channels the graph does not declare (or declares with another type
// or reducer).
func (g *Graph) checkSends(mine *layout, name string) []string {
	var p []string
	sends := g.nodes[name].sends
	for _, to := range sortedKeys(sends) {
		if to == End {
			p = append(p, fmt.Sprintf("node %q declares packets for End, which runs nothing: send them to a node", name))
			continue
		}
		for _, k := range sends[to] {
			c, _, ok := mine.channel(k.Name())
			switch {
			case !ok:
				p = append(p, fmt.Sprintf("node %q sends packets to %q with channel %q, which graph %q does not declare: add it to graph.New",
					name, to, k.Name(), g.name))
			case !compatible(c, k):
				p = append(p, fmt.Sprintf("node %q sends packets to %q with channel %q as %v (%s), but the graph declares it as %v (%s)",
					name, to, k.Name(), k.ValueType(), k.Reducer(), c.ValueType(), c.Reducer()))
			}
		}
	}
	return p
}

func (g *Graph) firstNode() string {
	if len(g.order) > 0 {
		return g.order[0]
	}
	return "node"
}

func (g *Graph) checkEnds(what, from, to string) []string {
	var p []string
	switch {
	case from == End:
		p = append(p, what+": End has no outgoing edges")
	case from != Start && !g.isNode(from):
		p = append(p, fmt.Sprintf("%s: unknown node %q", what, from))
	}
	switch {
	case to == Start:
		p = append(p, what+": Start has no incoming edges")
	case to != End && !g.isNode(to):
		p = append(p, fmt.Sprintf("%s: unknown node %q", what, to))
	}
	return p
}

// successors returns every node (or End) that may run after name.
func (g *Graph) successors(name string) []string {
	out := slices.Clone(g.edges[name])
	for _, b := range g.branches[name] {
		for _, label := range sortedKeys(b.ends) {
			out = append(out, b.ends[label])
		}
	}
	for _, j := range g.joins {
		if slices.Contains(j.sources, name) {
			out = append(out, j.to)
		}
	}
	if n := g.nodes[name]; n != nil && len(n.destinations) > 0 {
		// A node that routes explicitly may always Goto End.
		out = append(out, n.destinations...)
		out = append(out, End)
	}
	return out
}

// checkPaths reports nodes that Start cannot reach and nodes that cannot
// reach End.
func (g *Graph) checkPaths() []string {
	reach := map[string]bool{Start: true}
	queue := []string{Start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, s := range g.successors(n) {
			if !reach[s] {
				reach[s] = true
				queue = append(queue, s)
			}
		}
	}
	pred := make(map[string][]string)
	for _, n := range append([]string{Start}, g.order...) {
		for _, s := range g.successors(n) {
			pred[s] = append(pred[s], n)
		}
	}
	ends := map[string]bool{End: true}
	queue = []string{End}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, p := range pred[n] {
			if !ends[p] {
				ends[p] = true
				queue = append(queue, p)
			}
		}
	}
	var p []string
	for _, name := range g.order {
		if !reach[name] {
			p = append(p, fmt.Sprintf("node %q is unreachable from Start", name))
		}
	}
	for _, name := range g.order {
		if reach[name] && !ends[name] {
			p = append(p, fmt.Sprintf("node %q has no path to End (every route from it loops forever)", name))
		}
	}
	if !reach[End] && len(g.order) > 0 {
		p = append(p, "End is unreachable from Start")
	}
	return p
}

// checkSubgraphs reports channels a subgraph shares by name with another
// type or reducer.
func (g *Graph) checkSubgraphs() []string {
	var p []string
	mine := newLayout(g.channels)
	for _, name := range g.order {
		sub := g.nodes[name].sub
		if sub == nil {
			continue
		}
		for _, c := range sub.layout.channels {
			pc, _, ok := mine.channel(c.Name())
			if ok && !compatible(pc, c) {
				p = append(p, fmt.Sprintf("subgraph node %q: channel %q is %v (%s) here but %v (%s) in subgraph %q",
					name, c.Name(), pc.ValueType(), pc.Reducer(), c.ValueType(), c.Reducer(), sub.name))
			}
		}
	}
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
