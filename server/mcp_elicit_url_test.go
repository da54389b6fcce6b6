package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/tools"
	mcptools "github.com/coorflow/coorflow/tools/mcp"
)

// loginServer is an MCP server (the official Go SDK's) whose tool login
// asks the user to sign in on a page, a URL-mode elicitation, and says
// what the answer was; answers has the action of each answer it got.
func loginServer(t *testing.T, answers chan<- string) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "login", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "login", Description: "Signs in."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Sign in to the docs", URL: "https://docs.example/login", ElicitationID: "e-1"})
		if err != nil {
			return nil, nil, err
		}
		answers <- res.Action
		if res.Action != "accept" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not signed in: " + res.Action}}, IsError: true}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "signed in: " + res.Action}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// callerGraph is a workflow whose node calls the tool docs_login of reg.
func callerGraph(t *testing.T, reg *tools.Registry) *graph.Runnable {
	t.Helper()
	out := graph.NewKey[string]("out")
	g := graph.New("caller", textKey, out)
	g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res := reg.Run(ctx, "docs_login", json.RawMessage(`{}`), tools.RunOptions{})
		var ie *graph.InterruptError
		if errors.As(res.Err, &ie) {
			return graph.Command{}, ie
		}
		if res.Status != tools.StatusOK {
			return graph.Command{}, errors.New(res.Text())
		}
		return graph.Update(out.Set(res.Text())), nil
	})
	g.AddEdge(graph.Start, "call")
	g.AddEdge("call", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// TestMCPPassesAURLModeElicitationOfANestedServerOn (issue 28, finding
// 9): an MCP server that a served workflow calls asks a URL-mode
// elicitation; /mcp passes it on to its own client (the Go SDK's, asked
// during the call or, on the newest protocol, returned with the result),
// which sees a URL elicitation and accepts; the nested tool gets accept
// and completes, and so does the call.
func TestMCPPassesAURLModeElicitationOfANestedServerOn(t *testing.T) {
	for _, version := range []string{"2025-11-25", ""} {
		name := version
		if name == "" {
			name = "newest"
		}
		t.Run(name, func(t *testing.T) {
			answers := make(chan string, 4)
			ts, err := mcptools.NewToolset(mcptools.Config{Servers: []mcptools.Server{{Name: "docs", URL: loginServer(t, answers)}}})
			require.NoError(t, err)
			t.Cleanup(func() { _ = ts.Close() })
			reg := &tools.Registry{}
			require.NoError(t, ts.Register(t.Context(), reg))
			e := newEnv(t, server.Config{Workflows: workflows(callerGraph(t, reg)), MCPTools: map[string]server.MCPTool{"caller": {Input: "text", Output: "out"}}})

			var asked []*mcp.ElicitParams
			cs := e.mcpClient(alice, version, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, r.Params)
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
			})
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "caller", Arguments: map[string]any{"text": "sign in"}})
			require.NoError(t, err)
			require.False(t, res.IsError, callText(t, res))
			assert.Equal(t, "done", structured(t, res)["status"])
			assert.Contains(t, callText(t, res), "signed in: accept")

			require.Len(t, asked, 1)
			assert.Equal(t, "url", asked[0].Mode, "the client is asked in URL mode")
			assert.Equal(t, "https://docs.example/login", asked[0].URL)
			assert.Equal(t, "Sign in to the docs (asked by MCP server docs)", asked[0].Message)
			assert.NotEmpty(t, asked[0].ElicitationID)
			// The first call of the nested tool ended when the run paused
			// (its question answered cancel, or its context ended first);
			// made again on resume, it got the client's accept, before the
			// call above completed.
			var got []string
			for len(answers) > 0 {
				got = append(got, <-answers)
			}
			require.NotEmpty(t, got)
			assert.Equal(t, "accept", got[len(got)-1], "the nested tool received accept")
		})
	}
}
