package workflows

import (
	"context"
	"fmt"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// A node's delay field makes it wait before its own work:
//
//	delay: 'config.delay'          # seconds, an expression over state and config
//
// The expression is evaluated on the state the node sees when it starts
// (after its emit, if any), and must be a number of seconds from 0 to
// MaxNodeDelay; the node waits that long, or until its run is cancelled
// or times out (then it fails with the context's cause). A LangGraph
// scenario's graph uses such a delay, taken from the run's config, to keep
// a run in progress while its client joins, cancels or double-texts.

// MaxNodeDelay is the longest a node's delay may be.
const MaxNodeDelay = time.Hour

// checkDelay compiles the delay expression of node n.
func (f *File) checkDelay(ps *problems, n *fileNode) {
	if n.Spec.Delay == "" {
		return
	}
	p := n.Ptr + "/delay"
	l := f.doc.loc(p)
	prog, err := f.scope.compile(f.doc, n.Spec.Delay, f.doc.node(p), false)
	if err != nil {
		ps.at(err.pos, l.path, "bad expression: %s", err.msg)
		return
	}
	n.delay = prog
}

// withDelay makes node n wait its delay before running fn.
func (b *build) withDelay(n *fileNode, fn graph.NodeFunc) graph.NodeFunc {
	if n.delay == nil {
		return fn
	}
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		v, err := b.f.scope.eval(ctx, n.delay, s)
		if err != nil {
			return graph.Command{}, fmt.Errorf("workflows: node %q: delay %q: %w", n.Name, n.Spec.Delay, err)
		}
		d, err := delayOf(v)
		if err != nil {
			return graph.Command{}, fmt.Errorf("workflows: node %q: delay %q: %w", n.Name, n.Spec.Delay, err)
		}
		if d > 0 {
			timer := time.NewTimer(d)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-ctx.Done():
				return graph.Command{}, context.Cause(ctx)
			}
		}
		return fn(ctx, s)
	}
}

// delayOf reads a delay's value: seconds, from 0 to MaxNodeDelay.
func delayOf(v any) (time.Duration, error) {
	var secs float64
	switch x := v.(type) {
	case float64:
		secs = x
	case float32:
		secs = float64(x)
	case int:
		secs = float64(x)
	case int64:
		secs = float64(x)
	case nil:
		return 0, nil
	default:
		return 0, fmt.Errorf("is %T, not a number of seconds", v)
	}
	if secs < 0 || secs > MaxNodeDelay.Seconds() || secs != secs {
		return 0, fmt.Errorf("is %v seconds, not from 0 to %v", secs, MaxNodeDelay.Seconds())
	}
	return time.Duration(secs * float64(time.Second)), nil
}
