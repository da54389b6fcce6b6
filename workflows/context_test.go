package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
	"github.com/coorflow/coorflow/workflows"
)

// bigTools registers "dump", which returns 1 MiB of text with a marker
// line in its middle.
func bigTools(t *testing.T) *tools.Registry {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		if i == 5000 {
			b.WriteString("MARKER: the answer is 42\n")
			continue
		}
		b.WriteString("line of a very large tool result, nothing to see here ............................\n")
	}
	big := b.String()
	reg, err := tools.NewRegistry(tools.Func("dump", "Dumps the database.", json.RawMessage(`{"type":"object"}`),
		func(context.Context, json.RawMessage) (string, error) { return big, nil }))
	require.NoError(t, err)
	return reg
}

const reactFile = `apiVersion: coorflow/v1
name: dumper
input: question
output: answer
tools:
  dump: {}
state:
  question: {type: string}
  answer: {type: string}
nodes:
  agent:
    type: react
    prompt: "{{ state.question }}"
    output: answer
    tools: [dump]
%CONTEXT%
edges:
  - {from: start, to: agent}
  - {from: agent, to: end}
`

// runDumper runs a react node that calls a tool returning 1 MiB, then
// answers; it returns the model's calls.
func runDumper(t *testing.T, context string) []scripted.Call {
	t.Helper()
	f, err := workflows.Parse("dumper.yaml", []byte(strings.Replace(reactFile, "%CONTEXT%", context, 1)), workflows.WithTools(bigTools(t)))
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"agent": {
		{ToolCalls: []scripted.ToolCall{{Name: "dump", Arguments: `{}`}}},
		{Text: "done"},
	}}})
	r, err := f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model)})
	require.NoError(t, err)
	in, err := f.Input(r, "question", "dump it")
	require.NoError(t, err)
	out, err := r.Invoke(t.Context(), in, graph.Thread("t"))
	require.NoError(t, err)
	v, _ := out.State.Value("answer")
	assert.Equal(t, "done", v)
	calls := model.CallsFor("agent")
	require.Len(t, calls, 2)
	return calls
}

// TestAReactNodeDoesNotSendAHugeToolResultWhole: by default a react node
// has a window: the 1 MiB result of its tool is offloaded to the thread's
// board and the model sees a reference and a preview, and read_context
// among its tools (the whole megabyte went to the model before).
func TestAReactNodeDoesNotSendAHugeToolResultWhole(t *testing.T) {
	calls := runDumper(t, "")
	second := lastText(calls[1].Messages)
	assert.Less(t, len(second), 8<<10, "the model is sent a reference and a preview, not 1 MiB")
	assert.Contains(t, second, "offloaded")
	assert.Contains(t, second, "read_context")
	assert.False(t, strings.Contains(second, "MARKER"), "the middle of the result stays out of the prompt")
	var offered []string
	for _, tl := range calls[0].Options.Tools {
		offered = append(offered, tl.Function.Name)
	}
	assert.ElementsMatch(t, []string{"dump", window.ReadContextName}, offered)
}

// TestAReactNodesContextCanBeTurnedOff: context: {disabled: true} sends
// the conversation as it is; a node's offload threshold is its own.
func TestAReactNodesContextCanBeTurnedOff(t *testing.T) {
	calls := runDumper(t, "    context: {disabled: true}")
	assert.Greater(t, len(lastText(calls[1].Messages)), 1<<20-1, "the whole result")

	calls = runDumper(t, "    context: {offload: {tokens: 500000}}")
	assert.True(t, strings.Contains(lastText(calls[1].Messages), "MARKER"), "under the node's own threshold, kept whole")
}

// TestAContextSectionIsChecked: a misspelt option of a node's context is
// a problem of the file, with its place.
func TestAContextSectionIsChecked(t *testing.T) {
	_, err := workflows.Parse("dumper.yaml", []byte(strings.Replace(reactFile, "%CONTEXT%", "    context: {clear: {keep_turn: 2}}", 1)), workflows.WithTools(bigTools(t)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dumper.yaml:")
	assert.Contains(t, err.Error(), "keep_turn")
}

// TestContextClearExcludeNamesToolsAgentsCanCall: a name in
// context.clear.exclude that no agent of the file can call is an error at
// its line, with the nearest tool suggested (issue 30: a misspelt name
// was accepted, and the results meant to be kept were cleared); the
// file's tools and those the window and memory give agents are accepted.
func TestContextClearExcludeNamesToolsAgentsCanCall(t *testing.T) {
	ok := strings.Replace(reactFile, "%CONTEXT%", "    context: {clear: {exclude: [dump, read_context, recall]}}", 1)
	_, err := workflows.Parse("dumper.yaml", []byte(ok), workflows.WithTools(bigTools(t)))
	require.NoError(t, err)

	bad := strings.Replace(reactFile, "%CONTEXT%", "    context:\n      clear:\n        exclude: [dunp]", 1)
	_, err = workflows.Parse("dumper.yaml", []byte(bad), workflows.WithTools(bigTools(t)))
	require.Error(t, err)
	line := strings.Count(bad[:strings.Index(bad, "dunp")], "\n") + 1
	assert.Contains(t, err.Error(), fmt.Sprintf(`dumper.yaml:%d:`, line))
	assert.Contains(t, err.Error(), `context.clear.exclude names unknown tool "dunp" (did you mean "dump"?)`)

	settings := strings.Replace(reactFile, "nodes:\n", "settings:\n  context: {clear: {exclude: [nothing_like_it]}}\nnodes:\n", 1)
	settings = strings.Replace(settings, "%CONTEXT%", "", 1)
	_, err = workflows.Parse("dumper.yaml", []byte(settings), workflows.WithTools(bigTools(t)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `context.clear.exclude names unknown tool "nothing_like_it" (the tools agents of this file can call: dump, read_context, remember, recall)`)
}
