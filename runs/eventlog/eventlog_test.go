package eventlog

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/internal/pgtest"
)

// newLog starts a log with cfg on a schema of its own (cfg.Schema set
// keeps that one).
func newLog(t *testing.T, cfg Config) *Log {
	t.Helper()
	pool := pgtest.Pool(t)
	if cfg.Schema == "" {
		cfg.Schema = pgtest.Schema(t, pool, "coorflow_test_")
	}
	l := New(pool, cfg)
	require.NoError(t, l.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	return l
}

func frame(id int64) Frame {
	return Frame{ID: id, Name: "ev", Data: fmt.Appendf(nil, "data %d", id)}
}

func TestTheFramesOfManyStreamsAreStoredInOrderOnceFlushed(t *testing.T) {
	l := newLog(t, Config{MaxBatch: 7})
	streams := []string{"run-a", "run-b", "run-c"}
	for _, s := range streams {
		last, err := l.Open(t.Context(), s, 1)
		require.NoError(t, err)
		require.Zero(t, last)
	}
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Go(func() {
			for id := int64(1); id <= 100; id++ {
				assert.NoError(t, l.Append(s, 1, frame(id)))
			}
			assert.NoError(t, l.Flush(s))
		})
	}
	wg.Wait()
	for _, s := range streams {
		got, err := l.Read(t.Context(), s, 0, 1000, 1<<20)
		require.NoError(t, err)
		require.Len(t, got, 100, s)
		for i, f := range got {
			assert.Equal(t, frame(int64(i+1)), f)
		}
		last, err := l.Last(t.Context(), s)
		require.NoError(t, err)
		assert.Equal(t, int64(100), last)
	}
	require.NoError(t, l.Delete(t.Context(), "run-a"))
	got, err := l.Read(t.Context(), "run-a", 0, 1000, 1<<20)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestAWriterWhoseStreamWasOpenedWithANewerTokenIsRefused(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	old, taker := newLog(t, Config{Schema: schema}), newLog(t, Config{Schema: schema})

	_, err := old.Open(t.Context(), "run-1", 5)
	require.NoError(t, err)
	require.NoError(t, old.Append("run-1", 5, frame(1)))
	require.NoError(t, old.Flush("run-1"))

	// Another replica takes the run over: its lease's token is newer.
	last, err := taker.Open(t.Context(), "run-1", 6)
	require.NoError(t, err)
	assert.Equal(t, int64(1), last, "the taker numbers after what the first writer stored")
	require.NoError(t, old.Append("run-1", 5, frame(2)))
	assert.ErrorIs(t, old.Flush("run-1"), ErrFenced)
	assert.ErrorIs(t, old.Append("run-1", 5, frame(3)), ErrFenced, "for good")

	require.NoError(t, taker.Append("run-1", 6, frame(2)))
	require.NoError(t, taker.Flush("run-1"))
	got, err := taker.Read(t.Context(), "run-1", 0, 10, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, []Frame{frame(1), frame(2)}, got)
}

func TestAFrameIsCommittedWithinTheDelayWithoutAFlush(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	l := newLog(t, Config{Schema: schema, Channel: "eventlog_test:" + schema, MaxDelay: 20 * time.Millisecond})
	listener := pgdb.NewListener(pool, time.Second)
	require.NoError(t, listener.Start(t.Context(), "eventlog_test:"+schema))
	t.Cleanup(listener.Close)
	_, err := l.Open(t.Context(), "run-1", 1)
	require.NoError(t, err)
	changed := listener.Changed("run-1")
	require.NoError(t, l.Append("run-1", 1, frame(1)))
	select {
	case <-changed:
	case <-t.Context().Done():
		t.Fatal("no commit")
	}
	got, err := l.Read(t.Context(), "run-1", 0, 10, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, []Frame{frame(1)}, got)
}

func TestTheFramesWaitingForACommitStayWithinTheirBound(t *testing.T) {
	// A delay of an hour: only the bounds make commits.
	const bound = 4 << 10
	l := newLog(t, Config{MaxDelay: time.Hour, MaxPendingBytes: bound, MaxBatch: 1 << 20, MaxBatchBytes: 1 << 30})
	_, err := l.Open(t.Context(), "run-1", 1)
	require.NoError(t, err)
	var mu sync.Mutex
	var id int64
	most := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				mu.Lock() // ids in append order
				id++
				f := Frame{ID: id, Name: "ev", Data: make([]byte, 1000)}
				assert.NoError(t, l.Append("run-1", 1, f))
				l.mu.Lock()
				most = max(most, l.bytes)
				l.mu.Unlock()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NoError(t, l.Flush("run-1"))
	assert.LessOrEqual(t, most, bound)
	last, err := l.Last(t.Context(), "run-1")
	require.NoError(t, err)
	assert.Equal(t, int64(800), last)
}

func TestAReadIsAPageByCountAndBytes(t *testing.T) {
	l := newLog(t, Config{})
	_, err := l.Open(t.Context(), "run-1", 1)
	require.NoError(t, err)
	for id := int64(1); id <= 10; id++ {
		require.NoError(t, l.Append("run-1", 1, Frame{ID: id, Name: "ev", Data: make([]byte, 100)}))
	}
	require.NoError(t, l.Flush("run-1"))
	ids := func(after int64, limit, maxBytes int) []int64 {
		got, err := l.Read(t.Context(), "run-1", after, limit, maxBytes)
		require.NoError(t, err)
		var out []int64
		for _, f := range got {
			out = append(out, f.ID)
		}
		return out
	}
	assert.Equal(t, []int64{1, 2, 3}, ids(0, 3, 1<<20))
	assert.Equal(t, []int64{5, 6}, ids(4, 10, 250))
	assert.Equal(t, []int64{5}, ids(4, 10, 50), "a frame larger than the bound comes alone")
	assert.Empty(t, ids(10, 10, 1<<20))
}

func TestAppendAfterCloseIsRefusedAndCloseCommitsWhatWasAppended(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	l := New(pool, Config{Schema: schema, MaxDelay: time.Hour})
	require.NoError(t, l.Start(t.Context()))
	_, err := l.Open(t.Context(), "run-1", 1)
	require.NoError(t, err)
	require.NoError(t, l.Append("run-1", 1, frame(1)))
	require.NoError(t, l.Close())
	assert.ErrorIs(t, l.Append("run-1", 1, frame(2)), ErrClosed)
	reader := newLog(t, Config{Schema: schema})
	got, err := reader.Read(context.WithoutCancel(t.Context()), "run-1", 0, 10, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, []Frame{frame(1)}, got)
}
