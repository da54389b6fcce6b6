package server_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/internal/a2atest"
	"github.com/coorflow/coorflow/server"
)

// a2aTools describes the test workflows as agents.
var a2aTools = map[string]server.MCPTool{
	"echo":  mcpTools["echo"],
	"ask":   mcpTools["ask"],
	"block": {Description: "Runs until cancelled.", Input: "log", Output: "log"},
}

// TestA2AOfficialClientSendsStreamsGetsCancelsAndAnswers drives the
// server with the official A2A client (@a2a-js/sdk): a task sent, a
// second one streamed on its context, got and listed; a task that asks a
// question, answered by the next message on it; a task cancelled while it
// runs; and what another owner gets for all of them.
func TestA2AOfficialClientSendsStreamsGetsCancelsAndAnswers(t *testing.T) {
	for _, binding := range []string{a2a.BindingJSONRPC, a2a.BindingREST} {
		t.Run(binding, func(t *testing.T) { officialClientScenario(t, binding, 0) })
	}
}

// TestA2AOfficialClientThroughThreeReplicas plays the same scenario with
// the official client against three replicas sharing runs on one
// PostgreSQL, behind a round-robin proxy: each request of the client
// reaches the next replica, so a task is sent, got, streamed, answered
// and cancelled through different replicas.
func TestA2AOfficialClientThroughThreeReplicas(t *testing.T) {
	for _, binding := range []string{a2a.BindingJSONRPC, a2a.BindingREST} {
		t.Run(binding, func(t *testing.T) { officialClientScenario(t, binding, 3) })
	}
}

// officialClientScenario runs client.mjs against one server, or against
// replicas behind a round-robin proxy when replicas is not zero.
func officialClientScenario(t *testing.T, binding string, replicas int) {
	a2atest.NodeModules(t) // before the replicas need PostgreSQL
	b := newBlocker(t)
	cfg := server.Config{Workflows: workflows(echoGraph(t), askGraph(t, false), b.r), MCPTools: a2aTools}
	var url string
	if replicas == 0 {
		url = newEnv(t, cfg).hs.URL
	} else {
		url = roundRobin(t, newReplicaSet(t, replicas, time.Minute, cfg).envs)
	}
	rep := a2atest.RunClient(t, a2atest.ClientEnv{URL: url, Key: alice, OtherKey: bob, Echo: "echo", Ask: "ask", Block: "block", Binding: binding})
	assert.Equal(t, binding, rep.Binding, "the SDK spoke the binding asked for")

	assert.Equal(t, []string{"ask", "block", "echo"}, rep.CardSkills, "the server's card: every workflow a skill")
	assert.Equal(t, "echo", rep.EchoCard.Name)
	require.Len(t, rep.EchoCard.Skills, 1)
	assert.Contains(t, rep.EchoCard.Skills[0], "Shouts a text.", "the skill has the workflow's description")
	assert.Contains(t, rep.EchoCard.Skills[0], `{"type":"string"}`, "and its input schema")

	assert.Equal(t, "task", rep.Send.Kind)
	assert.Equal(t, "TASK_STATE_COMPLETED", rep.Send.State)
	assert.Equal(t, "HELLO", rep.Send.Answer)

	assert.Equal(t, rep.Send.ContextID, rep.Stream.ContextID, "the streamed task is on the same context")
	assert.NotEqual(t, rep.Send.TaskID, rep.Stream.TaskID, "a new task")
	assert.Equal(t, "task", rep.Stream.Events[0], "a stream starts with the task")
	assert.Contains(t, rep.Stream.Events, "statusUpdate")
	assert.Equal(t, "artifactUpdate", rep.Stream.Events[len(rep.Stream.Events)-2])
	assert.Equal(t, "TASK_STATE_COMPLETED", rep.Stream.Final, "it ends with the final status")
	assert.Equal(t, "AGAIN", rep.Stream.Answer)

	assert.Equal(t, "TASK_STATE_COMPLETED", rep.Get.State)
	assert.Equal(t, "HELLO", rep.Get.Answer)
	assert.Equal(t, 1, rep.Get.History, "the message that started it")
	want := []string{rep.Send.TaskID, rep.Stream.TaskID}
	assert.ElementsMatch(t, want, rep.List, "the context's two tasks")

	assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", rep.Ask.State)
	assert.Contains(t, rep.Ask.Question, "approve draft?")
	assert.Equal(t, "TASK_STATE_COMPLETED", rep.Answer.State)
	assert.True(t, rep.Answer.SameTask, "the answer continues the task")
	var log []string
	require.NoError(t, json.Unmarshal([]byte(rep.Answer.Answer), &log), rep.Answer.Answer)
	assert.Equal(t, []string{"draft ok=true", "after"}, log)
	assert.Equal(t, "UnsupportedOperationError", rep.AnswerAgain.Name, "a completed task takes no more answers: %s", rep.AnswerAgain.Message)

	assert.Contains(t, []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}, rep.Started, "returnImmediately answers before the run ends")
	assert.Equal(t, "TASK_STATE_CANCELED", rep.Cancel.State)
	assert.Equal(t, "TASK_STATE_CANCELED", rep.Cancel.Afterwards)
	assert.Equal(t, int32(0), b.counts()["c"], "the cancelled run stopped before its last node")
	assert.Equal(t, "TaskNotCancelableError", rep.CancelAgain.Name, rep.CancelAgain.Message)

	assert.Equal(t, "TaskNotFoundError", rep.UnknownTask.Name)
	for name, f := range map[string]a2atest.Failure{"get": rep.OtherGet, "cancel": rep.OtherCancel, "answer": rep.OtherAnswer} {
		assert.Equal(t, "TaskNotFoundError", f.Name, "another owner's %s: %s", name, f.Message)
		assert.True(t, strings.Contains(f.Message, "not found"), f.Message)
	}
	assert.Zero(t, rep.OtherList, "bob lists none of alice's tasks")
}
