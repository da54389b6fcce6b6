package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/mcptest"
	"github.com/coorflow/coorflow/server"
)

func TestMCPRefusesARequestFromAnotherOrigin(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`
	headers := []string{"Accept", "application/json, text/event-stream", "Content-Type", "application/json"}
	host := e.hs.Listener.Addr().String()
	for _, origin := range []string{"http://evil.example", "https://" + host + ".evil.example", "null", "file://"} {
		resp := e.request("POST", "/mcp", alice, init, append([]string{"Origin", origin}, headers...)...)
		var got server.ErrorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, origin)
		assert.Equal(t, server.ErrorDetail{Code: server.CodeForeignOrigin,
			Message: `origin "` + origin + `" may not call /mcp of ` + host + `: only pages of the same origin may (MCP refuses other origins against DNS rebinding)`}, got.Error)
	}
	resp := e.request("GET", "/mcp", alice, nil, "Origin", "http://evil.example", "Accept", "text/event-stream")
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "the stream of server messages too")

	// Protocol 2026-07-28 (no session) is checked the same way.
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"page","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	headers2026 := append([]string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover"}, headers...)
	resp = e.request("POST", "/mcp", alice, discover, append([]string{"Origin", "http://evil.example"}, headers2026...)...)
	var got server.ErrorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, server.CodeForeignOrigin, got.Error.Code)
	resp = e.request("POST", "/mcp", alice, discover, append([]string{"Origin", e.hs.URL}, headers2026...)...)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a page of the server's own origin: %s", body)
	assert.Contains(t, string(body), `"supportedVersions":["2026-07-28"`, "discovered without a session")
	assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))

	resp = e.request("POST", "/mcp", alice, init, append([]string{"Origin", e.hs.URL}, headers...)...)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a page of the server's own origin")
	end := e.request("DELETE", "/mcp", alice, nil, "Origin", e.hs.URL, "Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"))
	end.Body.Close()
	assert.Equal(t, http.StatusNoContent, end.StatusCode)
}

func TestMCPTypeScriptClientFromAnotherOriginIsRefused(t *testing.T) {
	mcptest.NodeModules(t)
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools})
	rep := mcptest.RunClient(t, mcptest.ClientPlan{URL: e.hs.URL + "/mcp", Token: alice, Headers: map[string]string{"Origin": "http://evil.example"}})
	require.NotEmpty(t, rep.Error, "the connection is refused")
	assert.Contains(t, rep.Error, "foreign_origin")
	assert.Empty(t, rep.Tools)

	rep = mcptest.RunClient(t, mcptest.ClientPlan{URL: e.hs.URL + "/mcp", Token: alice, Headers: map[string]string{"Origin": e.hs.URL}})
	require.Empty(t, rep.Error)
	require.Len(t, rep.Tools, 1)
	assert.Equal(t, "echo", rep.Tools[0].Name)
}

// mcpPost POSTs a JSON-RPC message to /mcp in session (none when empty)
// and returns the response, whose body the caller reads and closes.
func (e *env) mcpPost(session, msg string) *http.Response {
	e.t.Helper()
	h := []string{"Accept", "application/json, text/event-stream", "Content-Type", "application/json", "Mcp-Protocol-Version", "2025-11-25"}
	if session != "" {
		h = append(h, "Mcp-Session-Id", session)
	}
	return e.request("POST", "/mcp", alice, msg, h...)
}

func TestMCPCancelledCallGetsNoResponse(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), MCPTools: map[string]server.MCPTool{"block": {Input: "log", Output: "log"}}})
	resp := e.mcpPost("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	defer func() {
		end := e.request("DELETE", "/mcp", alice, nil, "Mcp-Session-Id", session)
		end.Body.Close()
	}()
	resp = e.mcpPost(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	stream := make(chan string, 1)
	go func() {
		resp := e.mcpPost(session, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block","arguments":{"log":["go"],"thread_id":"c-1"}}}`)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		stream <- string(body)
	}()
	select {
	case <-b.entered:
	case body := <-stream:
		t.Fatalf("the call ended before its run started: %s", body)
	}
	resp = e.mcpPost(session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	body := <-stream // the call's stream ends once the server is done with the call
	assert.NotContains(t, body, `"id":7`, "no response to the cancelled call")

	var runs server.RunList
	e.call("GET", "/v1/threads/c-1/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs.Runs, 1)
	end := e.stream("GET", "/v1/threads/c-1/runs/"+runs.Runs[0].ID+"/stream", alice, nil)
	assert.Equal(t, server.StatusCancelled, end[len(end)-1].run(t).Status, "the run was cancelled")

	// A call that is not cancelled is answered in the same session.
	resp = e.mcpPost(session, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)
	list, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(list), `"id":8`)
}
