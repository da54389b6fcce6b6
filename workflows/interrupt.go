package workflows

import (
	"context"
	"fmt"
	"maps"

	"github.com/coorflow/coorflow/graph"
)

// An interrupt node asks a person and waits:
//
//	approve:
//	  type: interrupt
//	  payload: '{"question": "Send it?", "draft": state.draft}'
//	  output: verdict
//
// The payload's value (any JSON) is the interrupt the client sees; the
// answer given on resume (any JSON: object, list, number, boolean, text)
// is written to output through the channel's reducer and checked against
// its type. An answer that does not fit loses nothing: the node asks again
// (a new interrupt, its payload with an error field saying why; a payload
// that is no object comes as {payload, error}), and the run waits for an
// answer that fits, up to maxAsks answers.

// checkInterrupt compiles an interrupt node's payload and finds its
// output channel.
func (f *File) checkInterrupt(ps *problems, n *fileNode) {
	p := n.Ptr + "/payload"
	prog, err := f.scope.compile(f.doc, n.Spec.Payload, f.doc.node(p), false)
	if err != nil {
		ps.at(err.pos, f.doc.loc(p).path, "bad expression: %s", err.msg)
	} else {
		n.payload = prog
	}
	if n.Spec.Output != "" {
		n.output = f.channelRef(ps, n.Ptr+"/output", n.Spec.Output)
	}
}

// maxAsks bounds how many times an interrupt node asks for an answer
// that fits: each answer that does not fit asks again, and the journal
// of the node's task keeps every answer.
const maxAsks = 10

// interruptNode is the function of interrupt node n.
func (b *build) interruptNode(n *fileNode) graph.NodeFunc {
	sc, out := b.f.scope, n.output
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		payload, err := sc.eval(ctx, n.payload, s)
		if err != nil {
			return graph.Command{}, fmt.Errorf("workflows: node %q: payload %q: %w", n.Name, n.Spec.Payload, err)
		}
		ask := payload
		for range maxAsks {
			answer, err := graph.Interrupt(ctx, ask)
			if err != nil {
				return graph.Command{}, err
			}
			if out == nil {
				return graph.Command{}, nil
			}
			w, err := b.write(n.Name, out, answer)
			if err == nil {
				return graph.Update(w), nil
			}
			// The run stays waiting: the same question again, with why the
			// answer did not fit.
			ask = withError(payload, fmt.Sprintf("the answer does not fit channel %s: %v", out.name, err))
		}
		return graph.Command{}, fmt.Errorf("workflows: node %q: %d answers in a row do not fit channel %s", n.Name, maxAsks, out.name)
	}
}

// withError is payload asked again after an answer that did not fit: an
// object with an error field added, anything else as {payload, error}.
func withError(payload any, msg string) map[string]any {
	if m, ok := payload.(map[string]any); ok {
		out := make(map[string]any, len(m)+1)
		maps.Copy(out, m)
		out["error"] = msg
		return out
	}
	return map[string]any{"payload": payload, "error": msg}
}
