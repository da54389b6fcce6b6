package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/tools"
	mcptools "github.com/coorflow/coorflow/tools/mcp"
)

// The tests below speak to /mcp with the official Go SDK's client.

var mcpTools = map[string]server.MCPTool{
	"echo": {Description: "Shouts a text.", Input: "text", InputSchema: json.RawMessage(`{"type":"string"}`), Output: "text"},
	"ask":  {Description: "Asks for approval.", Input: "text", Output: "log"},
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// mcpClient connects to the server's /mcp with token; opts configure the
// client (elicitation), version the protocol ("" for the SDK's newest).
func (e *env) mcpClient(token, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	if opts.Capabilities == nil {
		opts.Capabilities = &mcp.ClientCapabilities{}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: e.hs.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token, e.client.Transport}}, MaxRetries: -1}
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(e.t.Context(), tr, so)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, res.Content)
	return res.Content[0].(*mcp.TextContent).Text
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func TestMCPOffersEachWorkflowAsATool(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t), askGraph(t, false)), MCPTools: mcpTools})
	cs := e.mcpClient(alice, "", nil)
	list, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 2)
	echo := list.Tools[1]
	assert.Equal(t, "echo", echo.Name)
	assert.True(t, strings.HasPrefix(echo.Description, "Shouts a text. Give text to start a run; the result is the run's text."), echo.Description)
	schema := echo.InputSchema.(map[string]any)
	props := schema["properties"].(map[string]any)
	assert.Equal(t, "string", props["text"].(map[string]any)["type"], "the input channel's schema")
	assert.Contains(t, props, "thread_id")
	assert.Contains(t, props, "resume")

	// Over HTTP, 2026-07-28 without a session and 2025-11-25 in one.
	for i, version := range []string{"2026-07-28", "2025-11-25"} {
		progress := make(chan string, 16)
		cs2 := e.mcpClient(alice, version, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Message
		}})
		require.Equal(t, version, cs2.InitializeResult().ProtocolVersion)
		thread := fmt.Sprintf("mcp-%d", i+1)
		p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello", "thread_id": thread}}
		p.SetProgressToken("tok")
		res, err := cs2.CallTool(t.Context(), p)
		require.NoError(t, err)
		require.False(t, res.IsError, callText(t, res))
		assert.Equal(t, "HELLO", callText(t, res))
		st := structured(t, res)
		assert.Equal(t, thread, st["thread_id"])
		assert.Equal(t, "done", st["status"])
		assert.Equal(t, "HELLO", st["output"])
		// The SDK hands notifications to the handler on a goroutine of its
		// own: they may come after the result.
		assert.Equal(t, "echo: node upper finished", <-progress, version)
		assert.Equal(t, "echo: node tally finished", <-progress, version)
	}

	// The run is the owner's, like those of the HTTP API.
	var th server.Thread
	e.call("GET", "/v1/threads/mcp-1", alice, nil, http.StatusOK, &th)
	assert.Equal(t, "echo", th.Workflow)
	e.fails("GET", "/v1/threads/mcp-1", bob, nil, http.StatusNotFound, server.ErrorDetail{Code: server.CodeUnknownThread, Message: `unknown thread "mcp-1"`})
}

func TestMCPNeedsTheOwnersToken(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools})
	resp := e.request("POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	cs := e.mcpClient(alice, "2025-11-25", nil)
	// Bob cannot use Alice's session, even knowing its id.
	resp = e.request("POST", "/mcp", bob, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`,
		"Mcp-Session-Id", cs.ID(), "Accept", "application/json, text/event-stream", "Content-Type", "application/json", "Mcp-Protocol-Version", "2025-11-25")
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestMCPRunThatAsksAClientThatCannotAnswer(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false)), MCPTools: mcpTools})
	cs := e.mcpClient(alice, "", nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"text": "x", "thread_id": "q-1"}})
	require.NoError(t, err)
	text := callText(t, res)
	assert.Contains(t, text, "The run paused on thread q-1: it waits for the answer to 1 question(s).")
	assert.Contains(t, text, "approve draft?")
	assert.Contains(t, text, `To answer, call ask again with {"thread_id": "q-1", "resume": <your answer>}, or POST /v1/threads/q-1/runs/wait with {"resume": ...} to the HTTP API.`)
	assert.Equal(t, "interrupted", structured(t, res)["status"])

	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"thread_id": "q-1", "resume": map[string]any{"ok": true}}})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	assert.Equal(t, "done", structured(t, res)["status"])
	assert.Contains(t, callText(t, res), "draft ok=true")
}

func TestMCPRunThatAsksIsAnsweredByElicitation(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} { // asked during the call; returned with the result (multi round-trip)
		t.Run(version, func(t *testing.T) {
			e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false)), MCPTools: mcpTools})
			var asked []*mcp.ElicitParams
			cs := e.mcpClient(alice, version, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, r.Params)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": `{"ok": true}`}}, nil
			}})
			require.Equal(t, version, cs.InitializeResult().ProtocolVersion, "over HTTP")
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"text": "x"}})
			require.NoError(t, err)
			require.False(t, res.IsError, callText(t, res))
			assert.Equal(t, "done", structured(t, res)["status"])
			assert.Contains(t, callText(t, res), "draft ok=true")
			require.Len(t, asked, 1)
			assert.Equal(t, "approve draft?", asked[0].Message)
		})
	}
}

func TestMCPDeclinedQuestionReturnsHowToResume(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false)), MCPTools: mcpTools})
	cs := e.mcpClient(alice, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"text": "x", "thread_id": "q-2"}})
	require.NoError(t, err)
	assert.Contains(t, callText(t, res), `call ask again with {"thread_id": "q-2", "resume": <your answer>}`)
	assert.Equal(t, "interrupted", structured(t, res)["status"])
}

func TestMCPBadArguments(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t), askGraph(t, false)), MCPTools: mcpTools})
	cs := e.mcpClient(alice, "", nil)
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"echo", map[string]any{}, "text is required: it is the run's input"},
		{"echo", map[string]any{"resume": "yes"}, "resume and resume_each answer a thread's question: give its thread_id too"},
		{"echo", map[string]any{"text": "a", "resume": "yes", "thread_id": "x"}, "give text to start a run, or resume to answer a question, not both"},
		{"echo", map[string]any{"thread_id": "nope", "resume": "yes"}, `unknown thread "nope"`},
		{"echo", map[string]any{"text": 3}, `graph: decode channel "text" as string: json: cannot unmarshal number`},
	}
	for _, c := range cases {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		require.NoError(t, err)
		assert.True(t, res.IsError, "%v", c.args)
		assert.Contains(t, callText(t, res), c.want)
	}
	// A thread of another workflow.
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a", "thread_id": "mine"}})
	require.NoError(t, err)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"text": "a", "thread_id": "mine"}})
	require.NoError(t, err)
	assert.Equal(t, `thread "mine" belongs to workflow "echo": call that tool to continue it`, callText(t, res))
}

func TestMCPCancelledCallCancelsItsRun(t *testing.T) {
	// 2026-07-28: the client closes the call's stream (and sends a cancel
	// that reaches no session); 2025-11-25: it sends notifications/cancelled
	// in its session.
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			b := newBlocker(t)
			e := newEnv(t, server.Config{Workflows: workflows(b.r), MCPTools: map[string]server.MCPTool{"block": {Input: "log", Output: "log"}}})
			cs := e.mcpClient(alice, version, nil)
			require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{"log": []string{"go"}, "thread_id": "c-1"}})
				if err == nil {
					err = fmt.Errorf("the call returned: %v", res.Content[0].(*mcp.TextContent).Text)
				}
				errc <- err
			}()
			select {
			case <-b.entered:
			case err := <-errc:
				t.Fatal(err)
			}
			cancel()
			require.ErrorIs(t, <-errc, context.Canceled)
			var runs server.RunList
			e.call("GET", "/v1/threads/c-1/runs", alice, nil, http.StatusOK, &runs)
			require.Len(t, runs.Runs, 1)
			end := e.stream("GET", "/v1/threads/c-1/runs/"+runs.Runs[0].ID+"/stream", alice, nil)
			assert.Equal(t, server.StatusCancelled, end[len(end)-1].run(t).Status, "the tool's context was cancelled, and its run")
			assert.Zero(t, b.counts()["c"], "the run stopped at the slow node")

			// The client goes on with its next call.
			b.open()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "block", Arguments: map[string]any{"log": []string{"again"}, "thread_id": "c-2"}})
			require.NoError(t, err)
			assert.Equal(t, "done", structured(t, res)["status"])
		})
	}
}

func TestServeMCPOverAnyTransport(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), MCPTools: mcpTools, Tokens: map[string]string{alice: "alice", "tok-carol": "carol"}})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.srv.ServeMCP(ctx, "carol", st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	cs, err := c.Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi", "thread_id": "s-1"}})
	require.NoError(t, err)
	assert.Equal(t, "HI", callText(t, res))
	require.NoError(t, cs.Close())
	cancel()
	require.NoError(t, <-done)
	var th server.Thread
	e.call("GET", "/v1/threads/s-1", "tok-carol", nil, http.StatusOK, &th)
	assert.Equal(t, "echo", th.Workflow, "the run is carol's")
}

// TestAQuestionCrossesTwoCoorflows has coorflow's own MCP client call
// /mcp: the served run's question reaches the calling run as an
// interrupt, and the answer given on its resume goes back.
func TestAQuestionCrossesTwoCoorflows(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false)), MCPTools: mcpTools})
	ts, err := mcptools.NewToolset(mcptools.Config{Servers: []mcptools.Server{{Name: "remote", URL: e.hs.URL + "/mcp", Bearer: alice}}})
	require.NoError(t, err)
	defer ts.Close()
	reg := &tools.Registry{}
	require.NoError(t, ts.Register(t.Context(), reg))
	assert.Equal(t, []string{"remote_ask"}, reg.Names())

	out := graph.NewKey[string]("out")
	g := graph.New("caller", out)
	g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res := reg.Run(ctx, "remote_ask", json.RawMessage(`{"text":"x"}`), tools.RunOptions{})
		var ie *graph.InterruptError
		if errors.As(res.Err, &ie) {
			return graph.Command{}, ie
		}
		return graph.Update(out.Set(res.Text())), nil
	})
	g.AddEdge(graph.Start, "call")
	g.AddEdge("call", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("outer"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	q := res.Interrupts[0].Payload.(mcptools.Elicitation)
	assert.Equal(t, "approve draft?", q.Message)
	assert.Equal(t, "remote", q.Server)

	res, err = r.Invoke(t.Context(), nil, graph.Thread("outer"), graph.Resume(map[string]any{"answer": `{"ok": true}`}))
	require.NoError(t, err)
	require.Equal(t, graph.StatusDone, res.Status)
	assert.Contains(t, out.Get(res.State), "draft ok=true")
}
