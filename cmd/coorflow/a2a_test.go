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

	"github.com/coorflow/coorflow/a2a"
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

const a2aEchoFile = `apiVersion: coorflow/v1
name: echo
description: Shouts a text.
input: text
output: answer
state:
  text: {type: string}
  answer: {type: string}
nodes:
  shout:
    type: router
    routes:
      - {to: end, set: {answer: "upper(state.text)"}}
edges:
  - {from: start, to: shout}
`

const a2aAskFile = `apiVersion: coorflow/v1
name: ask
description: Asks for approval.
input: text
output: answer
state:
  text: {type: string}
  answer: {type: string}
tools:
  ask_human: {}
nodes:
  ask:
    type: tool
    tool: ask_human
    args:
      question: "'approve ' + state.text + '?'"
    output: answer
edges:
  - {from: start, to: ask}
  - {from: ask, to: end}
`

// TestTheA2ASDKDrivesServeAndAnotherCoorflowCallsIt: the official A2A
// client sends, streams, gets, cancels and answers tasks of `coorflow
// serve`, whose owners stay apart; then `coorflow run` of a file whose
// tools.a2a names the served echo workflow calls it over A2A.
func TestTheA2ASDKDrivesServeAndAnotherCoorflowCallsIt(t *testing.T) {
	a2atest.NodeModules(t) // skip before building when the SDK is absent
	bin := buildCoorflow(t)
	dir := t.TempDir()
	_, slow := platformWorkflows(t, dir)
	files := map[string]string{"echo.yaml": a2aEchoFile, "ask.yaml": a2aAskFile}
	var paths []string
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		paths = append(paths, p)
	}
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("alice-secret=alice\nbob-secret=bob\n"), 0o600))
	url := startServe(t, bin, append(paths, slow, "--db", filepath.Join(dir, "coorflow.db"), "--token-file", tokens)...)

	rep := a2atest.RunClient(t, a2atest.ClientEnv{URL: url, Key: "alice-secret", OtherKey: "bob-secret", Echo: "echo", Ask: "ask", Block: "slow"})
	assert.Equal(t, []string{"ask", "echo", "slow"}, rep.CardSkills)
	assert.Contains(t, rep.EchoCard.Skills[0], "Shouts a text.")
	assert.Equal(t, "TASK_STATE_COMPLETED", rep.Send.State)
	assert.Equal(t, "HELLO", rep.Send.Answer)
	assert.Equal(t, "TASK_STATE_COMPLETED", rep.Stream.Final)
	assert.Equal(t, "AGAIN", rep.Stream.Answer)
	assert.Equal(t, rep.Send.ContextID, rep.Stream.ContextID)
	assert.Equal(t, "TASK_STATE_COMPLETED", rep.Get.State)
	assert.Len(t, rep.List, 2)
	assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", rep.Ask.State)
	assert.Contains(t, rep.Ask.Question, "approve draft?")
	assert.Equal(t, "TASK_STATE_COMPLETED", rep.Answer.State)
	assert.True(t, rep.Answer.SameTask)
	assert.Contains(t, rep.Answer.Answer, "true", "the answer reached the workflow")
	assert.Equal(t, "TASK_STATE_CANCELED", rep.Cancel.State)
	assert.Equal(t, "TASK_STATE_CANCELED", rep.Cancel.Afterwards)
	for name, f := range map[string]a2atest.Failure{"get": rep.OtherGet, "cancel": rep.OtherCancel, "answer": rep.OtherAnswer, "unknown": rep.UnknownTask} {
		assert.Equal(t, "TaskNotFoundError", f.Name, "%s: %s", name, f.Message)
	}
	assert.Zero(t, rep.OtherList)

	// Another coorflow calls the served echo workflow as its tool.
	caller := filepath.Join(dir, "caller.yaml")
	body := strings.Replace(fmt.Sprintf(a2aAskerWorkflow, url+"/a2a/echo/"), "timeout: 5m}", "timeout: 5m, bearer_env: ECHO_TOKEN}", 1)
	require.NoError(t, os.WriteFile(caller, []byte(body), 0o600))
	cmd := exec.CommandContext(t.Context(), bin, "run", caller, "--allow-env", "ECHO_TOKEN", "--input", "from afar", "--db", filepath.Join(dir, "caller.db"))
	cmd.Env = append(os.Environ(), "ECHO_TOKEN=alice-secret", "COORFLOW_ALLOW_ENDPOINTS="+url)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "FROM AFAR")

	// The served ask workflow asks a question: it interrupts the calling
	// run, and --resume answers it on the same remote task.
	remote, err := a2a.Dial(t.Context(), url+"/a2a/ask/", a2a.WithBearer("alice-secret"))
	require.NoError(t, err)
	before, err := remote.ListTasks(t.Context(), a2a.ListTasksRequest{})
	require.NoError(t, err)
	asks := filepath.Join(dir, "asks.yaml")
	body = strings.Replace(fmt.Sprintf(a2aAskerWorkflow, url+"/a2a/ask/"), "timeout: 5m}", "timeout: 5m, bearer_env: ECHO_TOKEN}", 1)
	require.NoError(t, os.WriteFile(asks, []byte(body), 0o600))
	runAsks := func(args ...string) (string, int) {
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"run", asks, "--allow-env", "ECHO_TOKEN", "--thread", "q1", "--db", filepath.Join(dir, "asks.db")}, args...)...)
		cmd.Env = append(os.Environ(), "ECHO_TOKEN=alice-secret", "COORFLOW_ALLOW_ENDPOINTS="+url)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil {
			require.ErrorAs(t, err, &exit, "%s", out)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	out2, code := runAsks("--input", "the plan")
	require.Equal(t, exitInterrupted, code, out2)
	assert.Contains(t, out2, "approve the plan?", "the remote question, asked of the caller's human")
	out2, code = runAsks("--resume", "approved by Ada")
	require.Equal(t, exitOK, code, out2)
	assert.Contains(t, out2, "approved by Ada", "the remote task's answer")
	after, err := remote.ListTasks(t.Context(), a2a.ListTasksRequest{})
	require.NoError(t, err)
	require.Len(t, after.Tasks, len(before.Tasks)+1, "one remote task, continued by the answer")
	assert.Equal(t, a2a.StateCompleted, after.Tasks[0].Status.State)
}
