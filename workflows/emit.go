package workflows

import (
	"context"
	"fmt"

	"github.com/coorflow/coorflow/graph"
)

// A node's emit field sends an event of the workflow's own to the run's
// stream:
//
//	emit: '{"stage": "drafting", "delay": config.delay}'
//
// The value is an expression over state and config, evaluated on the
// state the node sees when it starts, and sent before the node's own work
// as a plain custom event (graph.Emit of the value, without a name): the
// Platform API's stream mode custom carries it as it is, the way
// LangGraph's stream writer sends a value, and coorflow's own event
// stream as an event named custom. A node that runs again (resumed after
// an interrupt, retried) emits again, as LangGraph's nodes do.

// checkEmit compiles the emit expression of node n.
func (f *File) checkEmit(ps *problems, n *fileNode) {
	if n.Spec.Emit == "" {
		return
	}
	p := n.Ptr + "/emit"
	l := f.doc.loc(p)
	prog, err := f.scope.compile(f.doc, n.Spec.Emit, f.doc.node(p), false)
	if err != nil {
		ps.at(err.pos, l.path, "bad expression: %s", err.msg)
		return
	}
	n.emit = prog
}

// withEmit makes node n emit its event when it starts.
func (b *build) withEmit(n *fileNode, fn graph.NodeFunc) graph.NodeFunc {
	if n.emit == nil {
		return fn
	}
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		v, err := b.f.scope.eval(ctx, n.emit, s)
		if err != nil {
			return graph.Command{}, fmt.Errorf("workflows: node %q: emit %q: %w", n.Name, n.Spec.Emit, err)
		}
		graph.Emit(ctx, v)
		return fn(ctx, s)
	}
}
