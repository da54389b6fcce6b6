package workflows_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/mcptest"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/tools/mcp"
	"github.com/coorflow/coorflow/workflows"
)

// parseMCP parses a workflow file whose tools section is tools, and whose
// nodes and edges follow.
func parseMCP(t *testing.T, tools, rest string) (*workflows.File, error) {
	t.Helper()
	doc := "apiVersion: coorflow/v1\nname: wf\nstate: {out: {type: string}}\ntools:\n" + tools + rest
	return workflows.Parse(filepath.Join(t.TempDir(), "wf.yaml"), []byte(doc))
}

// everythingTools is a tools section with the reference server over stdio.
func everythingTools(t *testing.T, extra string) string {
	node, args := mcptest.Everything(t)
	return fmt.Sprintf("  mcp:\n    everything:\n      command: %q\n      args: [%q, %q]\n%s", node, args[0], args[1], extra)
}

func hub(t *testing.T) *mcp.Hub {
	h := &mcp.Hub{}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

const reactOnEverything = `nodes:
  agent:
    type: react
    prompt: "Add 2 and 40."
    output: out
    tools: [everything]
edges:
  - {from: start, to: agent}
  - {from: agent, to: end}
`

func TestMCPSectionProblemsAreReportedWhereTheyAre(t *testing.T) {
	cases := []struct {
		name, tools, rest string
		want              []string
	}{
		{"command and url", "  mcp:\n    both: {command: x, url: \"http://h/mcp\"}\n", reactOnEverything, []string{
			`:6:5: tools.mcp.both: MCP server "both": give a command or a url, not both`,
			`:12:13: nodes.agent.tools[0]: unknown tool "everything" (the file declares: both)`,
		}},
		{"neither", "  mcp:\n    none: {args: [a]}\n", "nodes: {a: {type: tool, tool: none_x, output: out}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n", []string{
			`:6:5: tools.mcp.none: MCP server "none": give a command (a stdio server) or a url (a streamable HTTP server)`,
		}},
		{"a secret in env", "  mcp:\n    s: {command: x, env: {TOKEN: \"${TOKEN}\"}}\n", "nodes: {a: {type: tool, tool: s_x, output: out}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n", []string{
			`:6:34: tools.mcp.s.env.TOKEN: ${...} is allowed only in endpoints and secrets (models.<tier>.base_url, tools.web_search.base_url, tools.web_search.api_key); write the value itself here`,
		}},
		{"a tool node names a whole server", "  mcp:\n    s: {command: x}\n", "nodes: {a: {type: tool, tool: s, output: out}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n", []string{
			`:7:31: nodes.a.tool: a tool node calls one tool: name one of MCP server s's tools as s_<tool> (coorflow tools list shows them)`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseMCP(t, c.tools, c.rest)
			var fe *workflows.FileError
			require.True(t, errors.As(err, &fe), "%v", err)
			var got []string
			for _, p := range fe.Problems {
				got = append(got, strings.TrimPrefix(p.String(), p.File))
			}
			assert.Equal(t, c.want, got)
		})
	}
}

func TestMCPToolsReachReactAndToolNodes(t *testing.T) {
	rest := `nodes:
  agent:
    type: react
    prompt: "Add 2 and 40."
    output: out
    tools: [everything]
  shout:
    type: tool
    tool: everything_echo
    args: {message: state.out}
    output: out
edges:
  - {from: start, to: agent}
  - {from: agent, to: shout}
  - {from: shout, to: end}
`
	f, err := parseMCP(t, everythingTools(t, ""), rest)
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"agent": {
		{ToolCalls: []scripted.ToolCall{{Name: "everything_get-sum", Arguments: `{"a":2,"b":40}`}}},
		{Text: "42"},
	}}})
	r, err := f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model), MCP: hub(t)})
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input())
	require.NoError(t, err)
	out, _ := res.State.Value("out")
	assert.Equal(t, "Echo: 42", out)

	calls := model.CallsFor("agent")
	require.Len(t, calls, 2)
	offered := calls[0].ToolNames()
	assert.Contains(t, offered, "everything_get-sum", "a server's name gives the node all its tools")
	assert.Contains(t, offered, "everything_echo")
	var result string
	for _, m := range calls[1].Messages {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				result = r.Content
			}
		}
	}
	assert.Equal(t, "The sum of 2 and 40 is 42.", result, "the tool's result reached the model")
}

func TestCompilingMCPServersNeedsAHub(t *testing.T) {
	f, err := parseMCP(t, "  mcp:\n    s: {command: /nonexistent}\n", "nodes: {a: {type: tool, tool: s_x, output: out}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n")
	require.NoError(t, err)
	_, err = f.Compile(t.Context(), workflows.Env{})
	assert.EqualError(t, err, "workflows: "+f.Path()+": tools.mcp: the program that compiles the file must give it Env.MCP (an *mcp.Hub it closes when done), which owns the servers' sessions")

	// Offline, nothing is started: the tool gets a stand-in.
	r, err := f.Compile(t.Context(), workflows.Env{Offline: true})
	require.NoError(t, err)
	assert.Contains(t, r.Nodes(), "a")
}

func TestANodeNamingAToolTheServerDoesNotOfferFailsToCompile(t *testing.T) {
	f, err := parseMCP(t, everythingTools(t, ""), "nodes: {a: {type: tool, tool: everything_ecco, output: out}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n")
	require.NoError(t, err)
	_, err = f.Compile(t.Context(), workflows.Env{MCP: hub(t)})
	assert.EqualError(t, err, `workflows: `+f.Path()+`: tool "everything_ecco": MCP server everything offers no such tool (did you mean "everything_echo"?)`)
}

func TestAnUnreachableServer(t *testing.T) {
	rest := "nodes: {a: {type: react, prompt: hi, output: out, tools: [gone]}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n"
	f, err := parseMCP(t, "  mcp:\n    gone: {command: /nonexistent/server}\n", rest)
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"a": {{Text: "done"}}}})
	_, err = f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model), MCP: hub(t)})
	var ce *mcp.ConnectError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), `tools.mcp.gone: mcp: server "gone" (stdio): cannot connect: start /nonexistent/server`)

	f, err = parseMCP(t, "  mcp:\n    gone: {command: /nonexistent/server, optional: true}\n", rest)
	require.NoError(t, err)
	var warnings []string
	_, err = f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model), MCP: hub(t), Warn: func(m string) { warnings = append(warnings, m) }})
	require.NoError(t, err, "an optional server is left out")
	require.Len(t, warnings, 1)
	assert.True(t, strings.HasPrefix(warnings[0], `MCP server gone is left out: mcp: server "gone" (stdio): cannot connect`), warnings[0])
}

func TestBearerEnvMustBeSet(t *testing.T) {
	rest := "nodes: {a: {type: react, prompt: hi, output: out, tools: [docs]}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n"
	f, err := parseMCP(t, "  mcp:\n    docs: {url: \"http://127.0.0.1:1/mcp\", bearer_env: DOCS_API_KEY}\n", rest)
	require.NoError(t, err)
	_, err = f.Compile(t.Context(), workflows.Env{MCP: hub(t), Getenv: func(string) string { return "" }})
	assert.EqualError(t, err, "workflows: "+f.Path()+": tools.mcp.docs.bearer_env: environment variable DOCS_API_KEY is not set")
}

func TestFileToolsListsMCPToolsWithTheirSchemas(t *testing.T) {
	f, err := parseMCP(t, "  python: {}\n"+everythingTools(t, "      tools: [echo, get-sum]\n"), reactOnEverything)
	require.NoError(t, err)
	ts, err := f.Tools(t.Context(), workflows.Env{MCP: hub(t)}, "everything")
	require.NoError(t, err)
	var names []string
	for _, tl := range ts {
		names = append(names, tl.Name())
	}
	assert.Equal(t, []string{"everything_echo", "everything_get-sum", "python"}, names, "only the tools the file keeps")
	assert.Contains(t, string(ts[1].Schema()), `"required":["a","b"]`)
}

func TestExportKeepsTheMCPServersOfTheToolsTheAgentsUse(t *testing.T) {
	src, err := workflows.Load("../examples/mcp/workflow.yaml")
	require.NoError(t, err)
	p := production()
	p.Plan.Steps = p.Plan.Steps[:1]
	p.Agents = p.Agents[:1]
	p.Agents[0].Tools = []string{"spec_search", "spec_read"}
	path := filepath.Join(t.TempDir(), "exported.yaml")
	out, err := src.Export(path, p)
	require.NoError(t, err)
	assert.Contains(t, string(out), "tools:\n  mcp:\n    spec:", "the server of the agent's MCP tools")
	require.NoError(t, os.WriteFile(path, out, 0o600))
	_, err = workflows.Load(path)
	require.NoError(t, err, "the exported file names tools its mcp section declares")
}
