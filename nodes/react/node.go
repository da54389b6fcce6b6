package react

import (
	"context"

	"github.com/coorflow/coorflow/graph"
)

// Node returns a graph node that runs the agent: task builds its Task from
// the state, done turns its Result into the node's command.
func (a *Agent) Node(task func(graph.State) (Task, error), done func(*Result) (graph.Command, error)) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		t, err := task(s)
		if err != nil {
			return graph.Command{}, err
		}
		res, err := a.Run(ctx, t)
		if err != nil {
			return graph.Command{}, err
		}
		return done(res)
	}
}

// TextNode returns a graph node that runs the agent on the text of in and
// writes its answer to out.
func (a *Agent) TextNode(in, out *graph.Key[string]) graph.NodeFunc {
	return a.Node(
		func(s graph.State) (Task, error) { return Task{Input: in.Get(s)}, nil },
		func(r *Result) (graph.Command, error) { return graph.Update(out.Set(r.Output)), nil },
	)
}
