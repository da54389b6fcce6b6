package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/mcptest"
	"github.com/coorflow/coorflow/server"
)

// holder is a workflow, served as the MCP tool hold, whose first run
// holds until its context is cancelled (saying so on cancelled) and whose
// later runs end at once.
type holder struct {
	entered   chan struct{}
	cancelled chan error
	mu        sync.Mutex
	runs      int
	r         *graph.Runnable
}

func newHolder(t *testing.T) *holder {
	t.Helper()
	h := &holder{entered: make(chan struct{}, 1), cancelled: make(chan error, 1)}
	g := graph.New("hold", logKey)
	g.AddNode("hold", func(ctx context.Context, s graph.State) (graph.Command, error) {
		h.mu.Lock()
		h.runs++
		first := h.runs == 1
		h.mu.Unlock()
		if !first {
			return graph.Update(graph.AppendTo(logKey, "held")), nil
		}
		h.entered <- struct{}{}
		<-ctx.Done()
		h.cancelled <- ctx.Err()
		return graph.Command{}, ctx.Err()
	})
	g.AddEdge(graph.Start, "hold")
	g.AddEdge("hold", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	h.r = r
	return h
}

func (h *holder) env(t *testing.T) *env {
	return newEnv(t, server.Config{Workflows: workflows(h.r), MCPTools: map[string]server.MCPTool{"hold": {Input: "log", Output: "log"}}})
}

// headers is an http.RoundTripper that adds headers to every request.
type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// refusals is an http.RoundTripper that keeps the bodies of the
// responses that refuse a request (4xx), which the Go SDK's error does
// not show.
type refusals struct {
	http.RoundTripper
	mu     sync.Mutex
	bodies []string
}

func (f *refusals) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.RoundTripper.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, fmt.Sprintf("%d %s", resp.StatusCode, body))
	f.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// goClient is the official Go SDK's streamable HTTP client transport for
// /mcp of e, sending h besides alice's bearer.
func (e *env) goClient(h headers) *mcp.StreamableClientTransport {
	h["Authorization"] = "Bearer " + alice
	return &mcp.StreamableClientTransport{Endpoint: e.hs.URL + "/mcp", HTTPClient: &http.Client{Transport: h}, MaxRetries: -1}
}

// TestMCPGoSDKClientFromAnotherOriginIsRefused (issue 28, finding 6): the
// Go SDK's client sending a foreign Origin cannot connect, and is told
// why; from the server's own origin it can.
func TestMCPGoSDKClientFromAnotherOriginIsRefused(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools})
	client := mcp.NewClient(&mcp.Implementation{Name: "page", Version: "1"}, nil)
	foreign := e.goClient(headers{"Origin": "http://evil.example"})
	refused := &refusals{RoundTripper: foreign.HTTPClient.Transport}
	foreign.HTTPClient.Transport = refused
	_, err := client.Connect(t.Context(), foreign, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Forbidden")
	host := e.hs.Listener.Addr().String()
	require.NotEmpty(t, refused.bodies)
	for _, body := range refused.bodies {
		assert.JSONEq(t, `{"error":{"code":"foreign_origin","message":"origin \"http://evil.example\" may not call /mcp of `+host+`: only pages of the same origin may (MCP refuses other origins against DNS rebinding)"}}`,
			strings.TrimPrefix(body, "403 "), "the server says why")
	}

	cs, err := client.Connect(t.Context(), e.goClient(headers{"Origin": e.hs.URL}), nil)
	require.NoError(t, err)
	defer cs.Close()
	list, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 1)
	assert.Equal(t, "echo", list.Tools[0].Name)
}

// recording is a transport whose connections keep what they read and the
// ids of the calls they write.
type recording struct {
	mcp.Transport
	mu    sync.Mutex
	read  []jsonrpc.Message
	calls []jsonrpc.ID
}

func (r *recording) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return recordingConn{c, r}, nil
}

// responded reports whether a response with id was read.
func (r *recording) responded(id jsonrpc.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.read {
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == id {
			return true
		}
	}
	return false
}

type recordingConn struct {
	mcp.Connection
	r *recording
}

func (c recordingConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		c.r.mu.Lock()
		c.r.calls = append(c.r.calls, req.ID)
		c.r.mu.Unlock()
	}
	return c.Connection.Write(ctx, m)
}

func (c recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		c.r.mu.Lock()
		c.r.read = append(c.r.read, m)
		c.r.mu.Unlock()
	}
	return m, err
}

// TestMCPGoSDKClientCancellingACallCancelsTheTool (issue 28, finding 7):
// the Go SDK's client cancels a running call with its context; the
// workflow's node sees its context cancelled, the run ends cancelled, no
// response to the call reaches the client, and the session goes on.
//
// The Go SDK client also drops the call's response stream when its
// context ends, so the no-response part holds for it regardless of the
// server; TestMCPTypeScriptClientAbortingACallGetsNoResponse is the one
// whose client keeps listening.
func TestMCPGoSDKClientCancellingACallCancelsTheTool(t *testing.T) {
	h := newHolder(t)
	e := h.env(t)
	rec := &recording{Transport: e.goClient(headers{})}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go", Version: "1"}, nil).Connect(t.Context(), rec, nil)
	require.NoError(t, err)
	defer cs.Close()

	ctx, cancel := context.WithCancel(t.Context())
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hold", Arguments: map[string]any{"log": []string{"go"}, "thread_id": "g-1"}})
		called <- err
	}()
	<-h.entered
	cancel()
	assert.ErrorIs(t, <-h.cancelled, context.Canceled, "the tool's context is cancelled")
	assert.ErrorIs(t, <-called, context.Canceled)

	var runs server.RunList
	e.call("GET", "/v1/threads/g-1/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs.Runs, 1)
	end := e.stream("GET", "/v1/threads/g-1/runs/"+runs.Runs[0].ID+"/stream", alice, nil)
	assert.Equal(t, server.StatusCancelled, end[len(end)-1].run(t).Status, "the run was cancelled")

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "hold", Arguments: map[string]any{"log": []string{"again"}, "thread_id": "g-2"}})
	require.NoError(t, err, "the session goes on")
	assert.False(t, res.IsError)
	rec.mu.Lock()
	calls := rec.calls
	rec.mu.Unlock()
	require.Len(t, calls, 2)
	assert.False(t, rec.responded(calls[0]), "no response to the cancelled call")
	assert.True(t, rec.responded(calls[1]), "the second call's response")
}

// TestMCPTypeScriptClientAbortingACallGetsNoResponse (issue 28, finding
// 7): the TypeScript SDK aborts a running call with an AbortSignal over
// HTTP; it sends notifications/cancelled, the tool's context is
// cancelled, no response for that id reaches the client's transport, and
// the next call is answered.
func TestMCPTypeScriptClientAbortingACallGetsNoResponse(t *testing.T) {
	mcptest.NodeModules(t)
	h := newHolder(t)
	e := h.env(t)
	rep := abortWithTypeScript(t, h, mcptest.ClientPlan{URL: e.hs.URL + "/mcp", Token: alice})
	assertAbortedWithoutResponse(t, rep)
}

// abortWithTypeScript runs the TypeScript client with plan: a call of hold
// it aborts once the tool runs, and, once the tool saw its context
// cancelled, a second call.
func abortWithTypeScript(t *testing.T, h *holder, plan mcptest.ClientPlan) mcptest.ClientReport {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	plan.Stdin = r
	plan.Calls = []mcptest.Call{
		{Name: "hold", Arguments: map[string]any{"log": []string{"go"}, "thread_id": "ts-1"}, Abort: true},
		{Name: "hold", Arguments: map[string]any{"log": []string{"again"}, "thread_id": "ts-2"}},
	}
	seen := make(chan error, 1)
	go func() {
		defer w.Close()
		<-h.entered
		fmt.Fprintln(w, "abort")
		seen <- <-h.cancelled
		fmt.Fprintln(w, "go on")
	}()
	rep := mcptest.RunClient(t, plan)
	select {
	case err := <-seen:
		assert.ErrorIs(t, err, context.Canceled, "the tool's context is cancelled")
	default:
		t.Fatalf("the tool was not cancelled: %+v", rep)
	}
	return rep
}

func assertAbortedWithoutResponse(t *testing.T, rep mcptest.ClientReport) {
	t.Helper()
	require.Empty(t, rep.Error, rep.Stderr)
	require.Len(t, rep.Aborted, 1)
	assert.Contains(t, rep.Aborted[0], "the user cancelled")
	var calls []any
	var cancelled any
	for _, m := range rep.Sent {
		switch m.Method {
		case "tools/call":
			calls = append(calls, m.ID)
		case "notifications/cancelled":
			cancelled = m.RequestID
		}
	}
	require.Len(t, calls, 2)
	assert.Equal(t, calls[0], cancelled, "the SDK sent notifications/cancelled for the aborted call")
	assert.NotContains(t, rep.Responses, calls[0], "no response to the cancelled call")
	assert.Contains(t, rep.Responses, calls[1], "the next call is answered")
	require.Len(t, rep.Results, 1)
	assert.False(t, rep.Results[0].IsError)
}
