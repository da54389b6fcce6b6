package graph

import (
	"fmt"
	"regexp"
	"strings"
)

var mermaidSafe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Mermaid draws the graph as a Mermaid flowchart. Static edges are solid,
// conditional edges dashed with their branch labels, joins thick, and
// declared Goto/Send destinations dotted. Subgraph nodes have a double
// border; deferred nodes are marked. The output is deterministic.
func (r *Runnable) Mermaid() string {
	var b strings.Builder
	ids := make(map[string]string, len(r.order)+2)
	id := func(name string) string {
		if v, ok := ids[name]; ok {
			return v
		}
		v := name
		if !mermaidSafe.MatchString(name) || strings.EqualFold(name, "end") || strings.EqualFold(name, "graph") {
			v = fmt.Sprintf("n%d", len(ids))
		}
		ids[name] = v
		return v
	}
	label := strings.NewReplacer(`"`, "#quot;", "|", "#124;").Replace

	b.WriteString("flowchart TD\n")
	fmt.Fprintf(&b, "  %s([\"%s\"])\n", id(Start), Start)
	for _, name := range r.order {
		n := r.nodes[name]
		text := label(name)
		if n.deferred {
			text += " (deferred)"
		}
		if n.sub != nil {
			fmt.Fprintf(&b, "  %s[[\"%s\"]]\n", id(name), text)
		} else {
			fmt.Fprintf(&b, "  %s[\"%s\"]\n", id(name), text)
		}
	}
	fmt.Fprintf(&b, "  %s([\"%s\"])\n", id(End), End)

	froms := append([]string{Start}, r.order...)
	for _, from := range froms {
		for _, to := range r.edges[from] {
			fmt.Fprintf(&b, "  %s --> %s\n", id(from), id(to))
		}
		for _, br := range r.branches[from] {
			for _, l := range sortedKeys(br.ends) {
				fmt.Fprintf(&b, "  %s -.->|%s| %s\n", id(from), label(l), id(br.ends[l]))
			}
		}
		if n := r.nodes[from]; n != nil {
			for _, to := range n.destinations {
				fmt.Fprintf(&b, "  %s -.-> %s\n", id(from), id(to))
			}
		}
	}
	for _, j := range r.joins {
		srcs := make([]string, len(j.sources))
		for i, s := range j.sources {
			srcs[i] = id(s)
		}
		fmt.Fprintf(&b, "  %s ==> %s\n", strings.Join(srcs, " & "), id(j.to))
	}
	return b.String()
}
