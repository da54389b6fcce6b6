package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/a2atest"
)

const a2aAskerWorkflow = `apiVersion: coorflow/v1
name: asker
input: question
output: answer
state:
  question: {type: string}
  answer: {type: string}
tools:
  a2a:
    remote: {url: %q, timeout: 5m}
nodes:
  ask:
    type: tool
    tool: remote
    args:
      message: state.question
    output: answer
edges:
  - {from: start, to: ask}
  - {from: ask, to: end}
`

// TestAKilledRunDoesNotSendItsA2AMessageAgain: `coorflow run` calls an
// agent of the official A2A SDK's server; coorflow is killed (SIGKILL)
// while it follows the task the agent made of its message. Continuing
// the thread follows the same task to its answer: the agent was sent the
// message once.
func TestAKilledRunDoesNotSendItsA2AMessageAgain(t *testing.T) {
	agent := a2atest.StartAgent(t)
	bin := buildCoorflow(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "asker.yaml")
	require.NoError(t, os.WriteFile(wf, fmt.Appendf(nil, a2aAskerWorkflow, agent.URL+"/slow/"), 0o600))
	db := filepath.Join(dir, "coorflow.db")

	first := exec.CommandContext(t.Context(), bin, "run", wf, "--input", "once only", "--thread", "t1", "--db", db)
	first.Dir = dir
	require.NoError(t, first.Start())
	// The agent got the message, and coorflow, having journaled the task,
	// follows it: the moment to kill.
	for line := range agent.Lines {
		if strings.HasPrefix(line, "subscribed ") {
			break
		}
	}
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()

	res, err := http.Get(agent.URL + "/release")
	require.NoError(t, err)
	res.Body.Close()
	out, err := exec.CommandContext(t.Context(), bin, "run", wf, "--thread", "t1", "--db", db, "--json").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "echo: once only", "the continued run has the task's answer")

	res, err = http.Get(agent.URL + "/count")
	require.NoError(t, err)
	defer res.Body.Close()
	var c struct{ Count int }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&c))
	assert.Equal(t, 1, c.Count, "the agent was sent the message once")
}
