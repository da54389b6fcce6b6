package temporalrun

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/pgtest"
)

func newLog(t *testing.T, cfg EventLogConfig) *EventLog {
	t.Helper()
	pool := pgtest.Pool(t)
	cfg.Schema = pgtest.Schema(t, pool, "coorflow_events_")
	l := NewEventLog(pool, cfg)
	require.NoError(t, l.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	return l
}

// TestEventLogNumbersConcurrentAppendsWithoutGaps: writers appending to
// one thread at once get consecutive numbers, in commit order, and each
// writer's frames keep their order; a reader woken by the notification
// reads them all.
func TestEventLogNumbersConcurrentAppendsWithoutGaps(t *testing.T) {
	l := newLog(t, EventLogConfig{})
	after, err := l.begin(t.Context(), "t")
	require.NoError(t, err)
	woken := l.changed("t")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				_, err := l.append(t.Context(), "t", [][]byte{fmt.Appendf(nil, "%d-%d", w, i)})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	<-woken
	frames, err := l.read(t.Context(), "t", after, 100)
	require.NoError(t, err)
	require.Len(t, frames, 40)
	next := map[byte]int{}
	for i, f := range frames {
		assert.Equal(t, after+int64(i)+1, f.seq, "no gaps")
		w, n := f.data[0], f.data[2:]
		assert.Equal(t, strconv.Itoa(next[w]), string(n), "writer %c in order", w)
		next[w]++
	}
}

// TestEventLogBoundsWhatAThreadHolds: beyond MaxFrames (or MaxBytes)
// unread, appends are dropped and counted; reading frees the room; a new
// stream starts empty.
func TestEventLogBoundsWhatAThreadHolds(t *testing.T) {
	l := newLog(t, EventLogConfig{MaxFrames: 3, MaxBytes: 1 << 10})
	ctx := t.Context()
	_, err := l.begin(ctx, "t")
	require.NoError(t, err)
	dropped, err := l.append(ctx, "t", [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")})
	require.NoError(t, err)
	assert.Equal(t, 1, dropped)
	frames, err := l.read(ctx, "t", 0, 10)
	require.NoError(t, err)
	require.Len(t, frames, 3)
	require.NoError(t, l.consume(ctx, "t", frames[2].seq))
	dropped, err = l.append(ctx, "t", [][]byte{make([]byte, 2<<10), []byte("e")})
	require.NoError(t, err)
	assert.Equal(t, 1, dropped, "the one over MaxBytes")
	n, err := l.dropped(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)

	last, err := l.begin(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, frames[2].seq+1, last, "numbers go on")
	frames, err = l.read(ctx, "t", 0, 10)
	require.NoError(t, err)
	assert.Empty(t, frames, "a new stream deletes what the last one left")
	n, err = l.dropped(ctx, "t")
	require.NoError(t, err)
	assert.Zero(t, n)
}

// TestEventLogPruneDeletesWhatNobodyRead: Prune deletes the frames of
// threads older than the age given, and only those.
func TestEventLogPruneDeletesWhatNobodyRead(t *testing.T) {
	l := newLog(t, EventLogConfig{})
	ctx := t.Context()
	_, err := l.append(ctx, "t", [][]byte{[]byte("a")})
	require.NoError(t, err)
	require.NoError(t, l.Prune(ctx, 1<<40))
	frames, err := l.read(ctx, "t", 0, 10)
	require.NoError(t, err)
	assert.Len(t, frames, 1, "younger than the age: kept")
	require.NoError(t, l.Prune(ctx, 0))
	frames, err = l.read(ctx, "t", 0, 10)
	require.NoError(t, err)
	assert.Empty(t, frames)
}

// TestEventLogMustBeStarted says what is missing.
func TestEventLogMustBeStarted(t *testing.T) {
	l := NewEventLog(pgtest.Pool(t), EventLogConfig{})
	_, err := l.begin(t.Context(), "t")
	assert.EqualError(t, err, "temporalrun: start the events of thread \"t\": temporalrun: the event log is not started (EventLog.Start)")
}

// BenchmarkEventLogRoundTrip measures the event log alone: one frame
// appended, the reader woken by its notification and reading it, one at a
// time.
func BenchmarkEventLogRoundTrip(b *testing.B) {
	pool := pgtest.Pool(b)
	l := NewEventLog(pool, EventLogConfig{Schema: pgtest.Schema(b, pool, "coorflow_events_")})
	require.NoError(b, l.Start(b.Context()))
	defer l.Close()
	after, err := l.begin(b.Context(), "t")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		woken := l.changed("t")
		_, err := l.append(b.Context(), "t", [][]byte{[]byte(`{"ev":{}}`)})
		require.NoError(b, err)
		<-woken
		frames, err := l.read(b.Context(), "t", after, 10)
		require.NoError(b, err)
		after = frames[len(frames)-1].seq
		require.NoError(b, l.consume(b.Context(), "t", after))
	}
}

// TestEventLogPruneKeepsALiveReadersNumbering: a stream quiet for longer
// than Prune's age (a long step emitting nothing) loses its row to Prune;
// the frames appended after are still numbered after those its reader
// read, so the reader gets them.
func TestEventLogPruneKeepsALiveReadersNumbering(t *testing.T) {
	l := newLog(t, EventLogConfig{})
	ctx := t.Context()
	after, err := l.begin(ctx, "t")
	require.NoError(t, err)
	_, err = l.append(ctx, "t", [][]byte{[]byte("a"), []byte("b")})
	require.NoError(t, err)
	frames, err := l.read(ctx, "t", after, 10)
	require.NoError(t, err)
	require.Len(t, frames, 2)
	after = frames[1].seq
	require.NoError(t, l.consume(ctx, "t", after))
	require.NoError(t, l.Prune(ctx, 0))
	_, err = l.append(ctx, "t", [][]byte{[]byte("c")})
	require.NoError(t, err)
	frames, err = l.read(ctx, "t", after, 10)
	require.NoError(t, err)
	require.Len(t, frames, 1, "the frame appended after the prune")
	assert.Equal(t, "c", string(frames[0].data))
}

// TestEventLogPruneDeletesMoreThreadsThanABatch: Prune goes on, a batch
// of threads at a time, until no thread older than the age is left.
func TestEventLogPruneDeletesMoreThreadsThanABatch(t *testing.T) {
	l := newLog(t, EventLogConfig{})
	ctx := t.Context()
	for i := range 2*pruneBatch + 1 {
		_, err := l.append(ctx, "t"+strconv.Itoa(i), [][]byte{[]byte("a")})
		require.NoError(t, err)
	}
	require.NoError(t, l.Prune(ctx, 0))
	schema := pgx.Identifier{l.cfg.Schema}.Sanitize()
	var threads, frames int
	require.NoError(t, l.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+schema+`.temporal_event_streams),
		(SELECT count(*) FROM `+schema+`.temporal_events)`).Scan(&threads, &frames))
	assert.Zero(t, threads)
	assert.Zero(t, frames)
}
