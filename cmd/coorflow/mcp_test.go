package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/mcptest"
)

// goEnv gives the command the variables go needs, for examples/mcp, whose
// MCP server starts with go run.
func goEnv(c *cli) {
	for _, k := range []string{"PATH", "HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN", "GOROOT"} {
		if v := os.Getenv(k); v != "" {
			c.env[k] = v
		}
	}
}

func TestToolsListShowsAFilesMCPToolsWithTheirSchemas(t *testing.T) {
	c := newCLI(t)
	goEnv(c)
	code, stdout, stderr := c.run("tools", "list", "../../examples/mcp", "--mcp", "spec")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, `spec_read  (MCP server spec, tool read)
  Read one section of the MCP notes.
  schema: {"additionalProperties":false,"properties":{"section":{"description":"the id of a section, as search returns it","type":"string"}},"required":["section"],"type":"object"}
spec_search  (MCP server spec, tool search)
  Find the sections of the MCP notes that mention some words.
  schema: {"additionalProperties":false,"properties":{"query":{"description":"words to look for in the notes","type":"string"}},"required":["query"],"type":"object"}
`, stdout)

	code, stdout, stderr = c.run("tools", "list", "../../examples/research", "--json")
	require.Equal(t, exitOK, code, stderr)
	var tools []toolInfo
	require.NoError(t, json.Unmarshal([]byte(stdout), &tools))
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"http_fetch", "python", "web_search"}, names, "a file without MCP servers lists its own tools")

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"tools"}, "coorflow: tools: want tools list FILE|DIR|NAME [--json] [--mcp SERVER]\n"},
		{[]string{"tools", "list"}, "coorflow: tools list: give one workflow file, directory or built-in name\n"},
	} {
		code, _, stderr := c.run(bad.args...)
		assert.Equal(t, exitUsage, code)
		assert.Equal(t, bad.want, stderr)
	}
}

// buildCoorflow builds the command, for clients that start it.
func buildCoorflow(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "coorflow")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

func TestCoorflowMCPServesWorkflowsOverStdioToTheTypeScriptSDK(t *testing.T) {
	mcptest.NodeModules(t) // skip before building when the SDK is absent
	bin := buildCoorflow(t)
	db := filepath.Join(t.TempDir(), "coorflow.db")
	rep := mcptest.RunClient(t, mcptest.ClientPlan{
		// As a desktop client starts it; no API key reaches it, so the
		// workflows run on their demo scripts.
		Stdio: []string{bin, "mcp", "../../examples/coor", "../../examples/research", "--db", db},
		Calls: []mcptest.Call{
			{Name: "coor", Arguments: map[string]any{"input": "Compare SQLite and PostgreSQL"}},
			{Name: "research", Arguments: map[string]any{"input": "How fast is SQLite?"}},
		},
		Elicit: map[string]any{"action": "accept", "content": map[string]any{"answer": "accept"}},
	})
	require.Empty(t, rep.Error, rep.Stderr)
	var names []string
	for _, tl := range rep.Tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"coor", "research"}, names)
	assert.Contains(t, rep.Tools[0].InputSchema["properties"], "input")
	require.Len(t, rep.Results, 2)

	coor := rep.Results[0]
	require.False(t, coor.IsError, coor.Content)
	assert.True(t, strings.HasPrefix(coor.Content[0].Text, "# SQLite or PostgreSQL for an embedded agent engine"), coor.Content[0].Text)
	assert.Equal(t, "done", coor.StructuredContent["status"])
	assert.NotEmpty(t, rep.Progress[0], "a long run reports progress")
	assert.Equal(t, "coor: node coordinator finished", rep.Progress[0][0]["message"])

	// research stops for a review of its plan: the question is asked by
	// elicitation, the client accepts, and the run goes on in the call.
	research := rep.Results[1]
	require.False(t, research.IsError, research.Content)
	require.Len(t, rep.Elicitations, 1)
	assert.Contains(t, rep.Elicitations[0]["message"], "Accept this plan, say what to change, or send an edited plan.")
	assert.Equal(t, "done", research.StructuredContent["status"])
	assert.Contains(t, research.Content[0].Text, "1,000 checkpoints per second")
	assert.NotContains(t, rep.Stderr, "error")
}

func TestServeOffersWorkflowsAtMCPToTheTypeScriptSDK(t *testing.T) {
	mcptest.NodeModules(t)
	c := newCLI(t)
	c.env["COORFLOW_TOKENS"] = "secret=alice"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	c.ctx, c.stdout = ctx, pw
	done := make(chan int, 1)
	go func() {
		code, _, _ := c.run("serve", "../../examples/coor", "../../examples/research", "--addr", "127.0.0.1:0")
		_ = pw.Close()
		done <- code
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan())
	addr := regexp.MustCompile(`http://[0-9.:]+`).FindString(lines.Text())
	require.NotEmpty(t, addr, lines.Text())
	go func() {
		for lines.Scan() { // drain what follows
		}
	}()

	// A client that cannot answer questions: the run that stops on one
	// returns how to resume it, and the next call resumes it.
	rep := mcptest.RunClient(t, mcptest.ClientPlan{URL: addr + "/mcp", Token: "secret", Calls: []mcptest.Call{
		{Name: "research", Arguments: map[string]any{"input": "How fast is SQLite?", "thread_id": "ts-1"}},
		{Name: "research", Arguments: map[string]any{"thread_id": "ts-1", "resume": "accept"}},
	}})
	require.Empty(t, rep.Error)
	require.Len(t, rep.Results, 2)
	paused := rep.Results[0].Content[0].Text
	assert.Contains(t, paused, "The run paused on thread ts-1")
	assert.Contains(t, paused, `To answer, call research again with {"thread_id": "ts-1", "resume": <your answer>}`)
	assert.Equal(t, "done", rep.Results[1].StructuredContent["status"])
	assert.Contains(t, rep.Results[1].Content[0].Text, "1,000 checkpoints per second")

	bad := mcptest.RunClient(t, mcptest.ClientPlan{URL: addr + "/mcp", Token: "wrong"})
	assert.Contains(t, bad.Error, `{"error":{"code":"unauthorized","message":"unknown bearer token"}}`, "an unknown token is refused")

	cancel()
	assert.Equal(t, exitOK, <-done)
	c.ctx, c.stdout = nil, nil
	runs := c.listRuns()
	require.Len(t, runs, 2)
	for _, r := range runs {
		assert.Equal(t, "alice", r.Owner)
		assert.Equal(t, "ts-1", r.Thread)
	}
}
