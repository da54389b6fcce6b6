package trace_test

import (
	"context"
	"testing"

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
