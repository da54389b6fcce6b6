package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// TestAnEvaluationStopsWhenItsContextEnds holds the second half of
// finding 8 of issue 26: cancelling a run, or its node's timeout, did not
// stop an evaluation in progress. The evaluation now looks at its context
// every 64 steps.
func TestAnEvaluationStopsWhenItsContextEnds(t *testing.T) {
	sc := newScope(nil, nil)
	p, err := sc.compileExpr(`let r = 1..1000; all(r, {all(r, {# > 0})})`, true)
	require.NoError(t, err)
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("the run was cancelled")
	cancel(stop)
	ok, err := sc.evalBool(ctx, p, graph.State{})
	assert.False(t, ok)
	require.ErrorIs(t, err, stop)
	assert.ErrorContains(t, err, "workflows: the evaluation was stopped: the run was cancelled")

	m := newMeter(ctx)
	steps := 0
	for {
		if _, err := m.step(); err != nil {
			break
		}
		steps++
	}
	assert.Less(t, steps, exprCheckEvery, "it stopped within %d steps", exprCheckEvery)
}
