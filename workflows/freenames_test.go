package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/workflows"
)

// TestAPrebuiltNameIsFreeWithoutTheNodeTypesThatUseIt: plan is the
// planner's channel (a plan object) only in a file with a node type that
// uses it; a file without one declares its own plan, of any type.
func TestAPrebuiltNameIsFreeWithoutTheNodeTypesThatUseIt(t *testing.T) {
	f, err := workflows.Parse("own_plan.yaml", []byte(`apiVersion: coorflow/v1
name: own_plan
state:
  plan: {type: string}
  steps: {type: array, items: {type: string}, reducer: append}
nodes:
  decide:
    type: router
    routes: [{to: end}]
    set: {plan: '"draft, then review"', steps: 'state.plan == "" ? "first" : "again"'}
edges:
  - {from: start, to: decide}
`))
	require.NoError(t, err, "plan: {type: string} is the file's own channel")
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input())
	require.NoError(t, err)
	plan, _ := res.State.Value("plan")
	assert.Equal(t, "draft, then review", plan)
	steps, _ := res.State.Value("steps")
	assert.Equal(t, []any{"first"}, steps)
}
