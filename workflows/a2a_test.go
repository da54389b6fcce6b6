package workflows_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/a2atest"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/workflows"
)

// a2aFile is a workflow whose tool node asks the A2A agent at url.
func a2aFile(url string) string {
	return `apiVersion: coorflow/v1
name: asker
input: question
output: answer
state:
  question: {type: string}
  answer: {type: string}
tools:
  a2a:
    remote: {url: "` + url + `", timeout: 1m}
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
}

// TestAFilesA2AAgentIsATool: an agent of tools.a2a, served by the
// official SDK, is called by a tool node: its answer is the node's
// output, its updates are the run's events, its card's skills the tool's
// description, and its URL one of the file's effects.
func TestAFilesA2AAgentIsATool(t *testing.T) {
	agent := a2atest.StartAgent(t)
	f, err := workflows.Parse(filepath.Join(t.TempDir(), "asker.yaml"), []byte(a2aFile(agent.URL)))
	require.NoError(t, err)
	var effects []string
	for _, e := range f.Effects() {
		effects = append(effects, e.What)
	}
	assert.Contains(t, effects, agent.URL+" (A2A agent remote)")

	r, err := f.Compile(t.Context(), workflows.Env{Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	in, err := f.Input(r, "question", "where?")
	require.NoError(t, err)
	var ups []a2a.Update
	var outputs []string
	for ev, err := range r.Stream(t.Context(), in, graph.Thread("t")) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case a2a.Update:
			ups = append(ups, d)
		case tools.ResultEvent:
			outputs = append(outputs, d.Output)
		}
	}
	assert.Equal(t, []string{"echo: where?"}, outputs, "the tool's result")
	require.NotEmpty(t, ups)
	assert.Equal(t, "remote", ups[0].Agent)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	got, _ := snap.State.Value("answer")
	assert.Equal(t, "echo: where?", got)
	res, err := http.Get(agent.URL + "/count")
	require.NoError(t, err)
	defer res.Body.Close()
	var c struct{ Count int }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&c))
	assert.Equal(t, 1, c.Count)
}

func TestA2ASectionProblemsAreReportedWhereTheyAre(t *testing.T) {
	for _, tc := range []struct{ name, tools, want string }{
		{"no url", "  a2a:\n    r: {timeout: 1m}\n", "tools.a2a.r"},
		{"not http", "  a2a:\n    r: {url: \"ftp://x\"}\n", "tools.a2a.r.url"},
		{"bad bearer_env", "  a2a:\n    r: {url: \"http://x\", bearer_env: \"a-b\"}\n", "tools.a2a.r.bearer_env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: coorflow/v1\nname: wf\nstate: {out: {type: string}}\ntools:\n" + tc.tools +
				"nodes: {a: {type: tool, tool: r, args: {message: \"'x'\"}, output: out}}\nedges: [{from: start, to: a}, {from: a, to: end}]\n"
			_, err := workflows.Parse(filepath.Join(t.TempDir(), "wf.yaml"), []byte(doc))
			var fe *workflows.FileError
			require.True(t, errors.As(err, &fe), "%v", err)
			var got []string
			for _, p := range fe.Problems {
				got = append(got, p.String())
			}
			assert.True(t, strings.Contains(strings.Join(got, "\n"), tc.want), "%s", strings.Join(got, "\n"))
		})
	}
}
