package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/tools/mcp"
)

// loginServer is an MCP server (the official Go SDK's) whose tool login
// asks the user to sign in on a page: a URL-mode elicitation. It records
// the elicitation modes the client declared.
func loginServer(t *testing.T, declared chan<- *sdk.ElicitationCapabilities) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "login", Version: "v1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "login", Description: "Signs in."}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		declared <- req.Session.InitializeParams().Capabilities.Elicitation
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "Sign in to the docs", URL: "https://docs.example/login", ElicitationID: "e-1"})
		if err != nil {
			return nil, nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "signed in: " + res.Action}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestURLModeElicitationIsOfferedAndBecomesAnInterrupt(t *testing.T) {
	declared := make(chan *sdk.ElicitationCapabilities, 2)
	_, reg := toolset(t, mcp.Server{Name: "docs", URL: loginServer(t, declared)})
	r := toolGraph(t, reg, "docs_login", `{}`, graph.WithSaver(memory.New()))
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t1"))
	require.NoError(t, err)
	caps := <-declared
	require.NotNil(t, caps, "the client declares elicitation")
	assert.NotNil(t, caps.Form, "form mode")
	assert.NotNil(t, caps.URL, "URL mode, as docs/mcp.md says")
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	q, ok := res.Interrupts[0].Payload.(mcp.Elicitation)
	require.True(t, ok, "payload %T", res.Interrupts[0].Payload)
	assert.Equal(t, "url", q.Mode)
	assert.Equal(t, "https://docs.example/login", q.URL)
	assert.Equal(t, "Sign in to the docs", q.Message)
}
