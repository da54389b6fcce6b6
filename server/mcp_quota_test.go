package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/server"
)

// openMCPSession sends an initialize request without a session, as a
// client opening one does, and returns the response's status, error
// detail (on a refusal) and session id.
func (e *env) openMCPSession(token string) (int, server.ErrorDetail, string) {
	e.t.Helper()
	resp := e.request("POST", "/mcp", token,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		"Accept", "application/json, text/event-stream", "Content-Type", "application/json")
	defer resp.Body.Close()
	var body struct {
		Error server.ErrorDetail `json:"error"`
	}
	if resp.StatusCode != http.StatusOK {
		require.NoError(e.t, json.NewDecoder(resp.Body).Decode(&body))
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id != "" {
		e.t.Cleanup(func() { // the client's end of the session (t.Context() has ended)
			req, err := http.NewRequestWithContext(context.Background(), "DELETE", e.hs.URL+"/mcp", nil)
			require.NoError(e.t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			resp, err := e.client.Do(req)
			require.NoError(e.t, err)
			resp.Body.Close()
		})
	}
	return resp.StatusCode, body.Error, id
}

func TestAnOwnerOpensAtMostMaxMCPSessions(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, MaxMCPSessions: 2})
	first := e.mcpClient(alice, "2025-11-25", nil)
	e.mcpClient(alice, "2025-11-25", nil)

	status, detail, id := e.openMCPSession(alice)
	assert.Equal(t, http.StatusTooManyRequests, status)
	assert.Empty(t, id, "no session was opened")
	assert.Equal(t, server.ErrorDetail{Code: "quota_exceeded", Quota: "mcp_sessions", Limit: 2,
		Message: `owner "alice" has 2 MCP sessions open, the most allowed: close one (DELETE /mcp with its Mcp-Session-Id header) or let one stay idle for 30m0s, then try again`}, detail)

	status, _, id = e.openMCPSession(bob)
	assert.Equal(t, http.StatusOK, status, "another owner's sessions are counted apart")
	assert.NotEmpty(t, id)

	// The sessions open work as before.
	tools, err := first.ListTools(t.Context(), nil)
	require.NoError(t, err)
	assert.NotEmpty(t, tools.Tools)

	// A session closed makes room for another.
	require.NoError(t, first.Close())
	status, _, id = e.openMCPSession(alice)
	assert.Equal(t, http.StatusOK, status)
	assert.NotEmpty(t, id)
}

func TestSessionlessMCPClientsOpenNoSession(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, MaxMCPSessions: 1})
	e.mcpClient(alice, "2025-11-25", nil)
	status, detail, _ := e.openMCPSession(alice)
	require.Equal(t, http.StatusTooManyRequests, status, "alice is at her quota of sessions")
	assert.Equal(t, "mcp_sessions", detail.Quota)

	// Clients on 2026-07-28 open none: they are not counted, nor refused.
	for range 3 {
		cs := e.mcpClient(alice, "2026-07-28", nil)
		require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		require.NoError(t, err)
		assert.Equal(t, "HI", callText(t, res))
	}
}
