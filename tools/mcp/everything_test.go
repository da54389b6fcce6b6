package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/mcptest"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/tools/mcp"
)

// The tests below run coorflow's client against the protocol's reference
// test server, over stdio and over streamable HTTP.

type transport struct {
	name   string
	server func(t *testing.T) mcp.Server
}

var transports = []transport{
	{"stdio", func(t *testing.T) mcp.Server {
		node, args := mcptest.Everything(t)
		return mcp.Server{Name: "everything", Command: node, Args: args}
	}},
	{"http", func(t *testing.T) mcp.Server {
		return mcp.Server{Name: "everything", URL: mcptest.StartEverythingHTTP(t).URL()}
	}},
}

// toolset returns a toolset of srv, closed when t ends, and a registry
// holding its tools.
func toolset(t *testing.T, srv ...mcp.Server) (*mcp.Toolset, *tools.Registry) {
	t.Helper()
	ts, err := mcp.NewToolset(mcp.Config{Servers: srv})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.Close() })
	reg := &tools.Registry{}
	require.NoError(t, ts.Register(t.Context(), reg))
	return ts, reg
}

func TestListsToolsWithSchemas(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			_, reg := toolset(t, tr.server(t))
			names := reg.Names()
			// trigger-elicitation-request is registered by the server only
			// after initialization, for clients that can answer questions:
			// the list is taken after the handshake.
			for _, want := range []string{"everything_echo", "everything_get-sum", "everything_get-tiny-image", "everything_trigger-long-running-operation", "everything_trigger-elicitation-request"} {
				assert.Contains(t, names, want)
			}
			echo, err := reg.Get("everything_echo")
			require.NoError(t, err)
			var schema map[string]any
			require.NoError(t, json.Unmarshal(echo.Schema(), &schema))
			assert.Equal(t, "object", schema["type"])
			assert.Contains(t, schema["properties"], "message")
			assert.Equal(t, []any{"message"}, schema["required"])
			assert.NotContains(t, schema, "$schema", "providers refuse it")
			assert.Contains(t, echo.Description(), "Echoes back the input string")
		})
	}
}

func TestCallsSeveralTools(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			_, reg := toolset(t, tr.server(t))
			cases := []struct {
				tool string
				args string
				want []string
			}{
				{"everything_echo", `{"message":"hello there"}`, []string{"Echo: hello there"}},
				{"everything_get-sum", `{"a":2,"b":40}`, []string{"The sum of 2 and 40 is 42."}},
				{"everything_get-tiny-image", `{}`, []string{"[image image/png, ", "data:image/png;base64,iVBOR"}},
				{"everything_get-resource-reference", `{"resourceId":3}`, []string{"[resource demo://resource/dynamic/text/3 (text/plain)]\nResource 3: This is a plaintext resource"}},
				{"everything_get-resource-links", `{"count":2}`, []string{"[resource link: demo://resource/dynamic/", "Resource 2: plaintext resource"}},
				{"everything_get-structured-content", `{"location":"Chicago"}`, []string{`"temperature"`}},
			}
			for _, c := range cases {
				res := reg.Run(t.Context(), c.tool, json.RawMessage(c.args), tools.RunOptions{})
				require.Equal(t, tools.StatusOK, res.Status, "%s: %v", c.tool, res.Err)
				for _, w := range c.want {
					assert.Contains(t, res.Output, w, c.tool)
				}
			}
		})
	}
}

func TestServerErrorIsAToolResult(t *testing.T) {
	_, reg := toolset(t, transports[0].server(t))
	sum, err := reg.Get("everything_get-sum")
	require.NoError(t, err)
	// Called past the schema check, the server itself refuses the call.
	_, err = sum.Call(t.Context(), json.RawMessage(`{"a":"two","b":3}`))
	var ce *mcp.CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "get-sum", ce.Tool)
	assert.Contains(t, ce.Text, "expected number, received string")
	text := tools.ErrorText(&tools.ToolError{Tool: "everything_get-sum", Err: err})
	assert.Contains(t, text, `Error: tool "everything_get-sum" failed: mcp: server "everything" answered with an error: MCP error -32602`)
}

func TestResultsAreBounded(t *testing.T) {
	srv := transports[0].server(t)
	srv.MaxResultBytes, srv.MaxInlineBytes = 200, 16
	_, reg := toolset(t, srv)
	img := reg.Run(t.Context(), "everything_get-tiny-image", nil, tools.RunOptions{})
	require.Equal(t, tools.StatusOK, img.Status, "%v", img.Err)
	assert.Regexp(t, `\[image image/png, \d+ bytes: larger than 16 bytes, not included\]`, img.Output)
	assert.NotContains(t, img.Output, "base64")
	long := reg.Run(t.Context(), "everything_echo", json.RawMessage(`{"message":"`+strings.Repeat("x", 500)+`"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, long.Status)
	assert.Equal(t, "Echo: "+strings.Repeat("x", 194)+"\n[… the result was cut: 200 of 506 bytes shown]", long.Output)
}

func TestStdioServerGetsOnlyTheEnvironmentListed(t *testing.T) {
	srv := transports[0].server(t)
	srv.Env = map[string]string{"GREETING": "hello"}
	srv.InheritEnv = []string{"ALLOWED_KEY"}
	parent := map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/home/coorflow", "ALLOWED_KEY": "k-allowed", "SECRET_TOKEN": "s3cret", "OPENAI_API_KEY": "sk-nope"}
	ts, err := mcp.NewToolset(mcp.Config{Servers: []mcp.Server{srv}, Getenv: func(k string) string { return parent[k] }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.Close() })
	reg := &tools.Registry{}
	require.NoError(t, ts.Register(t.Context(), reg))
	res := reg.Run(t.Context(), "everything_get-env", nil, tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, "%v", res.Err)
	var env map[string]string
	require.NoError(t, json.Unmarshal([]byte(res.Output), &env))
	assert.Equal(t, "hello", env["GREETING"])
	assert.Equal(t, "k-allowed", env["ALLOWED_KEY"])
	assert.Equal(t, "/usr/bin:/bin", env["PATH"])
	assert.NotContains(t, env, "SECRET_TOKEN")
	assert.NotContains(t, env, "OPENAI_API_KEY")
}

// progressEvents is a graph whose one node runs the tool called name with
// args through reg.
func toolGraph(t *testing.T, reg *tools.Registry, name, args string, opts ...graph.Option) *graph.Runnable {
	t.Helper()
	out := graph.NewKey[string]("out")
	g := graph.New("g", out)
	g.AddNode("call", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res := reg.Run(ctx, name, json.RawMessage(args), tools.RunOptions{})
		var ie *graph.InterruptError
		if errors.As(res.Err, &ie) {
			return graph.Command{}, ie
		}
		if res.Status != tools.StatusOK {
			return graph.Command{}, errors.New(res.Text())
		}
		return graph.Update(out.Set(res.Output)), nil
	})
	g.AddEdge(graph.Start, "call")
	g.AddEdge("call", graph.End)
	r, err := g.Compile(opts...)
	require.NoError(t, err)
	return r
}

func TestLongCallReportsProgressAsEvents(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			_, reg := toolset(t, tr.server(t))
			r := toolGraph(t, reg, "everything_trigger-long-running-operation", `{"duration":0.3,"steps":3}`)
			var got []mcp.Progress
			for ev, err := range r.Stream(t.Context(), graph.Input()) {
				require.NoError(t, err)
				if p, ok := ev.Data.(mcp.Progress); ok && ev.Kind == graph.EventCustom {
					assert.Equal(t, "g/call", ev.Path)
					got = append(got, p)
				}
			}
			want := []mcp.Progress{
				{Kind: mcp.KindProgress, Server: "everything", Tool: "everything_trigger-long-running-operation", Progress: 1, Total: 3},
				{Kind: mcp.KindProgress, Server: "everything", Tool: "everything_trigger-long-running-operation", Progress: 2, Total: 3},
				{Kind: mcp.KindProgress, Server: "everything", Tool: "everything_trigger-long-running-operation", Progress: 3, Total: 3},
			}
			assert.Equal(t, want, got)
		})
	}
}

func TestRunCancellationCancelsTheCall(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			_, reg := toolset(t, tr.server(t))
			// A call of 10 minutes, cancelled when its first progress arrives.
			r := toolGraph(t, reg, "everything_trigger-long-running-operation", `{"duration":600,"steps":6000}`)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var runErr error
			for ev, err := range r.Stream(ctx, graph.Input()) {
				if _, ok := ev.Data.(mcp.Progress); ok {
					cancel()
				}
				if err != nil {
					runErr = err
				}
			}
			require.ErrorIs(t, runErr, context.Canceled)
			// The session is still good: the server was told to stop, and
			// answers the next call.
			res := reg.Run(t.Context(), "everything_echo", json.RawMessage(`{"message":"after"}`), tools.RunOptions{})
			require.Equal(t, tools.StatusOK, res.Status, "%v", res.Err)
			assert.Equal(t, "Echo: after", res.Output)
		})
	}
}

func TestCallTimeoutDegrades(t *testing.T) {
	srv := transports[0].server(t)
	srv.Timeout = 100 * time.Millisecond // against a call of 10 minutes
	_, reg := toolset(t, srv)
	res := reg.Run(t.Context(), "everything_trigger-long-running-operation", json.RawMessage(`{"duration":600,"steps":2}`), tools.RunOptions{})
	assert.Equal(t, tools.StatusDegraded, res.Status)
	assert.Contains(t, res.Output, "did not answer within 100ms")
}

func TestElicitationIsAnsweredThroughAnInterrupt(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			_, reg := toolset(t, tr.server(t))
			r := toolGraph(t, reg, "everything_trigger-elicitation-request", `{}`, graph.WithSaver(memory.New()))
			res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t1"))
			require.NoError(t, err)
			require.Equal(t, graph.StatusInterrupted, res.Status)
			require.Len(t, res.Interrupts, 1)
			q, ok := res.Interrupts[0].Payload.(mcp.Elicitation)
			require.True(t, ok, "payload %T", res.Interrupts[0].Payload)
			assert.Equal(t, mcp.KindElicitation, q.Kind)
			assert.Equal(t, "everything_trigger-elicitation-request", q.Tool)
			assert.Equal(t, "Please provide inputs for the following fields:", q.Message)
			assert.Equal(t, "form", q.Mode)
			assert.Contains(t, q.Schema.(map[string]any)["properties"], "name")

			res, err = r.Invoke(t.Context(), nil, graph.Thread("t1"), graph.Resume(map[string]any{"name": "Ada Lovelace", "check": true}))
			require.NoError(t, err)
			require.Equal(t, graph.StatusDone, res.Status)
			out := res.State.Values()["out"].(string)
			assert.Contains(t, out, "User provided the requested information")
			assert.Contains(t, out, "- Name: Ada Lovelace")
			assert.Contains(t, out, "- Agreed to terms: true")
		})
	}
}

func TestDeclinedElicitation(t *testing.T) {
	_, reg := toolset(t, transports[0].server(t))
	r := toolGraph(t, reg, "everything_trigger-elicitation-request", `{}`, graph.WithSaver(memory.New()))
	_, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t1"))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil, graph.Thread("t1"), graph.Resume("decline"))
	require.NoError(t, err)
	assert.Contains(t, res.State.Values()["out"], "User declined to provide the requested information")
}

func TestJournaledCallIsNotRepeatedOnResume(t *testing.T) {
	_, reg := toolset(t, transports[0].server(t))
	// The server's toggle answers Started, then Stopped: a repeated call
	// would show in the second answer.
	first, second := graph.NewKey[string]("first"), graph.NewKey[string]("second")
	g := graph.New("g", first, second)
	calls := 0
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) {
		calls++
		a := reg.Run(ctx, "everything_toggle-simulated-logging", nil, tools.RunOptions{})
		if _, err := graph.Interrupt(ctx, "go on?"); err != nil {
			return graph.Command{}, err
		}
		b := reg.Run(ctx, "everything_toggle-simulated-logging", nil, tools.RunOptions{})
		return graph.Update(first.Set(a.Output), second.Set(b.Output)), nil
	})
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("yes"))
	require.NoError(t, err)
	require.Equal(t, 2, calls, "the node ran again on resume")
	assert.True(t, strings.HasPrefix(first.Get(res.State), "Started simulated"), first.Get(res.State))
	assert.True(t, strings.HasPrefix(second.Get(res.State), "Stopped simulated"), second.Get(res.State))
}

func TestHTTPServerRestartedIsReconnected(t *testing.T) {
	srv := mcptest.StartEverythingHTTP(t)
	_, reg := toolset(t, mcp.Server{Name: "everything", URL: srv.URL()})
	res := reg.Run(t.Context(), "everything_echo", json.RawMessage(`{"message":"one"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, "%v", res.Err)

	srv.Kill()
	srv.Start() // same port; it does not know the session (it answers 400)
	res = reg.Run(t.Context(), "everything_echo", json.RawMessage(`{"message":"two"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, "%v", res.Err)
	assert.Equal(t, "Echo: two", res.Output)
}

func TestUnreachableServerIsReported(t *testing.T) {
	ts, err := mcp.NewToolset(mcp.Config{Servers: []mcp.Server{{Name: "gone", Command: "/nonexistent/mcp-server"}}})
	require.NoError(t, err)
	defer ts.Close()
	_, err = ts.Tools(t.Context())
	var ce *mcp.ConnectError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, `mcp: server "gone" (stdio): cannot connect: start /nonexistent/mcp-server: fork/exec /nonexistent/mcp-server: no such file or directory`, err.Error())
}

func TestClosedToolsetRefusesCalls(t *testing.T) {
	ts, reg := toolset(t, transports[0].server(t))
	require.NoError(t, ts.Close())
	res := reg.Run(t.Context(), "everything_echo", json.RawMessage(`{"message":"x"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusFailed, res.Status)
	assert.ErrorIs(t, res.Err, mcp.ErrClosed)
}
