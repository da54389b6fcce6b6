package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// demoResult runs a built-in on a new thread without a key, accepts its
// plan, and returns the report and what the first run printed.
func demoResult(t *testing.T, c *cli, workflow, thread, input string) (report, planned string) {
	t.Helper()
	code, stdout, stderr := c.run("run", workflow, "--thread", thread, "--input", input)
	require.Equal(t, exitInterrupted, code, stderr)
	assert.Equal(t, "coorflow: no model provider is configured (OPENAI_API_KEY is not set): running offline on the reactive demo model, which plays each role from your request\n", stderr)
	code, stdout2, stderr := c.run("run", workflow, "--thread", thread, "--resume", "yes", "--json")
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout2), "\n")
	var res runResult
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &res))
	require.Equal(t, "done", res.Status)
	assert.True(t, res.Demo)
	report, _ = res.Output.(string)
	return report, stdout
}

func TestTheBuiltInsRunOfflineOnTheReactiveDemoAboutTheirOwnRequest(t *testing.T) {
	c := newCLI(t)
	rust, planned := demoResult(t, c, "coor", "a", "Compare Rust and Go for command-line tools")
	assert.Contains(t, planned, `plan "Compare Rust and Go for command-line tools": 3 steps, 2 new agents`)
	assert.Contains(t, planned, "new agent rust_go_researcher")
	assert.Contains(t, rust, "**Your request:** Compare Rust and Go for command-line tools")
	assert.Contains(t, rust, "The python tool printed:", "an agent ran a tool")

	bread, planned := demoResult(t, c, "coor", "b", "How do I bake sourdough bread at home?")
	assert.Contains(t, planned, "new agent bake_sourdough_analyst")
	assert.Contains(t, bread, "**Your request:** How do I bake sourdough bread at home")
	assert.NotContains(t, bread, "Rust")

	again, _ := demoResult(t, c, "coor", "c", "Compare Rust and Go for command-line tools")
	assert.Equal(t, rust, again, "the same input gives the same report, byte for byte")

	research, planned := demoResult(t, c, "research", "d", "How fast is SQLite on a Raspberry Pi?")
	assert.Contains(t, planned, "researcher  Facts: How fast is SQLite on a Raspberry Pi")
	assert.Contains(t, research, "**Your request:** How fast is SQLite on a Raspberry Pi")
}

func TestShowModelsSaysWhenTheDemoServesEveryTier(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("run", "coor", "--input", "x", "--show-models", "--demo")
	require.Equal(t, exitInterrupted, code, stderr)
	assert.Equal(t, "coorflow: models: every tier: reactive demo model (built-in; answers from each request, offline)\n", stderr)
}

func TestABareServeServesTheBuiltInsOfflineOnTheReactiveDemo(t *testing.T) {
	c := newCLI(t)
	s := c.serve("--token-file", tokenFile(t, "tok\n", 0o600))
	post := func(path, body string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", s.addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/v1/threads", `{"workflow": "coor", "thread_id": "web-1"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = post("/v1/threads/web-1/runs/wait", `{"input": {"input": "Plan a week of vegetarian dinners"}}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"status":"interrupted"`, "the plan waits for its review")
	assert.Contains(t, body, "week_vegetarian_researcher")
	code, body = post("/v1/threads/web-1/runs/wait", `{"resume": "accept"}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"status":"done"`)
	assert.Contains(t, body, `**Your request:** Plan a week of vegetarian dinners`)
	exit, stderr := s.stop()
	assert.Equal(t, exitOK, exit)
	for _, wf := range []string{"coor", "research"} {
		assert.Contains(t, stderr, "coorflow: "+wf+": no model provider is configured (OPENAI_API_KEY is not set): serving it on the reactive demo model, which plays each role from your request\n")
	}
}

func TestABareMCPServesTheBuiltInsOfflineOnTheReactiveDemo(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("mcp", "--show-models") // stdin ends at once: the client went away
	assert.Equal(t, exitOK, code, stderr)
	assert.Empty(t, stdout, "nothing but the protocol on stdout")
	for _, wf := range []string{"coor", "research"} {
		assert.Contains(t, stderr, "coorflow: "+wf+": models: every tier: reactive demo model (built-in; answers from each request, offline)\n")
		assert.Contains(t, stderr, "coorflow: "+wf+": no model provider is configured (OPENAI_API_KEY is not set): serving it on the reactive demo model, which plays each role from your request\n")
	}
}
