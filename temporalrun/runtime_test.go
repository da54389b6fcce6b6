package temporalrun_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/temporalrun"
)

// TestRuntimeKeysReachTheWorkersNodes: the runtime values Config.RuntimeKeys
// names reach the nodes on the workers, those of the call that resumes a
// run after a resume; the others stay with the caller.
func TestRuntimeKeysReachTheWorkersNodes(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	seen := func(ctx context.Context) string {
		tenant, _ := graph.RuntimeValue(ctx, "tenant")
		secret, _ := graph.RuntimeValue(ctx, "secret")
		return fmt.Sprintf("tenant=%v secret=%v", tenant, secret)
	}
	g := graph.New("runtime-"+randomHex(), callLog)
	g.AddNode("first", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(callLog, seen(ctx))), nil
	})
	g.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if _, err := graph.Interrupt(ctx, "go on?"); err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(callLog, seen(ctx))), nil
	})
	g.AddEdge(graph.Start, "first")
	g.AddEdge("first", "ask")
	g.AddEdge("ask", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	run := e.runner(r, func(c *temporalrun.Config) { c.RuntimeKeys = []string{"tenant"} })
	thread := graph.Thread("runtime-" + randomHex())

	res, err := run.Invoke(t.Context(), graph.Input(), thread, graph.WithRuntime(map[string]any{"tenant": "acme", "secret": "s3cret"}))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	res, err = run.Invoke(t.Context(), nil, thread, graph.Resume(true), graph.WithRuntime(map[string]any{"tenant": "globex"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"tenant=acme secret=<nil>", "tenant=globex secret=<nil>"}, callLog.Get(res.State))
}
