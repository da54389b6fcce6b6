// Package mcp_test runs examples/mcp offline, on its demo script: the
// workflow starts the MCP server in specserver/, the builder gives the new
// agent the server's tools, and the agent's calls reach the server and
// bring its answers back.
package mcp_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/tools/mcp"
	"github.com/coorflow/coorflow/workflows"
)

func TestTheMCPExampleRunsOfflineWithTheServersTools(t *testing.T) {
	f, err := workflows.Load("workflow.yaml")
	require.NoError(t, err)
	noKeys := func(string) string { return "" }
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: noKeys})
	require.NoError(t, err)
	require.True(t, ms.Demo, "no provider: the demo script")
	hub := &mcp.Hub{}
	defer hub.Close()
	// The server inherits go's own variables from this process (GOFLAGS,
	// GOCACHE...), as the file allows.
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, MCP: hub, Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)

	var calls []string
	results := map[string]tools.ResultEvent{}
	var created []agentevent.Created
	var final graph.State
	for ev, err := range r.Stream(t.Context(), graph.Input(nodes.Input.Set("How does an MCP server report progress?")), graph.Thread("t1")) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case agentevent.Created:
			created = append(created, d)
		case tools.CallEvent:
			calls = append(calls, d.Name)
		case tools.ResultEvent:
			results[d.ID] = d
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	require.Len(t, created, 1)
	assert.Equal(t, []string{"spec_search", "spec_read"}, created[0].Tools, "the builder gave the agent the MCP tools")
	assert.Equal(t, []string{"spec_search", "spec_read", "spec_read"}, calls)
	for _, res := range results {
		assert.Equal(t, "ok", res.Status, res.Name)
	}

	demo, err := ms.Models.Model("basic")
	require.NoError(t, err)
	script := demo.(*workflows.DemoModel).Thread("t1")
	turns := script.CallsFor("spec_reader")
	require.Len(t, turns, 3)
	// read_context reads back what the agent's window offloads: large MCP
	// results are offloaded like any tool's.
	assert.ElementsMatch(t, []string{"spec_search", "spec_read", "read_context"}, turns[0].ToolNames())
	seen := toolResults(turns[2].Messages)
	require.Len(t, seen, 3)
	assert.Equal(t, "Sections that match \"progress elicitation\":\nprogress: Progress\nelicitation: Elicitation", seen[0])
	assert.True(t, strings.HasPrefix(seen[1], "# Progress\nA client that wants progress on a long request puts a progressToken"), seen[1])
	assert.True(t, strings.HasPrefix(seen[2], "# Elicitation\nDuring a request a server may ask the user"), seen[2])
	assert.Empty(t, script.Remaining(), "every scripted answer was used")

	pl := nodes.PlanKey.Get(final)
	require.Len(t, pl.Steps, 1)
	assert.Equal(t, plan.StepDone, pl.Steps[0].Result.Status)
	assert.True(t, strings.HasPrefix(nodes.Answer.Get(final), "# Progress and questions in the Model Context Protocol"))
}

// toolResults are the tool results a model call was shown, in order.
func toolResults(msgs []llms.MessageContent) []string {
	var out []string
	for _, m := range msgs {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				out = append(out, r.Content)
			}
		}
	}
	return out
}
