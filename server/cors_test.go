package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/server"
)

const chatOrigin = "http://localhost:5173"

// preflight is a browser's preflight of a POST with the SDK's headers
// from origin.
func (e *env) preflight(path, origin string) *http.Response {
	e.t.Helper()
	resp := e.request(http.MethodOptions, path, "", nil, "Origin", origin,
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type,x-api-key")
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(e.t, resp.Body.Close())
	return resp
}

func TestCORSIsClosedByDefault(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	pre := e.preflight("/threads", chatOrigin)
	assert.Empty(t, pre.Header.Get("Access-Control-Allow-Origin"), "no page of another origin is let in")
	assert.NotEqual(t, http.StatusNoContent, pre.StatusCode)

	resp := e.request("POST", "/assistants/search", alice, map[string]any{}, "Origin", chatOrigin)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a request is answered; the browser keeps it from the page")
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestCORSLetsTheListedOriginsCallTheAPI(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), CORSOrigins: []string{chatOrigin, "https://chat.example.com:8443"}})

	pre := e.preflight("/threads/t1/runs/stream", chatOrigin)
	assert.Equal(t, http.StatusNoContent, pre.StatusCode, "the preflight is answered before auth: it carries no token")
	assert.Equal(t, chatOrigin, pre.Header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "GET, POST, PUT, PATCH, DELETE", pre.Header.Get("Access-Control-Allow-Methods"))
	assert.Equal(t, "content-type,x-api-key", pre.Header.Get("Access-Control-Allow-Headers"))
	assert.Equal(t, "600", pre.Header.Get("Access-Control-Max-Age"))
	assert.Empty(t, pre.Header.Get("Access-Control-Allow-Credentials"), "tokens travel in headers, never cookies")
	assert.Equal(t, "https://chat.example.com:8443", e.preflight("/threads", "https://chat.example.com:8443").Header.Get("Access-Control-Allow-Origin"))

	resp := e.request("POST", "/threads", alice, map[string]any{}, "Origin", chatOrigin)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, chatOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "Content-Location, Location, X-Coorflow-Batch-Refused, X-Pagination-Next, X-Request-Id", resp.Header.Get("Access-Control-Expose-Headers"),
		"the SDK reads Content-Location (the run a stream started), Location and X-Pagination-Next (a search's next page); a batch says what it refused")
	assert.Contains(t, resp.Header.Values("Vary"), "Origin")

	resp = e.request("POST", "/threads", "", map[string]any{}, "Origin", chatOrigin)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a listed origin still needs a token")
	assert.Equal(t, chatOrigin, resp.Header.Get("Access-Control-Allow-Origin"), "so the page can read why")

	for _, other := range []string{"http://localhost:5174", "https://localhost:5173", "http://evil.example", "null"} {
		pre := e.preflight("/threads", other)
		assert.Empty(t, pre.Header.Get("Access-Control-Allow-Origin"), other)
		assert.NotEqual(t, http.StatusNoContent, pre.StatusCode, other)
	}

	// /mcp keeps to its own origin, listed or not.
	assert.Empty(t, e.preflight("/mcp", chatOrigin).Header.Get("Access-Control-Allow-Origin"))
	resp = e.request("POST", "/mcp", alice, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}, "Origin", chatOrigin,
		"Accept", "application/json, text/event-stream")
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestCORSOriginsThatAreNotOriginsFailNew(t *testing.T) {
	for _, bad := range []string{"*", "localhost:5173", "ftp://x.example", "http://x.example/", "http://x.example/chat",
		"http://user@x.example", "http://x.example?a=1", "http://x.example#f", "http://"} {
		_, err := server.New(server.Config{Saver: memory.New(), Tokens: tokens, Logger: slog.New(slog.DiscardHandler),
			Workflows: workflows(echoGraph(t)), CORSOrigins: []string{bad}})
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "Config.CORSOrigins", bad)
	}
}
