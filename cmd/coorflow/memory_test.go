package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	memoryQ1 = "How do I make a write durable on macOS?"
	memoryQ2 = "Our macOS build loses data after a power loss: which call should it use?"
)

func TestALaterThreadRecallsWhatAnEarlierOneLearned(t *testing.T) {
	c := newCLI(t)
	// Without the first thread, the second plans research.
	code, stdout, stderr := c.run("run", "../../examples/memory", "--input", memoryQ2, "--db", c.db+".empty")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "new agent durability_researcher")

	code, stdout, stderr = c.run("run", "../../examples/memory", "--input", memoryQ1)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "new agent durability_researcher")
	first := threadOf(t, stdout)

	code, stdout, stderr = c.run("run", "../../examples/memory", "--input", memoryQ2)
	require.Equal(t, exitOK, code, stderr)
	assert.NotEqual(t, first, threadOf(t, stdout), "a new thread")
	assert.Contains(t, stdout, `✓ planner  enough is known: "Durable writes on macOS"`, "the planner recalled the first thread's finding")
	assert.NotContains(t, stdout, "▶ team")
	assert.Contains(t, stdout, "Recalled from an earlier conversation")
}

func TestMemoriesOfOneOwnerAreNotAnothersThroughTheServer(t *testing.T) {
	c := newCLI(t)
	c.env["COORFLOW_TOKENS"] = "a-token=alice,b-token=bob"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	c.ctx, c.stdout = ctx, pw
	done := make(chan int, 1)
	go func() {
		code, _, _ := c.run("serve", "../../examples/memory", "--addr", "127.0.0.1:0")
		_ = pw.Close()
		done <- code
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan())
	addr := regexp.MustCompile(`http://[0-9.:]+`).FindString(lines.Text())
	require.NotEmpty(t, addr, lines.Text())
	go func() {
		for lines.Scan() {
		}
	}()

	// run asks for a run on a new thread as token's owner and returns the
	// number of steps its plan had.
	run := func(token, thread, input string) int {
		t.Helper()
		call := func(path, body string) string {
			req, err := http.NewRequestWithContext(t.Context(), "POST", addr+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			require.Less(t, resp.StatusCode, 300, string(b))
			return string(b)
		}
		call("/v1/threads", `{"workflow": "memory", "thread_id": "`+thread+`"}`)
		body := call("/v1/threads/"+thread+"/runs/wait", `{"input": {"input": "`+input+`"}}`)
		var res struct {
			Status string `json:"status"`
			Values struct {
				Plan struct {
					Steps []json.RawMessage `json:"steps"`
				} `json:"plan"`
			} `json:"values"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &res), body)
		require.Equal(t, "done", res.Status, body)
		return len(res.Values.Plan.Steps)
	}
	assert.Equal(t, 1, run("a-token", "alice-1", memoryQ1), "alice researches")
	assert.Equal(t, 1, run("b-token", "bob-1", memoryQ2), "bob recalls nothing of alice's: he researches")
	assert.Equal(t, 0, run("a-token", "alice-2", memoryQ2), "alice's second thread recalls her first")

	cancel()
	assert.Equal(t, exitOK, <-done)
}

func TestServeRefusesAnOwnerIdTheStoreWouldRefuse(t *testing.T) {
	c := newCLI(t)
	file := tokenFile(t, "good=alice\nbad=ali\x01ce\n", 0o600)
	code, _, stderr := c.run("serve", "../../examples/coor", "--token-file", file)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `owner "ali\x01ce" is not a valid owner id`)
	assert.Contains(t, stderr, file+":2")
}
