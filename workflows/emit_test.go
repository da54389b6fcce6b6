package workflows_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/workflows"
)

// emitFile counts to 2, and each tick emits an event of its own built
// from state and config.
const emitFile = `apiVersion: coorflow/v1
name: emitting
config: {label: "tick"}
state:
  n: {type: integer}
nodes:
  tick:
    type: router
    emit: '{"stage": config.label, "n": state.n}'
    routes:
      - {when: "state.n < 1", to: tick}
      - {to: end}
    set: {n: "state.n + 1"}
edges:
  - {from: start, to: tick}
`

// TestANodesEmitSendsItsValueToTheStreamAsAPlainCustomEvent: a node's
// emit expression reaches the run's stream as a custom event without a
// name (what the Platform API's custom mode passes on as it is), once per
// run of the node, valued on the state the node starts with and the run's
// config.
func TestANodesEmitSendsItsValueToTheStreamAsAPlainCustomEvent(t *testing.T) {
	f, err := workflows.Parse("emitting.yaml", []byte(emitFile))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	c, _, err := runs.ParseConfig([]byte(`{"label": "step"}`))
	require.NoError(t, err)
	var got []any
	for ev, err := range r.Stream(t.Context(), nil, c.Option()) {
		require.NoError(t, err)
		if ev.Kind == graph.EventCustom {
			assert.Equal(t, "custom", ev.Name(), "a plain value: no name of its own")
			assert.Equal(t, "tick", ev.Node)
			got = append(got, ev.Data)
		}
	}
	assert.Equal(t, []any{
		map[string]any{"stage": "step", "n": 0},
		map[string]any{"stage": "step", "n": 1},
	}, got)
}

// TestABadEmitExpressionIsReportedAtItsLine: the checker compiles emit
// like any expression and says where it is wrong.
func TestABadEmitExpressionIsReportedAtItsLine(t *testing.T) {
	_, err := workflows.Parse("emitting.yaml", []byte(`apiVersion: coorflow/v1
name: emitting
state:
  n: {type: integer}
nodes:
  tick: {type: router, emit: "state.count + 1", routes: [{to: end}]}
edges:
  - {from: start, to: tick}
`))
	var fe *workflows.FileError
	require.True(t, errors.As(err, &fe), "%v", err)
	require.Len(t, fe.Problems, 1)
	assert.Equal(t, `emitting.yaml:6:37: nodes.tick.emit: bad expression: unknown field count: the file declares no channel count (declare it under state)`, fe.Problems[0].String())
}
