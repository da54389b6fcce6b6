package workflows

import (
	"fmt"
	"slices"
	"strings"
)

func (f *File) checkNodes(ps *problems) {
	f.byNode = map[string]*fileNode{}
	for _, n := range f.spec.nodes {
		l := f.doc.loc(n.Ptr)
		switch {
		case n.Name == startName || n.Name == endName:
			f.unsureGraph = true
			ps.at(l.key, l.path, "%q is reserved for the %s of the graph; name the node otherwise", n.Name, map[string]string{startName: "entry", endName: "exit"}[n.Name])
			continue
		case !nodeName.MatchString(n.Name):
			f.unsureGraph = true
			ps.at(l.key, l.path, "node name %q must start with a letter or _ and hold only letters, digits, _ and -", n.Name)
			continue
		}
		fn := &fileNode{named: n}
		f.nodes = append(f.nodes, fn)
		f.byNode[n.Name] = fn
	}
	for _, n := range f.nodes {
		f.checkNode(ps, n)
		f.checkSet(ps, n)
		f.checkEmit(ps, n)
		f.checkDelay(ps, n)
	}
}

// nodeRef checks that the field of node n names a node (or end, when
// allowed).
func (f *File) nodeRef(ps *problems, ptr, name string, allowEnd bool) {
	if _, ok := f.byNode[name]; ok || (allowEnd && name == endName) {
		return
	}
	f.unsureGraph = true
	l := f.doc.loc(ptr)
	if name == startName || (name == endName && !allowEnd) {
		ps.at(l.val, l.path, "%q cannot be used here: name a node", name)
		return
	}
	names := f.Nodes()
	if allowEnd {
		names = append(names, endName)
	}
	ps.at(l.val, l.path, "unknown node %q%s", name, suggest(name, names, "the nodes are"))
}

// checkNode runs the check of n's node type (nodeKinds).
func (f *File) checkNode(ps *problems, n *fileNode) {
	if k, ok := nodeKinds[n.Spec.Type]; ok && k.check != nil {
		k.check(f, ps, n)
	}
}

// checkPromptNode checks an llm or react node: its templates, its
// output, its tools and its skills.
func (f *File) checkPromptNode(ps *problems, n *fileNode) {
	s, p := n.Spec, n.Ptr
	n.system = f.template(ps, p+"/system", s.System)
	n.prompt = f.template(ps, p+"/prompt", s.Prompt)
	n.output = f.channelRef(ps, p+"/output", s.Output)
	f.toolRefs(ps, n.named)
	f.skillRefs(ps, p, s.Skills)
}

// checkNext checks the next node of a coordinator or a background
// investigator.
func (f *File) checkNext(ps *problems, n *fileNode) {
	f.nodeRef(ps, n.Ptr+"/next", n.Spec.Next, false)
}

func (f *File) checkPlanner(ps *problems, n *fileNode) {
	f.nodeRef(ps, n.Ptr+"/review", n.Spec.Review, false)
	f.nodeRef(ps, n.Ptr+"/reporter", n.Spec.Reporter, false)
}

func (f *File) checkReview(ps *problems, n *fileNode) {
	s, p := n.Spec, n.Ptr
	f.nodeRef(ps, p+"/next", s.Next, false)
	f.nodeRef(ps, p+"/replan", s.Replan, false)
	if r, ok := f.byNode[s.Replan]; ok && r.Spec.Type != "planner" {
		l := f.doc.loc(p + "/replan")
		ps.at(l.val, l.path, "replan must name a planner node; %q is a %s node", s.Replan, r.Spec.Type)
	}
}

func (f *File) checkResearchTeam(ps *problems, n *fileNode) {
	s, p := n.Spec, n.Ptr
	for i, w := range s.Workers {
		ptr := fmt.Sprintf("%s/workers/%d", p, i)
		f.nodeRef(ps, ptr, w, false)
		if wn, ok := f.byNode[w]; ok && wn.Spec.Type != "worker" {
			l := f.doc.loc(ptr)
			ps.at(l.val, l.path, "workers must name worker nodes; %q is a %s node", w, wn.Spec.Type)
		}
	}
	f.nodeRef(ps, p+"/planner", s.Planner, false)
}

func (f *File) checkWorker(ps *problems, n *fileNode) {
	s, p := n.Spec, n.Ptr
	if _, ok := defaultAgent(s.Agent); !ok && s.System == "" {
		l := f.doc.loc(p + "/agent")
		ps.at(l.val, l.path, "agent %q is not built in (researcher, coder): give its system prompt in system", s.Agent)
	}
	f.toolRefs(ps, n.named)
	f.skillRefs(ps, p, s.Skills)
}

func (f *File) checkRouter(ps *problems, n *fileNode) {
	n.routes = f.routes(ps, n.Ptr+"/routes", n.Spec.Routes)
}

func (f *File) checkToolNode(ps *problems, n *fileNode) {
	s, p := n.Spec, n.Ptr
	if msg := f.ambiguousMCP(s.Tool); msg != "" {
		l := f.doc.loc(p + "/tool")
		ps.at(l.val, l.path, "%s", msg)
	} else if server, whole, _ := f.mcpRef(s.Tool); whole {
		l := f.doc.loc(p + "/tool")
		ps.at(l.val, l.path, "a tool node calls one tool: name one of MCP server %s's tools as %s_<tool> (coorflow tools list shows them)", server, server)
	} else if !f.knowsTool(s.Tool) {
		l := f.doc.loc(p + "/tool")
		ps.at(l.val, l.path, "unknown tool %q%s", s.Tool, suggest(s.Tool, f.toolChoices(), "declare it under tools; the file declares"))
	}
	for _, name := range sortedKeys(s.Args) {
		ptr := p + "/args/" + escapePointer(name)
		prog, err := f.scope.compile(f.doc, s.Args[name], f.doc.node(ptr), false)
		if err != nil {
			ps.at(err.pos, f.doc.loc(ptr).path, "bad expression: %s", err.msg)
			continue
		}
		n.args = append(n.args, arg{name: name, prog: prog})
	}
	if s.Output != "" {
		n.output = f.channelRef(ps, p+"/output", s.Output)
	}
}

func (f *File) checkSubgraph(ps *problems, n *fileNode) {
	n.sub = f.loadSub(ps, n.named)
}

func (f *File) checkGoNode(ps *problems, n *fileNode) {
	s, p := n.Spec, n.Ptr
	if f.opts.funcs != nil {
		if _, ok := f.opts.funcs[s.Func]; !ok {
			l := f.doc.loc(p + "/func")
			ps.at(l.val, l.path, "go function %q is not registered%s", s.Func, suggest(s.Func, sortedKeys(f.opts.funcs), "the program registers"))
		}
	}
	for i, d := range s.Destinations {
		f.nodeRef(ps, fmt.Sprintf("%s/destinations/%d", p, i), d, true)
	}
}

// template compiles the template at ptr, if any.
func (f *File) template(ps *problems, ptr, text string) *template {
	if text == "" {
		return nil
	}
	t, err := f.scope.compileTemplate(f.doc, text, f.doc.node(ptr))
	if err != nil {
		ps.at(err.pos, f.doc.loc(ptr).path, "bad expression in template: %s", err.msg)
		return nil
	}
	return t
}

// routes compiles the cases of a router node or a conditional edge: each
// has a condition but the last, which is taken when no other holds.
func (f *File) routes(ps *problems, ptr string, specs []routeSpec) []route {
	before := len(ps.list)
	defer func() {
		if len(ps.list) > before {
			f.unsureGraph = true
		}
	}()
	var out []route
	labels := map[string]int{}
	for i, r := range specs {
		rp := fmt.Sprintf("%s/%d", ptr, i)
		f.nodeRef(ps, rp+"/to", r.To, true)
		last := i == len(specs)-1
		switch {
		case r.When == "" && !last:
			l := f.doc.loc(rp)
			ps.at(l.key, l.path, "only the last route may leave out when: the routes after it could never be taken")
			continue
		case r.When != "" && last:
			l := f.doc.loc(rp + "/when")
			ps.at(l.key, l.path, "the last route must have no when: it is taken when no other route holds, so that the run always knows where to go")
			continue
		}
		label := "else"
		var prog = route{to: r.To}
		prog.set = f.setters(ps, rp+"/set", r.Set, anyChannel)
		if r.When != "" {
			p, err := f.scope.compile(f.doc, r.When, f.doc.node(rp+"/when"), true)
			if err != nil {
				ps.at(err.pos, f.doc.loc(rp+"/when").path, "bad condition: %s", err.msg)
				continue
			}
			prog.when, label = p, r.When
		}
		labels[label]++
		if labels[label] > 1 {
			label = fmt.Sprintf("%s #%d", label, labels[label])
		}
		prog.label = label
		out = append(out, prog)
	}
	return out
}

func (f *File) checkEdges(ps *problems) {
	before := len(ps.list)
	defer func() {
		if len(ps.list) > before {
			f.unsureGraph = true
		}
	}()
	seen := map[string]int{}
	for i, e := range f.spec.Edges {
		p := fmt.Sprintf("/edges/%d", i)
		l := f.doc.loc(p)
		fe := &fileEdge{edgeSpec: e}
		switch {
		case len(e.Join) > 0:
			if e.From != "" || len(e.Branches) > 0 || e.To == "" {
				ps.at(l.key, l.path, "a join has join (its sources) and to, and no from or branches")
				continue
			}
			if len(e.Set) > 0 {
				sl := f.doc.loc(p + "/set")
				ps.at(sl.key, sl.path, "a join cannot set channels: set them on the edges or nodes before it")
			}
			for j, src := range e.Join {
				f.nodeRef(ps, fmt.Sprintf("%s/join/%d", p, j), src, false)
			}
			f.nodeRef(ps, p+"/to", e.To, false)
		case len(e.Branches) > 0:
			if e.From == "" || e.To != "" {
				ps.at(l.key, l.path, "a conditional edge has from and branches, and no to (each branch has its own)")
				continue
			}
			if len(e.Set) > 0 {
				sl := f.doc.loc(p + "/set")
				ps.at(sl.key, sl.path, "a conditional edge sets channels on its branches: move set into the branch that writes them")
			}
			f.edgeFrom(ps, p, e.From)
			fe.routes = f.routes(ps, p+"/branches", e.Branches)
		default:
			if e.From == "" || e.To == "" {
				ps.at(l.key, l.path, "an edge needs from and to (or from and branches, or join and to)")
				continue
			}
			f.edgeFrom(ps, p, e.From)
			if e.To == startName {
				tl := f.doc.loc(p + "/to")
				ps.at(tl.val, tl.path, "no edge may lead to start")
			} else {
				f.nodeRef(ps, p+"/to", e.To, true)
			}
			fe.set = f.setters(ps, p+"/set", e.Set, anyChannel)
			key := e.From + "\x00" + e.To
			if first, dup := seen[key]; dup {
				ps.at(l.key, l.path, "the edge %s -> %s is declared twice (first at edges[%d])", e.From, e.To, first)
				continue
			}
			seen[key] = i
		}
		f.edges = append(f.edges, fe)
	}
}

func (f *File) edgeFrom(ps *problems, p, from string) {
	if from == startName {
		return
	}
	if from == endName {
		l := f.doc.loc(p + "/from")
		ps.at(l.val, l.path, "no edge may leave end")
		return
	}
	f.nodeRef(ps, p+"/from", from, false)
}

// successors returns what may run after name: its edges, the nodes its
// type routes to, and end.
func (f *File) successors(name string) []string {
	var out []string
	for _, e := range f.edges {
		switch {
		case len(e.Join) > 0:
			if slices.Contains(e.Join, name) {
				out = append(out, e.To)
			}
		case e.From != name:
		case len(e.routes) > 0:
			for _, r := range e.routes {
				out = append(out, r.to)
			}
		default:
			out = append(out, e.To)
		}
	}
	if n := f.byNode[name]; n != nil {
		out = append(out, n.destinations()...)
	}
	return out
}

// destinations are the nodes a node routes to by itself (graph.Goto),
// as its node type (nodeKinds) says.
func (n *fileNode) destinations() []string {
	if k, ok := nodeKinds[n.Spec.Type]; ok && k.destinations != nil {
		return k.destinations(n)
	}
	return nil
}

func nextAndEnd(n *fileNode) []string     { return []string{n.Spec.Next, endName} }
func plannerNext(n *fileNode) []string    { return []string{n.Spec.Review, n.Spec.Reporter} }
func reviewNext(n *fileNode) []string     { return []string{n.Spec.Next, n.Spec.Replan} }
func nextOnly(n *fileNode) []string       { return []string{n.Spec.Next} }
func goDestinations(n *fileNode) []string { return n.Spec.Destinations }
func researchTeamNext(n *fileNode) []string {
	return append(slices.Clone(n.Spec.Workers), n.Spec.Planner)
}

func routerNext(n *fileNode) []string {
	out := make([]string, len(n.routes))
	for i, r := range n.routes {
		out[i] = r.to
	}
	return out
}

func (f *File) checkShape(ps *problems) {
	if len(f.successors(startName)) == 0 {
		l := f.doc.loc("/edges")
		first := "NODE"
		if len(f.nodes) > 0 {
			first = f.nodes[0].Name
		}
		ps.at(l.key, l.path, "no edge leaves start: add {from: start, to: %s}", first)
		return
	}
	reach := f.closure(startName, f.successors)
	pred := map[string][]string{}
	for _, n := range append([]string{startName}, f.Nodes()...) {
		for _, s := range f.successors(n) {
			pred[s] = append(pred[s], n)
		}
	}
	toEnd := f.closure(endName, func(n string) []string { return pred[n] })
	deadEnd := false
	for _, n := range f.nodes {
		if len(f.successors(n.Name)) == 0 {
			deadEnd = true
			l := f.doc.loc(n.Ptr)
			ps.at(l.key, l.path, "node %q has no way out: add an edge from it (to end if the run should stop there)", n.Name)
		}
	}
	for _, n := range f.nodes {
		l := f.doc.loc(n.Ptr)
		switch {
		case len(f.successors(n.Name)) == 0:
		case !reach[n.Name]:
			ps.at(l.key, l.path, "node %q is never reached: no edge or route from start leads to it", n.Name)
		case !toEnd[n.Name] && !deadEnd:
			ps.at(l.key, l.path, "node %q cannot reach end: every route from it loops (%s); add an exit, such as a conditional edge to end",
				n.Name, strings.Join(f.loop(n.Name), " -> "))
		}
	}
}

func (f *File) closure(from string, next func(string) []string) map[string]bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, s := range next(n) {
			if !seen[s] {
				seen[s] = true
				queue = append(queue, s)
			}
		}
	}
	return seen
}

// loop returns a cycle reachable from name, as the path that closes it.
func (f *File) loop(name string) []string {
	path := []string{name}
	index := map[string]int{name: 0}
	for cur := name; ; {
		next := f.successors(cur)
		if len(next) == 0 {
			return path
		}
		cur = next[0]
		path = append(path, cur)
		if i, ok := index[cur]; ok {
			return path[i:]
		}
		index[cur] = len(path) - 1
	}
}
