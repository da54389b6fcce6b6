package trace_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/trace"
	tracemem "github.com/coorflow/coorflow/trace/memory"
)

// TestFlushWritesTheEventsObservedSoFar: after Flush the events a run
// observed are in the store, before the run finishes: what a replica
// that takes the run over continues from.
func TestFlushWritesTheEventsObservedSoFar(t *testing.T) {
	store := tracemem.New()
	rec := trace.NewRecorder(store, trace.RecorderConfig{})
	t.Cleanup(func() { require.NoError(t, rec.Close(context.Background())) })
	rr, err := rec.Begin(t.Context(), trace.RunInfo{ID: "r", Graph: "g"})
	require.NoError(t, err)
	now := time.Now()
	for _, k := range []graph.EventKind{graph.EventRunStart, graph.EventNodeStart, graph.EventNodeEnd} {
		rr.Observe(graph.Event{Kind: k, Path: "g", Time: now})
	}
	require.NoError(t, rr.Flush(t.Context()))
	evs, err := store.Events(t.Context(), "r", trace.EventQuery{})
	require.NoError(t, err)
	assert.Len(t, evs, 3, "every event observed before Flush is written")
	require.NoError(t, rr.Finish(t.Context(), nil))

	require.NoError(t, rec.Close(context.Background()))
	assert.ErrorIs(t, rr.Flush(t.Context()), trace.ErrClosed, "a closed recorder says so")
}
