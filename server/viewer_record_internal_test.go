package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
)

// pagedStore is a trace store whose pages hold page events at most and
// whose Events call number failAt (from 1; 0: none) fails.
type pagedStore struct {
	trace.Store
	page, failAt, calls int
}

var errPage = errors.New("the disk is gone")

func (s *pagedStore) Events(ctx context.Context, id string, q trace.EventQuery) ([]trace.Event, error) {
	s.calls++
	if s.calls == s.failAt {
		return nil, errPage
	}
	if q.Limit <= 0 || q.Limit > s.page {
		q.Limit = s.page
	}
	return s.Store.Events(ctx, id, q)
}

// recordedRun returns a server recording to a store that holds run "r"
// with events 1 to n, in pages of page events.
func recordedRun(t *testing.T, n int64, page, failAt int) (*Server, *run) {
	t.Helper()
	st := memory.New()
	require.NoError(t, st.CreateRun(t.Context(), trace.RunInfo{ID: "r", Status: trace.StatusRunning, StartedAt: time.Now()}))
	var evs []trace.Event
	for i := range n {
		evs = append(evs, trace.Event{RunID: "r", Seq: i + 1, Kind: "custom", Path: "wf", Time: time.Now()})
	}
	require.NoError(t, st.AppendEvents(t.Context(), evs))
	rec := trace.NewRecorder(&pagedStore{Store: st, page: page, failAt: failAt}, trace.RecorderConfig{})
	t.Cleanup(func() { _ = rec.Close(context.Background()) })
	s := &Server{cfg: Config{Recorder: rec}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return s, &run{id: "r", ctx: t.Context()}
}

// A run taken over goes on after the last event recorded, however many
// pages after the last one shared it is.
func TestATakeoverGoesOnAfterTheLastEventRecorded(t *testing.T) {
	s, ru := recordedRun(t, 25, 4, 0)
	assert.Equal(t, int64(25), s.recordedAfter(ru, 3), "six pages after the shared one")
	assert.Equal(t, int64(30), s.recordedAfter(ru, 30), "a recording that got less far than the stream")
}

// A recording that cannot be read to its end goes on after the last event
// read: the events read are there, and a new event numbered as one of
// them would be lost (the store keeps the one it has).
func TestATakeoverWhoseRecordingFailsGoesOnAfterWhatItRead(t *testing.T) {
	s, ru := recordedRun(t, 25, 4, 3)
	assert.Equal(t, int64(11), s.recordedAfter(ru, 3), "two pages of four read after event 3")
	s, ru = recordedRun(t, 25, 4, 1)
	assert.Equal(t, int64(3), s.recordedAfter(ru, 3), "nothing read")
}
