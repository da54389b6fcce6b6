package trace_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
)

// stuck is a store that ignores a query's After from call from on: it
// gives the run's first page again.
type stuck struct {
	trace.Store
	from, calls int
}

func (s *stuck) Events(ctx context.Context, id string, q trace.EventQuery) ([]trace.Event, error) {
	s.calls++
	if s.calls >= s.from {
		q.After = 0
	}
	q.Limit = 2
	return s.Store.Events(ctx, id, q)
}

// TestAllEventsStopsAtAStoreThatDoesNotGoOn: a store that answers a page
// with events not after the last one read fails the reading, rather than
// feeding it the same pages for ever.
func TestAllEventsStopsAtAStoreThatDoesNotGoOn(t *testing.T) {
	s := memory.New()
	require.NoError(t, s.CreateRun(t.Context(), trace.RunInfo{ID: "r", Status: trace.StatusDone, Start: trace.StartInput}))
	var evs []trace.Event
	for i := range int64(9) {
		evs = append(evs, trace.Event{RunID: "r", Seq: i + 1, Kind: "custom", Path: "wf"})
	}
	require.NoError(t, s.AppendEvents(t.Context(), evs))

	var got []int64
	var err error
	for e, e2 := range trace.AllEvents(t.Context(), &stuck{Store: s, from: 3}, "r", trace.EventQuery{}) {
		if e2 != nil {
			err = e2
			break
		}
		got = append(got, e.Seq)
		if len(got) == 50 {
			break
		}
	}
	assert.Equal(t, []int64{1, 2, 3, 4}, got, "two pages, then none again")
	want := `trace: events of run "r": the store gave event 1 after event 4`
	assert.EqualError(t, err, want)
}

func TestAPagesBoundsHaveCeilings(t *testing.T) {
	assert.Equal(t, int64(trace.DefaultEventBytes), trace.EventQuery{}.EffectiveMaxBytes())
	assert.Equal(t, int64(1000), trace.EventQuery{MaxBytes: 1000}.EffectiveMaxBytes())
	assert.Equal(t, int64(trace.MaxEventBytes), trace.EventQuery{MaxBytes: 1 << 40}.EffectiveMaxBytes())
	assert.Equal(t, trace.MaxEventLimit, trace.EventQuery{}.EffectiveLimit())
	assert.Equal(t, trace.MaxEventLimit, trace.EventQuery{Limit: 1 << 30}.EffectiveLimit())
	q := trace.EventQuery{Limit: 2, MaxBytes: 100}
	assert.True(t, q.Fits(0, 0, 1000), "the first event whatever its size")
	assert.True(t, q.Fits(1, 40, 60))
	assert.False(t, q.Fits(1, 40, 61))
	assert.False(t, q.Fits(2, 0, 1), "the limit")
}

// runsAgain is a store that ignores a query's BeforeID: it gives the
// runs started at the cursor's time again.
type runsAgain struct{ trace.Store }

func (s runsAgain) Runs(ctx context.Context, q trace.RunQuery) ([]trace.RunInfo, error) {
	if !q.Before.IsZero() {
		q.Before, q.BeforeID = q.Before.Add(time.Microsecond), ""
	}
	return s.Store.Runs(ctx, q)
}

// TestAllRunsStopsAtAStoreThatDoesNotGoOn: a store that answers a page
// with a run not after the last one read fails the reading, rather than
// feeding it the same pages for ever.
func TestAllRunsStopsAtAStoreThatDoesNotGoOn(t *testing.T) {
	s := memory.New()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, s.CreateRun(t.Context(), trace.RunInfo{ID: id, StartedAt: at}))
	}
	var got []string
	var err error
	for r, e := range trace.AllRuns(t.Context(), runsAgain{s}, trace.RunQuery{Limit: 2}) {
		if e != nil {
			err = e
			break
		}
		got = append(got, r.ID)
	}
	assert.Equal(t, []string{"c", "b"}, got)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `trace: runs: the store gave run "c" (started 2026-01-01T00:00:00Z) after run "b"`)
}
