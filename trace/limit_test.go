package trace_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/trace"
	tracemem "github.com/coorflow/coorflow/trace/memory"
)

// TestALimitStopsTheRecordingOfARun: once its limit refuses an event,
// the run records a truncation marker and nothing more; Finish says so,
// and what was stored is what the limit allowed.
func TestALimitStopsTheRecordingOfARun(t *testing.T) {
	store := tracemem.New()
	rec := trace.NewRecorder(store, trace.RecorderConfig{})
	defer rec.Close(context.Background())
	rr, err := rec.Begin(t.Context(), trace.RunInfo{ID: "r", Owner: "alice"})
	require.NoError(t, err)
	var left atomic.Int64
	left.Store(3000)
	rr.Limit(func(n int64) bool {
		if left.Add(-n) < 0 {
			left.Add(n)
			return false
		}
		return true
	})
	big := strings.Repeat("x", 1000)
	for i := range 10 {
		rr.Observe(graph.Event{Kind: graph.EventCustom, Path: "wf", Step: i, Data: map[string]string{"text": big}, Time: time.Now()})
	}
	err = rr.Finish(t.Context(), nil)
	require.ErrorIs(t, err, trace.ErrLimit)

	evs, err := store.Events(t.Context(), "r", trace.EventQuery{})
	require.NoError(t, err)
	require.Len(t, evs, 3, "two events of about 1 KB fit, then the marker")
	last := evs[len(evs)-1]
	assert.Equal(t, trace.KindTruncated, last.Kind)
	assert.Equal(t, int64(3), last.Seq)
	assert.Equal(t, `trace: run "r": its events from 3 on are not recorded: trace: the recording reached its limit`, last.Error)
	var stored int64
	for _, e := range evs[:2] {
		stored += e.Size()
	}
	assert.Equal(t, 3000-left.Load(), stored, "the limit was asked for what was stored")
	run, err := store.Run(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, int64(10), run.Events, "the run's events are numbered still")
}
