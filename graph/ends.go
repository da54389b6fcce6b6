package graph

import "slices"

// EndNodes lists, in the order the graph declares its nodes, the nodes
// that may lead to End: by a static edge, a branch's end, or a declared
// Goto destination. Their results are usually a run's last word (a
// reporter, a chat model), which is what a client that shows one answer
// streams.
func (r *Runnable) EndNodes() []string {
	var out []string
	for _, name := range r.order {
		ends := slices.Contains(r.edges[name], End)
		for _, br := range r.branches[name] {
			for _, to := range br.ends {
				ends = ends || to == End
			}
		}
		if n := r.nodes[name]; n != nil {
			ends = ends || slices.Contains(n.destinations, End)
		}
		if ends {
			out = append(out, name)
		}
	}
	return out
}
