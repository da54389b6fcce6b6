package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/workflows"
)

// TestTheOptionalToolsLeftOutAreToldAndCanBeLeftOut: Env.LeftOut is told
// each optional tool and MCP server a compile leaves out (so that a run
// records them), and Env.LeaveOut leaves them out even when they are
// available (so that a replay compiles as the run did), saying so.
func TestTheOptionalToolsLeftOutAreToldAndCanBeLeftOut(t *testing.T) {
	tools := "  web_search: {provider: tavily, api_key: \"${TAVILY_API_KEY}\", optional: true}\n  mcp:\n    gone: {command: /nonexistent/server, optional: true}\n"
	rest := "nodes: {a: {type: react, prompt: hi, output: out, tools: [gone]}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n"
	f, err := parseMCP(t, tools, rest)
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"a": {{Text: "done"}}}})
	compile := func(key string, leave ...string) (left, warnings []string) {
		_, err := f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model), MCP: hub(t), LeaveOut: leave,
			Getenv:  func(name string) string { return map[string]string{"TAVILY_API_KEY": key}[name] },
			Warn:    func(m string) { warnings = append(warnings, m) },
			LeftOut: func(name string) { left = append(left, name) }})
		require.NoError(t, err)
		return left, warnings
	}

	left, _ := compile("")
	assert.ElementsMatch(t, []string{"web_search", "mcp.gone"}, left, "no key, no server: both are left out, and told")

	left, _ = compile("k")
	assert.Equal(t, []string{"mcp.gone"}, left, "with its key web_search is in")

	left, warnings := compile("k", "web_search", "mcp.gone")
	assert.ElementsMatch(t, []string{"web_search", "mcp.gone"}, left, "left out as asked, though the key is set")
	assert.Contains(t, warnings, "tool web_search is left out: the run replayed was without it")
	assert.Contains(t, warnings, "MCP server gone is left out: the run replayed was without it", "the server is not even tried")
}
