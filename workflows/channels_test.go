package workflows_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/workflows"
)

// oneNode is a workflow of one node, with the state it declares.
func oneNode(node, state string) string {
	return fmt.Sprintf(`apiVersion: coorflow/v1
name: wf
state: {%s}
nodes:
  a: %s
edges:
  - {from: start, to: a}
  - {from: a, to: end}
`, state, node)
}

// TestAFileGetsTheChannelsOfTheNodeTypesItUses shows that a file's graph
// has the prebuilt channels of its nodes' types and the channels it
// declares, not every prebuilt channel; a declared channel named like a
// prebuilt one is the prebuilt channel, typed.
func TestAFileGetsTheChannelsOfTheNodeTypesItUses(t *testing.T) {
	cases := []struct {
		name, node, state string
		want              []string // name and Go type
	}{
		{"llm nodes only", `{type: llm, prompt: "hi", output: draft}`, `draft: {type: string}`,
			[]string{"draft interface {}"}},
		{"a reporter", `{type: reporter}`, `notes: {type: string}`,
			[]string{"messages []nodes.ChatMessage", "request string", "locale string", "plan *plan.Plan", "findings []plan.Finding", "answer string", "turn nodes.Turn", "turns []nodes.Turn", "notes interface {}"}},
		{"a declared prebuilt channel", `{type: llm, prompt: "hi", output: request}`, `request: {type: string}`,
			[]string{"request string"}},
	}
	ms := staticModels(t, scripted.New(scripted.Script{}))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := workflows.Parse("wf.yaml", []byte(oneNode(c.node, c.state)))
			require.NoError(t, err)
			r, err := f.Compile(t.Context(), workflows.Env{Models: ms})
			require.NoError(t, err)
			var got []string
			for _, ch := range r.Channels() {
				got = append(got, ch.Name()+" "+ch.ValueType().String())
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// TestASubgraphSharesAPrebuiltChannelItDeclares shows why a declared
// prebuilt channel is the typed one: a subgraph of llm nodes that writes
// request shares it with a parent whose reporter reads it.
func TestASubgraphSharesAPrebuiltChannelItDeclares(t *testing.T) {
	dir := t.TempDir()
	child := oneNode(`{type: llm, prompt: "Restate the task.", output: request}`, `request: {type: string}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "child.yaml"), []byte(child), 0o644))
	parent := `apiVersion: coorflow/v1
name: parent
nodes:
  restate: {type: subgraph, file: child.yaml}
  report: {type: reporter}
edges:
  - {from: start, to: restate}
  - {from: restate, to: report}
  - {from: report, to: end}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "parent.yaml"), []byte(parent), 0o644))
	f, err := workflows.Load(filepath.Join(dir, "parent.yaml"))
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"a":        {{Text: "Compare two engines"}},
		"reporter": {{Text: "# Report"}},
	}})
	r, err := f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model)})
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	v, _ := res.State.Value("answer")
	assert.Equal(t, "# Report", v)
	assert.Contains(t, model.CallsFor("reporter")[0].Prompt(), "# Request\nCompare two engines", "the reporter read the subgraph's request")
}
