package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/mcptest"
	"github.com/coorflow/coorflow/tools"
)

func stdioToolset(t *testing.T) (*Toolset, *tools.Registry) {
	t.Helper()
	node, args := mcptest.Everything(t)
	ts, err := NewToolset(Config{Servers: []Server{{Name: "everything", Command: node, Args: args}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.Close() })
	reg := &tools.Registry{}
	require.NoError(t, ts.Register(t.Context(), reg))
	return ts, reg
}

// kill kills the server of the toolset's live session and waits until it
// has exited; it returns the process id it had.
func kill(t *testing.T, ts *Toolset) int {
	t.Helper()
	s := ts.conns[0].current()
	require.NotNil(t, s, "no live session")
	pid := s.link.cmd.Process.Pid
	signalProcessGroup(s.link.cmd, true)
	<-s.link.exited
	return pid
}

func livePID(ts *Toolset) int {
	if s := ts.conns[0].current(); s != nil {
		return s.link.cmd.Process.Pid
	}
	return 0
}

func TestStdioServerKilledMidRunIsRestarted(t *testing.T) {
	ts, reg := stdioToolset(t)
	out := graph.NewKey("out", graph.Append[string]())
	g := graph.New("g", out)
	call := func(name, args string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Command, error) {
			res := reg.Run(ctx, name, json.RawMessage(args), tools.RunOptions{})
			return graph.Update(graph.AppendTo(out, res.Status.String()+": "+res.Text())), nil
		}
	}
	var killed, after int
	g.AddNode("before", call("everything_echo", `{"message":"one"}`))
	g.AddNode("kill", func(ctx context.Context, s graph.State) (graph.Command, error) {
		killed = kill(t, ts)
		return graph.Command{}, nil
	})
	g.AddNode("after", func(ctx context.Context, s graph.State) (graph.Command, error) {
		cmd, err := call("everything_get-sum", `{"a":1,"b":2}`)(ctx, s)
		after = livePID(ts)
		return cmd, err
	})
	g.AddEdge(graph.Start, "before")
	g.AddEdge("before", "kill")
	g.AddEdge("kill", "after")
	g.AddEdge("after", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input())
	require.NoError(t, err)
	assert.Equal(t, []string{"ok: Echo: one", "ok: The sum of 1 and 2 is 3."}, out.Get(res.State))
	assert.NotZero(t, after)
	assert.NotEqual(t, killed, after, "a new server was started")
}

func TestStdioServerKilledDuringACall(t *testing.T) {
	ts, reg := stdioToolset(t)
	out := graph.NewKey[string]("out")
	g := graph.New("g", out)
	g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res := reg.Run(ctx, "everything_trigger-long-running-operation", json.RawMessage(`{"duration":600,"steps":6000}`), tools.RunOptions{})
		return graph.Update(out.Set(res.Status.String() + ": " + res.Text())), nil
	})
	g.AddEdge(graph.Start, "call")
	g.AddEdge("call", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	var final graph.State
	killed := false
	for ev, err := range r.Stream(t.Context(), graph.Input()) {
		require.NoError(t, err)
		if _, ok := ev.Data.(Progress); ok && !killed {
			kill(t, ts)
			killed = true
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	require.True(t, killed)
	text := out.Get(final)
	assert.Contains(t, text, `failed: Error: tool "everything_trigger-long-running-operation" failed: mcp: server "everything": the connection was lost during the call of "trigger-long-running-operation", which may or may not have run; the next call reconnects`)
	assert.Contains(t, text, "the server exited (signal: killed)")

	res := reg.Run(t.Context(), "everything_echo", json.RawMessage(`{"message":"again"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, "%v", res.Err)
	assert.Equal(t, "Echo: again", res.Output)
}
