package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/runs"
)

// replayNoDivergence replays run id and requires that it reproduced its
// recording.
func replayNoDivergence(t *testing.T, c *cli, id string) {
	t.Helper()
	code, stdout, stderr := c.run("replay", id)
	require.Equal(t, exitOK, code, "%s%s", stdout, stderr)
	assert.Contains(t, stdout, "; no divergence\n")
}

// recordedEnv is the environment run id's recording says it had.
func recordedEnv(t *testing.T, c *cli, id string) runs.Env {
	t.Helper()
	code, stdout, stderr := c.run("runs", "list", "--json")
	require.Equal(t, exitOK, code, stderr)
	var list []struct {
		ID      string            `json:"run_id"`
		Runtime map[string]string `json:"runtime"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
	for _, r := range list {
		if r.ID == id {
			env, ok, err := runs.DecodeEnv(r.Runtime[runs.RuntimeEnv])
			require.NoError(t, err)
			require.True(t, ok, "run %s records its environment", id)
			return env
		}
	}
	t.Fatalf("no recorded run %s", id)
	return runs.Env{}
}

// TestAServedRunReplaysWithTheEnvironmentItHad: serve compiles the python
// tool off (no --allow-code-exec), so its agents are told not to call it;
// the recording says so, and replay compiles the same, where it used to
// compile code execution on and diverge at every agent's first call.
func TestAServedRunReplaysWithTheEnvironmentItHad(t *testing.T) {
	c := newCLI(t)
	s := c.serve("../../examples/coor", "--token-file", tokenFile(t, "tok\n", 0o600))
	code, body := s.post("/v1/threads", "tok", `{"workflow": "coor", "thread_id": "served-1"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = s.post("/v1/threads/served-1/runs/wait", "tok", `{"input": {"input": "`+coorInput+`"}}`)
	require.Equal(t, http.StatusOK, code, body)
	var ru struct {
		ID     string `json:"run_id"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &ru))
	require.Equal(t, "done", ru.Status, body)
	// The conversation's second turn starts from the end of the first.
	code, body = s.post("/v1/threads/served-1/runs/wait", "tok", `{"input": {"input": "And for a desktop app?"}}`)
	require.Equal(t, http.StatusOK, code, body)
	var turn2 struct {
		ID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &turn2))
	exit, stderr := s.stop()
	require.Equal(t, exitOK, exit, stderr)
	replayNoDivergence(t, c, turn2.ID)

	coor, err := filepath.Abs("../../examples/coor/workflow.yaml")
	require.NoError(t, err)
	assert.Equal(t, runs.Env{CodeExec: runs.CodeExecOff, Workflow: coor, LeftOut: []string{"web_search"}}, recordedEnv(t, c, ru.ID),
		"code execution off, the file (a served run's workflow is known by its name, coor, which is also a built-in's), and web_search left out without its key")
	replayNoDivergence(t, c, ru.ID)
}

// TestARunReplaysWithTheEnvironmentItHad: coorflow run runs the file's
// code on this machine, and its replay compiles code execution on. The
// file's optional web_search, left out without TAVILY_API_KEY, is
// recorded as left out, and a replay leaves it out too when the key is
// set (it used to show the models the tool, and diverge).
func TestARunReplaysWithTheEnvironmentItHad(t *testing.T) {
	c := newCLI(t)
	id := recordCoor(t, c)
	coor, err := filepath.Abs("../../examples/coor/workflow.yaml")
	require.NoError(t, err)
	assert.Equal(t, runs.Env{CodeExec: runs.CodeExecLocal, Workflow: coor, LeftOut: []string{"web_search"}}, recordedEnv(t, c, id))
	replayNoDivergence(t, c, id)
	c.env["TAVILY_API_KEY"] = "tvly-test"
	replayNoDivergence(t, c, id)
}

// TestMissingToolsAreWhatTheRunHadAndTheReplayLacks: a replay notices the
// optional tools and servers it left out that the run it replays had.
func TestMissingToolsAreWhatTheRunHadAndTheReplayLacks(t *testing.T) {
	assert.Equal(t, []string{"mcp.docs"}, missingTools([]string{"web_search"}, []string{"mcp.docs", "web_search"}))
	assert.Empty(t, missingTools([]string{"web_search"}, []string{"web_search"}))
	assert.Empty(t, missingTools(nil, nil))
}

// TestAnMCPRunReplaysWithTheEnvironmentItHad: coorflow mcp, as serve,
// compiles code execution off, records it, and its runs replay without
// divergence.
func TestAnMCPRunReplaysWithTheEnvironmentItHad(t *testing.T) {
	c := newCLI(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var errOut lockedBuffer
	go func() {
		a := &app{stdin: inR, stdout: outW, stderr: &errOut,
			getenv: func(k string) string {
				if k == "COORFLOW_DB" {
					return c.db
				}
				return ""
			},
			unsetenv: func(string) error { return nil }}
		code := a.main(ctx, []string{"mcp", "../../examples/coor"})
		_ = outW.Close()
		done <- code
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "coor", Arguments: map[string]any{"input": coorInput, "thread_id": "mcp-env"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.NoError(t, cs.Close())
	_ = inW.Close()
	cancel()
	require.Equal(t, exitOK, <-done, errOut.String())

	code, stdout, stderr := c.run("runs", "list", "--json", "--thread", "mcp-env")
	require.Equal(t, exitOK, code, stderr)
	var list []struct {
		ID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &list))
	require.Len(t, list, 1)
	assert.Equal(t, runs.CodeExecOff, recordedEnv(t, c, list[0].ID).CodeExec)
	replayNoDivergence(t, c, list[0].ID)
}

// TestToolsListShowsThePythonToolAsRunGivesIt: coorflow tools list
// reports the tools as coorflow run compiles them (runEnvironment), not
// the stand-in of a server where code execution is off (issue 31).
func TestToolsListShowsThePythonToolAsRunGivesIt(t *testing.T) {
	code, stdout, stderr := newCLI(t).run("tools", "list", "../../examples/research")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "python")
	assert.NotContains(t, stdout, "Disabled on this server")
}

// TestAWorkersEnvironmentChecksTheRunsItIsGiven: a worker's environment
// refuses a run that records another code execution than its own, in
// either direction, or other optional tools left out than its compile of
// the run's graph, saying what to change; it takes a run that records
// the same (sandbox and local both run code: the models see the same
// tool) and one that records none (an older caller's).
func TestAWorkersEnvironmentChecksTheRunsItIsGiven(t *testing.T) {
	off, on := servedEnvironment(t.Context(), false), servedEnvironment(t.Context(), true)
	rt := func(c runs.CodeExec) map[string]string {
		return map[string]string{runs.RuntimeEnv: runs.Env{CodeExec: c}.Encode()}
	}
	require.NoError(t, on.checkRun("coor", rt(runs.CodeExecSandbox)))
	require.NoError(t, on.checkRun("coor", rt(runs.CodeExecLocal)))
	require.NoError(t, off.checkRun("coor", rt(runs.CodeExecOff)))
	require.NoError(t, off.checkRun("coor", nil))
	err := on.checkRun("coor", rt(runs.CodeExecOff))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "workflow coor: this worker runs code (worker --allow-code-exec), but the run was started for workers that do not (code execution off)")
	assert.Contains(t, err.Error(), "run --temporal --allow-code-exec")
	err = off.checkRun("coor", rt(runs.CodeExecSandbox))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this worker runs no code (started without --allow-code-exec), but the run was started for workers that do (code execution sandbox)")
	require.Error(t, off.checkRun("coor", map[string]string{runs.RuntimeEnv: "{"}), "an environment that cannot be read is refused")

	// The optional tools left out must be the same too.
	on.left.named("coor", "builtin:coor")
	on.left.add("builtin:coor", "web_search")
	err = on.checkRun("coor", rt(runs.CodeExecSandbox))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "workflow coor: this worker's compile of it left out web_search, the run's caller's nothing")
	assert.Contains(t, err.Error(), "give the workers and the caller the same keys and servers")
	same := map[string]string{runs.RuntimeEnv: runs.Env{CodeExec: runs.CodeExecSandbox, LeftOut: []string{"web_search"}}.Encode()}
	require.NoError(t, on.checkRun("coor", same))
	require.NoError(t, on.checkRun("other", rt(runs.CodeExecSandbox)), "another graph left nothing out")
}
