package temporalrun

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/migrate"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/runs/eventlog"
)

func newLog(t *testing.T, cfg EventLogConfig) *EventLog {
	t.Helper()
	pool := pgtest.Pool(t)
	if cfg.Schema == "" {
		cfg.Schema = pgtest.Schema(t, pool, "coorflow_events_")
	}
	l := NewEventLog(pool, cfg)
	require.NoError(t, l.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	return l
}

// readAll reads thread after id after to its end, a page at a time.
func readAll(t *testing.T, l *EventLog, thread string, after int64) []eventlog.Frame {
	t.Helper()
	var out []eventlog.Frame
	for {
		page, err := l.read(t.Context(), thread, after)
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].ID
	}
}

// TestEventLogNumbersTheEventsOfManyWorkersWithoutGaps: 128 activities
// on four workers (four logs) appending to one thread at once get
// distinct ids, increasing without a gap in the order they were stored,
// and each activity's events keep their order; a reader woken by the
// notification reads them all from the runs' event log.
func TestEventLogNumbersTheEventsOfManyWorkersWithoutGaps(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_events_")
	logs := make([]*EventLog, 4)
	for i := range logs {
		logs[i] = newLog(t, EventLogConfig{Schema: schema})
	}
	after, err := logs[0].begin(t.Context(), "t")
	require.NoError(t, err)
	woken := logs[0].changed("t")
	const writers, each = 128, 3
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			l := logs[w%len(logs)]
			for i := range each {
				assert.NoError(t, l.add("t", fmt.Appendf(nil, "%d-%d", w, i)))
			}
			assert.NoError(t, l.flush("t"))
		})
	}
	wg.Wait()
	<-woken
	frames := readAll(t, logs[0], "t", after)
	require.Len(t, frames, writers*each)
	next := map[int]int{}
	for i, f := range frames {
		assert.Equal(t, after+int64(i)+1, f.ID, "distinct, increasing, no gaps")
		var w, n int
		_, err := fmt.Sscanf(string(f.Data), "%d-%d", &w, &n)
		require.NoError(t, err)
		assert.Equal(t, next[w], n, "writer %d in order", w)
		next[w]++
	}
	var stored int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema}.Sanitize()+`.event_frames WHERE stream = 'temporal/t'`).Scan(&stored))
	assert.Equal(t, writers*each, stored, "the thread's events are its stream in the runs' event log")
}

// TestEventLogBoundsWhatAThreadHolds: beyond MaxFrames (or MaxBytes)
// unread, events are dropped and counted; reading frees the room; a new
// stream starts empty, its numbering going on.
func TestEventLogBoundsWhatAThreadHolds(t *testing.T) {
	l := newLog(t, EventLogConfig{MaxFrames: 3, MaxBytes: 1 << 10})
	ctx := t.Context()
	_, err := l.begin(ctx, "t")
	require.NoError(t, err)
	for _, d := range []string{"a", "b", "c", "d"} {
		require.NoError(t, l.add("t", []byte(d)))
	}
	assert.ErrorIs(t, l.flush("t"), eventlog.ErrDropped)
	frames := readAll(t, l, "t", 0)
	require.Len(t, frames, 3)
	require.NoError(t, l.consume(ctx, "t", frames[2].ID))
	require.NoError(t, l.add("t", make([]byte, 2<<10)))
	assert.ErrorIs(t, l.flush("t"), eventlog.ErrDropped, "the one over MaxBytes")
	require.NoError(t, l.add("t", []byte("e")))
	require.NoError(t, l.flush("t"))
	n, err := l.dropped(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)

	last, err := l.begin(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, frames[2].ID+1, last, "numbers go on")
	assert.Empty(t, readAll(t, l, "t", 0), "a new stream deletes what the last one left")
	n, err = l.dropped(ctx, "t")
	require.NoError(t, err)
	assert.Zero(t, n)
}

// TestAReaderHoldsAPageOfEvents: however many events a thread holds, a
// stream reads them a page at a time, of at most readPageBytes (or one
// event), and so holds no more.
func TestAReaderHoldsAPageOfEvents(t *testing.T) {
	l := newLog(t, EventLogConfig{})
	const events, size = 40, 100 << 10 // 4 MB in all
	for range events {
		require.NoError(t, l.add("t", make([]byte, size)))
	}
	require.NoError(t, l.flush("t"))
	var after int64
	read, pages := 0, 0
	for {
		page, err := l.read(t.Context(), "t", after)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		bytes := 0
		for _, f := range page {
			bytes += len(f.Data)
		}
		assert.LessOrEqual(t, bytes, readPageBytes)
		read += len(page)
		pages++
		after = page[len(page)-1].ID
	}
	assert.Equal(t, events, read)
	assert.GreaterOrEqual(t, pages, events*size/readPageBytes)
}

// TestEventLogPruneDeletesWhatNobodyRead: Prune deletes the events of
// threads older than the age given, and only those, more threads than a
// batch of them.
func TestEventLogPruneDeletesWhatNobodyRead(t *testing.T) {
	l := newLog(t, EventLogConfig{})
	ctx := t.Context()
	for i := range 2*eventlog.PruneBatch + 1 {
		require.NoError(t, l.add("t"+strconv.Itoa(i), []byte("a")))
	}
	require.NoError(t, l.flush("t0"))
	require.NoError(t, l.Prune(ctx, 1<<40))
	assert.Len(t, readAll(t, l, "t0", 0), 1, "younger than the age: kept")
	require.NoError(t, l.Prune(ctx, 0))
	for i := range 2*eventlog.PruneBatch + 1 {
		require.Empty(t, readAll(t, l, "t"+strconv.Itoa(i), 0))
	}
}

// TestEventLogPruneKeepsALiveReadersNumbering: a stream quiet for longer
// than Prune's age (a long step emitting nothing) loses its row to Prune;
// the events appended after are still numbered after those its reader
// read, so the reader gets them.
func TestEventLogPruneKeepsALiveReadersNumbering(t *testing.T) {
	l := newLog(t, EventLogConfig{})
	ctx := t.Context()
	after, err := l.begin(ctx, "t")
	require.NoError(t, err)
	require.NoError(t, l.add("t", []byte("a")))
	require.NoError(t, l.add("t", []byte("b")))
	require.NoError(t, l.flush("t"))
	frames := readAll(t, l, "t", after)
	require.Len(t, frames, 2)
	after = frames[1].ID
	require.NoError(t, l.consume(ctx, "t", after))
	require.NoError(t, l.Prune(ctx, 0))
	require.NoError(t, l.add("t", []byte("c")))
	require.NoError(t, l.flush("t"))
	frames = readAll(t, l, "t", after)
	require.Len(t, frames, 1, "the event appended after the prune")
	assert.Equal(t, "c", string(frames[0].Data))
}

// TestTheEventsOfAnOlderVersionMoveToTheRunsEventLog: a schema with the
// tables of the version before the runs' event log (temporal_events),
// holding a thread's events, is upgraded: the tables are gone, and a
// reader resumes after the last event id it read, the numbering and the
// dropped count kept.
func TestTheEventsOfAnOlderVersionMoveToTheRunsEventLog(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_events_")
	ctx := t.Context()
	require.NoError(t, migrate.Postgres(ctx, pool, schema, "coorflow/temporalrun:", "temporal_events_schema", logMigrations[:2], ErrEventLogTooNew))
	quoted := pgx.Identifier{schema}.Sanitize()
	_, err := pool.Exec(ctx, `INSERT INTO `+quoted+`.temporal_event_streams (thread, next, held, held_bytes, dropped) VALUES ('t', 1004, 3, 3, 2)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+quoted+`.temporal_events (thread, seq, frame) VALUES ('t', 1001, 'a'), ('t', 1002, 'b'), ('t', 1003, 'c')`)
	require.NoError(t, err)

	l := newLog(t, EventLogConfig{Schema: schema})
	for _, table := range []string{"temporal_events", "temporal_event_streams"} {
		var gone bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass($1) IS NULL`, quoted+"."+table).Scan(&gone))
		assert.True(t, gone, table)
	}
	woken := l.changed("t")
	frames := readAll(t, l, "t", 1001)
	require.Len(t, frames, 2, "resumed after the last id read")
	assert.Equal(t, []int64{1002, 1003}, []int64{frames[0].ID, frames[1].ID})
	assert.Equal(t, "bc", string(frames[0].Data)+string(frames[1].Data))
	n, err := l.dropped(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	require.NoError(t, l.consume(ctx, "t", 1003))
	require.NoError(t, l.add("t", []byte("d")))
	require.NoError(t, l.flush("t"))
	<-woken
	frames = readAll(t, l, "t", 1003)
	require.Len(t, frames, 1)
	assert.Equal(t, int64(1004), frames[0].ID, "numbered after the events of the older version")
}

// TestEventLogMustBeStarted says what is missing.
func TestEventLogMustBeStarted(t *testing.T) {
	l := NewEventLog(pgtest.Pool(t), EventLogConfig{})
	_, err := l.begin(t.Context(), "t")
	assert.EqualError(t, err, "temporalrun: start the events of thread \"t\": temporalrun: the event log is not started (EventLog.Start)")
}

// BenchmarkEventLogRoundTrip measures the event log alone: one frame
// appended and stored, the reader woken by its notification and reading
// it, one at a time.
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
		require.NoError(b, l.add("t", []byte(`{"ev":{}}`)))
		<-woken
		frames, err := l.read(b.Context(), "t", after)
		require.NoError(b, err)
		after = frames[len(frames)-1].ID
		require.NoError(b, l.consume(b.Context(), "t", after))
	}
}

// BenchmarkEventLogParallelAppends measures the event log's throughput
// with many writers: 16 goroutines per core append one event each op to
// one of four threads; the events are stored when the timer stops.
func BenchmarkEventLogParallelAppends(b *testing.B) {
	pool := pgtest.Pool(b)
	l := NewEventLog(pool, EventLogConfig{Schema: pgtest.Schema(b, pool, "coorflow_events_")})
	require.NoError(b, l.Start(b.Context()))
	defer l.Close()
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		thread := "t" + strconv.Itoa(int(n.Add(1)%4))
		for pb.Next() {
			if err := l.add(thread, []byte(`{"ev":{}}`)); err != nil {
				b.Error(err)
			}
		}
		if err := l.flush(thread); err != nil {
			b.Error(err)
		}
	})
}
