package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/workflows"
)

// delayFile waits config.delay seconds in node wait, then writes done.
const delayFile = `apiVersion: coorflow/v1
name: waiting
config: {delay: 0.0}
state:
  done: {type: boolean}
nodes:
  wait:
    type: router
    emit: '{"waiting": config.delay}'
    delay: config.delay
    routes: [{to: end}]
    set: {done: "true"}
edges:
  - {from: start, to: wait}
`

func compileDelay(t *testing.T) *graph.Runnable {
	t.Helper()
	f, err := workflows.Parse("waiting.yaml", []byte(delayFile))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	return r
}

func delayConfig(t *testing.T, raw string) graph.Option {
	t.Helper()
	c, _, err := runs.ParseConfig([]byte(raw))
	require.NoError(t, err)
	return c.Option()
}

// TestANodesDelayComesFromTheRunsConfig: the node waits at least the
// seconds its run's config gives before its work.
func TestANodesDelayComesFromTheRunsConfig(t *testing.T) {
	r := compileDelay(t)
	start := time.Now()
	res, err := r.Invoke(t.Context(), nil, delayConfig(t, `{"delay": 0.2}`))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	v, _ := res.State.Value("done")
	assert.Equal(t, true, v)
}

// TestANodesDelayEndsWithItsRun: a run cancelled while its node waits
// ends at once with the cancellation, the node's work undone.
func TestANodesDelayEndsWithItsRun(t *testing.T) {
	r := compileDelay(t)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stop := errors.New("client cancelled")
	var ran bool
	for ev, err := range r.Stream(ctx, nil, delayConfig(t, `{"delay": 3600}`)) {
		if err != nil {
			assert.ErrorIs(t, err, context.Canceled)
			break
		}
		if ev.Kind == graph.EventCustom && ev.Name() == "custom" {
			cancel(stop) // the node has emitted: it is waiting now
		}
		if ev.Kind == graph.EventRunEnd {
			ran = true
		}
	}
	assert.False(t, ran, "the run did not finish its wait")
}

func TestABadDelaySaysWhatIsWrong(t *testing.T) {
	r := compileDelay(t)
	for raw, want := range map[string]string{
		`{"delay": -1}`:   `is -1 seconds, not from 0 to 3600`,
		`{"delay": 7200}`: `is 7200 seconds, not from 0 to 3600`,
	} {
		_, err := r.Invoke(t.Context(), nil, delayConfig(t, raw))
		require.Error(t, err, raw)
		assert.Contains(t, err.Error(), `node "wait": delay "config.delay": `+want, raw)
	}
	_, err := workflows.Parse("bad.yaml", []byte(`apiVersion: coorflow/v1
name: bad
nodes:
  a: {type: router, delay: 'config.(', routes: [{to: end}]}
edges:
  - {from: start, to: a}
`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.yaml:4")
	assert.Contains(t, err.Error(), "bad expression")
}
