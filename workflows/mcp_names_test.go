package workflows_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/mcptest"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/workflows"
)

// twoServers is a tools section with the reference server twice, as ev
// and ev_b: one server's name starts with the other's and _.
func twoServers(t *testing.T) string {
	node, args := mcptest.Everything(t)
	return fmt.Sprintf("  mcp:\n    ev:\n      command: %q\n      args: [%q, %q]\n      tools: [echo]\n    ev_b:\n      command: %q\n      args: [%q, %q]\n      tools: [echo]\n",
		node, args[0], args[1], node, args[0], args[1])
}

func TestMCPServerNamesResolveExactlyWhenOneStartsWithAnother(t *testing.T) {
	rest := "nodes: {agent: {type: react, prompt: hi, output: out, tools: [ev, ev_b]}}\nedges: [{from: start, to: agent}, {from: agent, to: end}]\n"
	f, err := parseMCP(t, twoServers(t), rest)
	require.NoError(t, err)
	h := hub(t)
	ts, err := f.Tools(t.Context(), workflows.Env{MCP: h}, "ev", "ev_b")
	require.NoError(t, err, "ev_b is the server ev_b, not a tool of ev")
	var names []string
	for _, tl := range ts {
		names = append(names, tl.Name())
	}
	assert.Equal(t, []string{"ev_b_echo", "ev_echo"}, names)

	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"agent": {{Text: "done"}}}})
	r, err := f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model), MCP: h})
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), graph.Input())
	require.NoError(t, err)
	calls := model.CallsFor("agent")
	require.Len(t, calls, 1)
	// read_context is the node's context window's own tool (on by
	// default); the rest are the servers'.
	offered := slices.DeleteFunc(calls[0].ToolNames(), func(n string) bool { return n == "read_context" })
	assert.ElementsMatch(t, []string{"ev_echo", "ev_b_echo"}, offered, "each server gives the node its own tools")
}

func TestAToolNameTwoMCPServersCouldClaimIsAProblem(t *testing.T) {
	for _, rest := range []string{
		"nodes: {a: {type: tool, tool: ev_b_echo, output: out}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n",
		"nodes: {a: {type: react, prompt: hi, output: out, tools: [ev_b_echo]}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n",
	} {
		_, err := parseMCP(t, "  mcp:\n    ev: {command: x}\n    ev_b: {command: x}\n", rest)
		var fe *workflows.FileError
		require.True(t, errors.As(err, &fe), "%v", err)
		require.Len(t, fe.Problems, 1)
		got := strings.TrimPrefix(fe.Problems[0].String(), fe.Problems[0].File)
		assert.Contains(t, got, `tool "ev_b_echo" is ambiguous: it could be MCP server ev's tool "b_echo" or MCP server ev_b's tool "echo"; rename a server in tools.mcp so that no server's name starts with another's followed by _`)
	}
}
