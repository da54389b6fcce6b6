package workflows_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/window"
	"github.com/coorflow/coorflow/workflows"
)

// bigMCPServer is an MCP server (the official Go SDK's, over streamable
// HTTP) whose tool dump returns about 1 MiB of text, just under the cap of
// an MCP result, with a marker line in its middle.
func bigMCPServer(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < 1<<20-4<<10; i++ {
		if i == 5000 {
			b.WriteString("MARKER: the answer is 42\n")
			continue
		}
		b.WriteString("line of a very large tool result, nothing to see here ............................\n")
	}
	big := b.String()
	srv := sdk.NewServer(&sdk.Implementation{Name: "db", Version: "v1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "dump", Description: "Dumps the database."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: big}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestAReactNodeDoesNotSendAHugeMCPResultWhole (issue 28, finding 10): the
// ~1 MiB result of an MCP server's tool, called by a react node, reaches
// the model (an OpenAI-wire server) as a preview with the way to page
// through it (read_context), not whole; before, it went at the 1 MiB cap.
func TestAReactNodeDoesNotSendAHugeMCPResultWhole(t *testing.T) {
	model := openaitest.NewServer(openaitest.ToolCalls(openaitest.ToolCall{Name: "db_dump"}), openaitest.Text("done"))
	t.Cleanup(model.Close)
	doc := fmt.Sprintf(`apiVersion: coorflow/v1
name: dumper
input: question
output: answer
models:
  basic: {provider: openai, model: gpt-4o, base_url: %q}
tools:
  mcp:
    db: {url: %q}
state:
  question: {type: string}
  answer: {type: string}
nodes:
  agent:
    type: react
    prompt: "{{ state.question }}"
    output: answer
    tools: [db]
edges:
  - {from: start, to: agent}
  - {from: agent, to: end}
`, model.BaseURL(), bigMCPServer(t))
	f, err := workflows.Parse("dumper.yaml", []byte(doc))
	require.NoError(t, err)
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: keys()})
	require.NoError(t, err)
	require.False(t, ms.Demo, ms.Reason)
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, MCP: hub(t)})
	require.NoError(t, err)
	in, err := f.Input(r, "question", "dump it")
	require.NoError(t, err)
	out, err := r.Invoke(t.Context(), in, graph.Thread("t"))
	require.NoError(t, err)
	v, _ := out.State.Value("answer")
	assert.Equal(t, "done", v)

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.ElementsMatch(t, []string{"db_dump", window.ReadContextName}, reqs[0].Chat.ToolNames(), "the model can page through what was offloaded")
	second := reqs[1]
	assert.Less(t, len(second.Body), 16<<10, "the model is sent a reference and a preview, not 1 MiB")
	msgs := second.Chat.Messages
	require.NotEmpty(t, msgs)
	result := msgs[len(msgs)-1]
	require.Equal(t, "tool", result.Role)
	text := result.Text() // asserted without printing it: it may be 1 MiB
	assert.True(t, strings.Contains(text, "offloaded"), "the model is told the result was offloaded")
	assert.True(t, strings.Contains(text, window.ReadContextName), "and how to page through it")
	assert.True(t, strings.Contains(text, "line of a very large tool result"), "a preview of the result")
	assert.False(t, strings.Contains(string(second.Body), "MARKER"), "the middle of the result stays out of the prompt")
}
