package workflows_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/workflows"
)

// runFile parses src, compiles it and runs it to the end.
func runFile(t *testing.T, name, src string, opts ...workflows.LoadOption) ([]string, graph.State, error) {
	t.Helper()
	f, err := workflows.Parse(name, []byte(src), opts...)
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	return runPath(t, r, nil)
}

const counterFile = `apiVersion: coorflow/v1
name: counter
state:
  n: {type: integer}
  log: {type: array, items: {type: string}, reducer: append}
  done: {type: boolean}
nodes:
  tick:
    type: router
    routes: [{when: "state.n < 3", to: tick}, {to: end}]
    set: {n: "state.n + 1", log: "'saw ' + string(state.n)", done: true}
edges:
  - {from: start, to: tick}
`

// TestSetWritesComputedValuesOnTheStateTheNodeSaw runs a loop that only
// set can end: the counter is written by the node that routes on it, and
// every value is computed from the state the node saw (the route too).
func TestSetWritesComputedValuesOnTheStateTheNodeSaw(t *testing.T) {
	path, final, err := runFile(t, "counter.yaml", counterFile)
	require.NoError(t, err)
	assert.Equal(t, []string{"tick", "tick", "tick", "tick"}, path, "routed on n as the node saw it: 0, 1, 2 loop, 3 ends")
	n, _ := final.Value("n")
	assert.EqualValues(t, 4, n, "the last run wrote 3 + 1")
	log, _ := final.Value("log")
	assert.Equal(t, []any{"saw 0", "saw 1", "saw 2", "saw 3"}, log, "an append channel takes one item")
	done, _ := final.Value("done")
	assert.Equal(t, true, done, "a YAML boolean is that value")
}

// TestALoopWithoutAnExitNamesTheFilesStepLimitSetting: the error a YAML
// user sees names the setting of the file, not Go's option.
func TestALoopWithoutAnExitNamesTheFilesStepLimitSetting(t *testing.T) {
	src := `apiVersion: coorflow/v1
name: forever
state:
  n: {type: integer}
settings: {step_limit: 5}
nodes:
  tick: {type: router, routes: [{when: "state.n < 3", to: tick}, {to: end}]}
edges:
  - {from: start, to: tick}
`
	_, _, err := runFile(t, "forever.yaml", src)
	require.ErrorIs(t, err, graph.ErrStepLimit)
	assert.EqualError(t, err, "graph: step limit of 5 reached (last step ran tick); raise it with settings.step_limit in forever.yaml if the loop is intended")
	assert.NotContains(t, err.Error(), "graph.StepLimit")
}

// TestSetIsTypeCheckedWhenTheFileLoads reports every set entry that
// cannot be written, with file:line:column.
func TestSetIsTypeCheckedWhenTheFileLoads(t *testing.T) {
	src := `apiVersion: coorflow/v1
name: typed
input: topic
output: draft
state:
  topic: {type: string}
  draft: {type: string}
  revisions: {type: integer}
  score: {type: number}
models:
  basic: {provider: openai, model: gpt-4o-mini}
nodes:
  write:
    type: llm
    prompt: "Write about {{ state.topic }}."
    output: draft
    set:
      revisions: "state.topic + '!'"
      score: "state.revisions / 2"
      draft: "'x'"
      count: "1"
      topic: "state.nope"
  half:
    type: router
    routes: [{to: end}]
    set: {revisions: "state.score / 2", score: "state.revisions"}
edges:
  - {from: start, to: write}
  - {from: write, to: half}
`
	assert.Equal(t, []string{
		`typed.yaml:18:18: nodes.write.set.revisions: "state.topic + '!'" is text, but channel revisions takes a whole number`,
		`typed.yaml:20:7: nodes.write.set.draft: node "write" writes channel "draft" itself (output); set cannot write it too`,
		`typed.yaml:21:14: nodes.write.set.count: unknown channel "count" (declare it under state, or use one of: topic, draft, revisions, score)`,
		`typed.yaml:22:21: nodes.write.set.topic: bad expression: unknown field nope: the file declares no channel nope (declare it under state)`,
		`typed.yaml:26:22: nodes.half.set.revisions: "state.score / 2" is a number with a fraction (convert it with int(...)), but channel revisions takes a whole number`,
	}, parseProblems(t, "typed.yaml", []byte(src)))
}

// TestASetValueOutsideItsChannelsSchemaFailsTheNode: what load cannot
// know (a value's range) is checked when the node runs.
func TestASetValueOutsideItsChannelsSchemaFailsTheNode(t *testing.T) {
	src := `apiVersion: coorflow/v1
name: bounded
state:
  n: {type: integer, maximum: 1}
nodes:
  tick: {type: router, routes: [{when: "state.n < 5", to: tick}, {to: end}], set: {n: "state.n + 1"}}
edges:
  - {from: start, to: tick}
`
	path, _, err := runFile(t, "bounded.yaml", src)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `workflows: node "tick" wrote a bad value: channel "n": must be <= 1 but found 2 (set n: "state.n + 1")`)
	assert.Equal(t, []string{"tick", "tick"}, path, "the first run wrote 1, the second failed")
}

// TestEdgesAndRoutesSetChannelsWhenTheyAreTaken: a branch counts the
// revisions it asks for, a static edge and a router's route write when
// taken, and an edge's set is written in a step of its own.
func TestEdgesAndRoutesSetChannelsWhenTheyAreTaken(t *testing.T) {
	src := `apiVersion: coorflow/v1
name: edges
config: {max: 2}
state:
  score: {type: number}
  revisions: {type: integer}
  started: {type: boolean}
  route: {type: string}
nodes:
  grade: {type: go, func: nothing}
  pick:
    type: router
    routes:
      - {when: "state.revisions >= config.max", to: end, set: {route: "'done after ' + string(state.revisions)"}}
      - {to: grade}
edges:
  - {from: start, to: pick, set: {started: true}}
  - from: grade
    branches:
      - {when: "state.revisions < config.max", to: pick, set: {revisions: "state.revisions + 1"}}
      - {to: end}
`
	nothing := func(context.Context, graph.State) (graph.Command, error) { return graph.Command{}, nil }
	f, err := workflows.Parse("edges.yaml", []byte(src), workflows.WithFuncs(map[string]graph.NodeFunc{"nothing": nothing}))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	path, final, err := runPath(t, r, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"start->pick", "pick", "grade", "grade->pick", "pick", "grade", "grade->pick", "pick"}, path)
	for ch, want := range map[string]any{"started": true, "revisions": 2, "route": "done after 2"} {
		v, _ := final.Value(ch)
		assert.EqualValues(t, want, v, ch)
	}
	assert.Contains(t, r.Mermaid(), `["grade->pick"]`, "the edge's step is drawn")
}

func TestAJoinOrAConditionalEdgeCannotSetChannels(t *testing.T) {
	src := `apiVersion: coorflow/v1
name: joins
state:
  n: {type: integer}
nodes:
  a: {type: router, routes: [{to: c}]}
  b: {type: router, routes: [{to: c}]}
  c: {type: router, routes: [{to: end}]}
edges:
  - {from: start, to: a, set: {n: "'one'"}}
  - {from: start, to: b}
  - {join: [a, b], to: c, set: {n: 1}}
  - {from: c, branches: [{to: end}], set: {n: 1}}
`
	assert.Equal(t, []string{
		`joins.yaml:10:35: edges[0].set.n: "'one'" is text, but channel n takes a whole number`,
		`joins.yaml:12:27: edges[2].set: a join cannot set channels: set them on the edges or nodes before it`,
		`joins.yaml:13:38: edges[3].set: a conditional edge sets channels on its branches: move set into the branch that writes them`,
	}, parseProblems(t, "joins.yaml", []byte(src)))
}
