package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/mcptest"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/tools"
	mcptools "github.com/coorflow/coorflow/tools/mcp"
)

// The tests below speak protocol 2026-07-28 to /mcp over HTTP: no
// session, each POST a whole request whose _meta carries the protocol.

const sessionlessVersion = "2026-07-28"

// sessionlessCall is a tools/call of protocol 2026-07-28 with id.
func sessionlessCall(id int, tool string, args map[string]any) string {
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    sessionlessVersion,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}}
	raw, _ := json.Marshal(msg)
	return string(raw)
}

// sessionlessCancel is the notifications/cancelled of call id.
func sessionlessCancel(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"user"}}`, id)
}

// postSessionless POSTs msg to /mcp with token on protocol 2026-07-28,
// with the headers that mirror it, until ctx ends, and returns the whole
// response body (what was read of it when ctx ended).
func (e *env) postSessionless(ctx context.Context, token, msg string) (int, string, error) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", e.hs.URL+"/mcp", strings.NewReader(msg))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Protocol-Version", sessionlessVersion)
	req.Header.Set("Mcp-Method", m.Method)
	if m.Params.Name != "" {
		req.Header.Set("Mcp-Name", m.Params.Name)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

type posted struct {
	status int
	body   string
	err    error
}

// startSessionlessCall POSTs a call of the blocker's workflow on thread
// and returns what the POST got, once it ends; it waits until the run's
// slow node runs.
func (e *env) startSessionlessCall(ctx context.Context, b *blocker, token string, id int, thread string) <-chan posted {
	e.t.Helper()
	out := make(chan posted, 1)
	go func() {
		status, body, err := e.postSessionless(ctx, token, sessionlessCall(id, "block", map[string]any{"log": []string{"go"}, "thread_id": thread}))
		out <- posted{status, body, err}
	}()
	select {
	case <-b.entered:
	case p := <-out:
		e.t.Fatalf("the call ended before its run started: %d %s %v", p.status, p.body, p.err)
	}
	return out
}

// runStatus is the status of the one run of the owner's thread once it
// ended.
func (e *env) endedRun(token, thread string) server.Run {
	e.t.Helper()
	var runs server.RunList
	e.call("GET", "/v1/threads/"+thread+"/runs", token, nil, http.StatusOK, &runs)
	require.Len(e.t, runs.Runs, 1)
	end := e.stream("GET", "/v1/threads/"+thread+"/runs/"+runs.Runs[0].ID+"/stream", token, nil)
	return end[len(end)-1].run(e.t)
}

func blockTools() map[string]server.MCPTool {
	return map[string]server.MCPTool{"block": {Input: "log", Output: "log"}}
}

func TestMCPSessionlessClientNegotiates20260728OverHTTP(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools})
	cs := e.mcpClient(alice, sessionlessVersion, nil)
	assert.Equal(t, sessionlessVersion, cs.InitializeResult().ProtocolVersion, "served over HTTP, not downgraded")
	assert.Empty(t, cs.ID(), "no session")
	old := e.mcpClient(alice, "2025-11-25", nil)
	assert.Equal(t, "2025-11-25", old.InitializeResult().ProtocolVersion)
	assert.NotEmpty(t, old.ID(), "older protocols keep their sessions on the same endpoint")
	for _, c := range []*mcp.ClientSession{cs, old} {
		res, err := c.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		require.NoError(t, err)
		assert.Equal(t, "HI", callText(t, res))
	}
}

func TestMCPSessionlessCancelledCallGetsNoResponse(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), MCPTools: blockTools()})
	call := e.startSessionlessCall(t.Context(), b, alice, 7, "c-1")

	status, _, err := e.postSessionless(t.Context(), alice, sessionlessCancel(7))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status)
	got := <-call // the call's stream ends once it is cancelled
	require.NoError(t, got.err)
	assert.NotContains(t, got.body, `"id":7`, "no response to the cancelled call")
	assert.Equal(t, server.StatusCancelled, e.endedRun(alice, "c-1").Status, "the tool's context was cancelled, and the run with it")
	assert.Zero(t, b.counts()["c"], "the run stopped at the slow node")
}

func TestMCPSessionlessCallEndsWhenItsStreamIsClosed(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), MCPTools: blockTools()})
	ctx, closeStream := context.WithCancel(t.Context())
	call := e.startSessionlessCall(ctx, b, alice, 1, "c-2")
	closeStream() // the 2026-07-28 transport's cancellation: no notification
	require.ErrorIs(t, (<-call).err, context.Canceled)
	assert.Equal(t, server.StatusCancelled, e.endedRun(alice, "c-2").Status)
	assert.Zero(t, b.counts()["c"])
}

func TestMCPSessionlessCancelOfAnotherOwnersCallIsIgnored(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), MCPTools: blockTools()})
	call := e.startSessionlessCall(t.Context(), b, alice, 7, "c-3")

	// Bob names Alice's call: his notification is accepted and does nothing
	// (it is handled before its POST is answered).
	status, _, err := e.postSessionless(t.Context(), bob, sessionlessCancel(7))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status)
	var runs server.RunList
	e.call("GET", "/v1/threads/c-3/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs.Runs, 1)
	assert.Equal(t, server.StatusRunning, runs.Runs[0].Status)

	b.open()
	got := <-call
	require.NoError(t, got.err)
	assert.Contains(t, got.body, `"id":7`, "Alice's call is answered")
	assert.Contains(t, got.body, `"status":"done"`)
	assert.Equal(t, server.StatusDone, e.endedRun(alice, "c-3").Status)
}

func TestMCPSessionlessCancelNamingTwoCallsCancelsNeither(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), MCPTools: blockTools()})
	// Two clients of Alice's, each with its call 1: a cancel of 1 could
	// mean either.
	first := e.startSessionlessCall(t.Context(), b, alice, 1, "c-4")
	second := e.startSessionlessCall(t.Context(), b, alice, 1, "c-5")
	status, _, err := e.postSessionless(t.Context(), alice, sessionlessCancel(1))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status)
	b.open()
	for _, call := range []<-chan posted{first, second} {
		got := <-call
		require.NoError(t, got.err)
		assert.Contains(t, got.body, `"id":1`)
	}
	assert.Equal(t, server.StatusDone, e.endedRun(alice, "c-4").Status)
	assert.Equal(t, server.StatusDone, e.endedRun(alice, "c-5").Status)
}

// loginGraph is a workflow whose node asks what a nested MCP server asked
// it: to sign in on a page (a URL-mode elicitation). The answer's action
// is logged.
func loginGraph(t *testing.T) *graph.Runnable {
	t.Helper()
	g := graph.New("login", logKey)
	g.AddNode("login", func(ctx context.Context, s graph.State) (graph.Command, error) {
		a, err := graph.InterruptAs[map[string]any](ctx, mcptools.Elicitation{Kind: mcptools.KindElicitation,
			Server: "docs", Tool: "login", Message: "Sign in to the docs", Mode: "url", URL: "https://docs.example/login"})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, fmt.Sprintf("login: %v", a["action"]))), nil
	})
	g.AddEdge(graph.Start, "login")
	g.AddEdge("login", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

func TestMCPNestedURLQuestionIsAURLElicitation(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} { // returned with the result; asked during the call
		t.Run(version, func(t *testing.T) {
			e := newEnv(t, server.Config{Workflows: workflows(loginGraph(t)), MCPTools: map[string]server.MCPTool{"login": {Input: "log", Output: "log"}}})
			asked := make(chan *mcp.ElicitParams, 1)
			cs := e.mcpClient(alice, version, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- r.Params
					return &mcp.ElicitResult{Action: "accept"}, nil
				}})
			require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "login", Arguments: map[string]any{"log": []string{}}})
			require.NoError(t, err)
			require.False(t, res.IsError, callText(t, res))
			q := <-asked
			assert.Equal(t, "url", q.Mode)
			assert.Equal(t, "https://docs.example/login", q.URL)
			assert.Equal(t, "Sign in to the docs (asked by MCP server docs)", q.Message)
			assert.Equal(t, "done", structured(t, res)["status"])
			assert.Contains(t, callText(t, res), "login: accept")
		})
	}
}

// TestMCPTypeScriptClientKeepsItsSessionBesideSessionlessClients: the
// TypeScript SDK (1.32.2, whose newest protocol is 2025-11-25) opens a
// session on /mcp while a Go SDK client speaks 2026-07-28 there.
func TestMCPTypeScriptClientKeepsItsSessionBesideSessionlessClients(t *testing.T) {
	mcptest.NodeModules(t)
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools})
	cs := e.mcpClient(alice, sessionlessVersion, nil)
	require.Equal(t, sessionlessVersion, cs.InitializeResult().ProtocolVersion)

	rep := mcptest.RunClient(t, mcptest.ClientPlan{URL: e.hs.URL + "/mcp", Token: alice, Calls: []mcptest.Call{
		{Name: "echo", Arguments: map[string]any{"text": "ts"}},
	}})
	require.Empty(t, rep.Error)
	assert.Equal(t, "2025-11-25", rep.ProtocolVersion)
	require.Len(t, rep.Results, 1)
	assert.Equal(t, "TS", rep.Results[0].Content[0].Text)

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "go"}})
	require.NoError(t, err)
	assert.Equal(t, "GO", callText(t, res))
}

// versionRecorder is a proxy to /mcp that records the protocol versions
// of the requests it passes on, and tells cancels when /mcp answered them.
type versionRecorder struct {
	mu        sync.Mutex
	versions  map[string]int
	proxy     *httputil.ReverseProxy
	cancelled chan struct{}
}

func newVersionRecorder(t *testing.T, e *env) (*versionRecorder, string) {
	t.Helper()
	target, err := url.Parse(e.hs.URL)
	require.NoError(t, err)
	rec := &versionRecorder{versions: map[string]int{}, proxy: httputil.NewSingleHostReverseProxy(target), cancelled: make(chan struct{}, 16)}
	rec.proxy.FlushInterval = -1
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	return rec, hs.URL
}

func (v *versionRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	v.versions[r.Header.Get("Mcp-Protocol-Version")]++
	v.mu.Unlock()
	v.proxy.ServeHTTP(w, r)
	if r.Header.Get("Mcp-Method") == "notifications/cancelled" {
		select {
		case v.cancelled <- struct{}{}:
		default: // nobody waits for more
		}
	}
}

// TestMCPGoClientsCancelLeavesAnotherClientsCallWithItsID: the Go SDK
// client closes the stream of the call it cancels and then sends a
// notifications/cancelled for its id, which another client of the same
// owner may be using: that client's call goes on.
func TestMCPGoClientsCancelLeavesAnotherClientsCallWithItsID(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), MCPTools: blockTools()})
	rec, proxied := newVersionRecorder(t, e)
	connect := func() *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: proxied + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{alice, http.DefaultTransport}}, MaxRetries: -1}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	call := func(ctx context.Context, cs *mcp.ClientSession, thread string) <-chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{"log": []string{"go"}, "thread_id": thread}})
			errc <- err
		}()
		select {
		case <-b.entered:
		case err := <-errc:
			t.Fatalf("the call ended before its run started: %v", err)
		}
		return errc
	}
	// The same steps on two clients: their calls have the same id.
	ctx, cancel := context.WithCancel(t.Context())
	first := call(ctx, connect(), "g-1")
	second := call(t.Context(), connect(), "g-2")
	cancel()
	require.ErrorIs(t, <-first, context.Canceled)
	<-rec.cancelled // the first client's cancel was answered
	assert.Equal(t, server.StatusCancelled, e.endedRun(alice, "g-1").Status)

	b.open()
	require.NoError(t, <-second, "the second client's call went on")
	assert.Equal(t, server.StatusDone, e.endedRun(alice, "g-2").Status)
}

// TestCoorflowsOwnClientSpeaks20260728ToMCPAndCancels has coorflow's MCP
// client (tools/mcp) call a workflow of /mcp and cancel the call: it
// speaks 2026-07-28 there, and the remote run is cancelled.
func TestCoorflowsOwnClientSpeaks20260728ToMCPAndCancels(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), MCPTools: blockTools()})
	rec, proxied := newVersionRecorder(t, e)
	ts, err := mcptools.NewToolset(mcptools.Config{Servers: []mcptools.Server{{Name: "remote", URL: proxied + "/mcp", Bearer: alice}}})
	require.NoError(t, err)
	defer ts.Close()
	reg := &tools.Registry{}
	require.NoError(t, ts.Register(t.Context(), reg))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan tools.Result, 1)
	go func() {
		done <- reg.Run(ctx, "remote_block", json.RawMessage(`{"log":["go"],"thread_id":"x-1"}`), tools.RunOptions{})
	}()
	select {
	case <-b.entered:
	case res := <-done:
		t.Fatalf("the call ended before its run started: %s", res.Text())
	}
	cancel()
	res := <-done
	require.ErrorIs(t, res.Err, context.Canceled)
	assert.Equal(t, server.StatusCancelled, e.endedRun(alice, "x-1").Status, "the remote run was cancelled")
	assert.Zero(t, b.counts()["c"])

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Positive(t, rec.versions[sessionlessVersion], "requests on 2026-07-28: %v", rec.versions)
	assert.Len(t, rec.versions, 1, "and none on another protocol: %v", rec.versions)
}

func TestMCPURLQuestionIsNotAskedOfAFormOnlyClient(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			e := newEnv(t, server.Config{Workflows: workflows(loginGraph(t)), MCPTools: map[string]server.MCPTool{"login": {Input: "log", Output: "log"}}})
			asked := 0
			cs := e.mcpClient(alice, version, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept"}, nil
				}})
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "login", Arguments: map[string]any{"log": []string{}, "thread_id": "u-1"}})
			require.NoError(t, err)
			assert.Zero(t, asked, "URL mode was not declared")
			assert.Equal(t, "interrupted", structured(t, res)["status"])
			assert.Contains(t, callText(t, res), `To answer, call login again with {"thread_id": "u-1", "resume": <your answer>}`)
		})
	}
}
