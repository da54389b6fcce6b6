package eventlog

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/migrate"
	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/internal/pgtest"
)

// readAll reads stream after id after to its end, a page at a time.
func readAll(t *testing.T, l *Log, stream string, after int64) []Frame {
	t.Helper()
	var out []Frame
	for {
		page, err := l.Read(t.Context(), stream, after, 64, 1<<20)
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].ID
	}
}

// TestAFollowingReaderOfASharedStreamGetsTheFramesOfEveryWriterInOrder:
// 128 writers on four logs (four processes) append to one shared stream
// at once while a reader follows it, woken by the notifications, and
// trims what it read. Every frame gets a distinct id, increasing in the
// order the reader reads them with no gap (frames are numbered in commit
// order, so none committed late is numbered before one read), and each
// writer's frames keep their order.
func TestAFollowingReaderOfASharedStreamGetsTheFramesOfEveryWriterInOrder(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	logs := make([]*Log, 4)
	for i := range logs {
		logs[i] = newLog(t, Config{Schema: schema, MaxBatch: 16})
	}
	reader := logs[0]
	listener := pgdb.NewListener(pool, time.Second)
	require.NoError(t, listener.Start(t.Context(), reader.Channel()))
	t.Cleanup(listener.Close)
	after, err := reader.Reset(t.Context(), "shared")
	require.NoError(t, err)

	const writers, each = 128, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			l := logs[w%len(logs)]
			for i := range each {
				assert.NoError(t, l.AppendShared("shared", "ev", fmt.Appendf(nil, "%d:%d", w, i)))
			}
			assert.NoError(t, l.Flush("shared"))
		})
	}
	var got []Frame
	for len(got) < writers*each {
		changed := listener.Changed("shared")
		page, err := reader.Read(t.Context(), "shared", after, 64, 1<<20)
		require.NoError(t, err)
		if len(page) == 0 {
			select {
			case <-changed:
			case <-t.Context().Done():
				t.Fatalf("%d frames read of %d", len(got), writers*each)
			}
			continue
		}
		got = append(got, page...)
		after = page[len(page)-1].ID
		require.NoError(t, reader.Trim(t.Context(), "shared", after))
	}
	wg.Wait()
	assert.Empty(t, readAll(t, reader, "shared", after), "nothing more")
	next := map[int]int{}
	for i, f := range got {
		if i > 0 {
			assert.Equal(t, got[i-1].ID+1, f.ID, "ids increase without a gap")
		}
		var w, n int
		_, err := fmt.Sscanf(string(f.Data), "%d:%d", &w, &n)
		require.NoError(t, err)
		assert.Equal(t, next[w], n, "writer %d's frames in order", w)
		next[w]++
	}
	assert.Len(t, next, writers)
	var held, bytes int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT held, held_bytes FROM `+reader.q.streams+` WHERE stream = 'shared'`).Scan(&held, &bytes))
	assert.Zero(t, held, "the reader trimmed everything")
	assert.Zero(t, bytes)
}

// TestASharedStreamHoldsNoMoreThanItsBoundsUnderParallelAppends: 200
// appends at once from two logs to a stream bounded to 50 frames store
// exactly 50 and count 150 dropped; their writers are told; trimming
// makes room again; the bound in bytes holds too.
func TestASharedStreamHoldsNoMoreThanItsBoundsUnderParallelAppends(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	logs := []*Log{newLog(t, Config{Schema: schema, MaxHeld: 50}), newLog(t, Config{Schema: schema, MaxHeld: 50})}
	ctx := t.Context()
	_, err := logs[0].Reset(ctx, "s")
	require.NoError(t, err)
	var told atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			l := logs[i%2]
			assert.NoError(t, l.AppendShared("s", "ev", []byte("x")))
			if err := l.Flush("s"); err != nil {
				assert.ErrorIs(t, err, ErrDropped)
				told.Add(1)
			}
		})
	}
	wg.Wait()
	got := readAll(t, logs[0], "s", 0)
	assert.Len(t, got, 50)
	n, err := logs[0].Dropped(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, int64(150), n)
	assert.Positive(t, told.Load(), "the writers of a commit that dropped frames are told")

	require.NoError(t, logs[0].Trim(ctx, "s", got[9].ID))
	for range 20 {
		require.NoError(t, logs[1].AppendShared("s", "ev", []byte("y")))
	}
	assert.ErrorIs(t, logs[1].Flush("s"), ErrDropped)
	assert.Len(t, readAll(t, logs[0], "s", 0), 50, "the room the reader made, taken again")

	small := newLog(t, Config{Schema: schema, MaxHeldBytes: 1000})
	_, err = small.Reset(ctx, "bytes")
	require.NoError(t, err)
	for range 15 {
		require.NoError(t, small.AppendShared("bytes", "ev", make([]byte, 100)))
	}
	assert.ErrorIs(t, small.Flush("bytes"), ErrDropped)
	assert.Len(t, readAll(t, small, "bytes", 0), 10)
	n, err = small.Dropped(ctx, "bytes")
	require.NoError(t, err)
	assert.Equal(t, int64(5), n)
}

// TestResetEmptiesASharedStreamAndItsNumberingGoesOn: Reset deletes what
// an earlier reader left and the count of dropped frames, and the next
// frames are numbered after the last; a stream appended to before any
// Reset is made by its first commit.
func TestResetEmptiesASharedStreamAndItsNumberingGoesOn(t *testing.T) {
	l := newLog(t, Config{MaxHeld: 2})
	ctx := t.Context()
	for _, d := range []string{"a", "b", "c"} {
		require.NoError(t, l.AppendShared("s", "ev", []byte(d)))
	}
	require.ErrorIs(t, l.Flush("s"), ErrDropped)
	got := readAll(t, l, "s", 0)
	require.Len(t, got, 2)
	assert.Equal(t, []string{"a", "b"}, []string{string(got[0].Data), string(got[1].Data)})
	assert.Greater(t, got[0].ID, time.Now().Add(-time.Hour).UnixMicro(), "numbered from the microseconds since the epoch")

	last, err := l.Reset(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, got[1].ID, last)
	assert.Empty(t, readAll(t, l, "s", 0))
	n, err := l.Dropped(ctx, "s")
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, l.AppendShared("s", "ev", []byte("d")))
	require.NoError(t, l.Flush("s"))
	got = readAll(t, l, "s", last)
	require.Len(t, got, 1)
	assert.Equal(t, last+1, got[0].ID)
}

// TestPruneDeletesTheSharedStreamsNobodyWroteToAndOnlyThose: Prune by
// age deletes shared streams older than the age, more than a batch of
// them, and leaves owned streams (their owners delete them) and younger
// ones; a reader still waiting on a pruned stream gets the frames
// appended after, numbered after what it read.
func TestPruneDeletesTheSharedStreamsNobodyWroteToAndOnlyThose(t *testing.T) {
	l := newLog(t, Config{})
	ctx := t.Context()
	_, err := l.Open(ctx, "owned", 1)
	require.NoError(t, err)
	require.NoError(t, l.Append("owned", 1, frame(1)))
	for i := range 2*PruneBatch + 1 {
		require.NoError(t, l.AppendShared(fmt.Sprint("s", i), "ev", []byte("a")))
	}
	require.NoError(t, l.Flush("owned"))
	n, err := l.Prune(ctx, time.Hour)
	require.NoError(t, err)
	assert.Zero(t, n, "younger than the age: kept")

	read := readAll(t, l, "s0", 0)
	require.Len(t, read, 1)
	n, err = l.Prune(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 2*PruneBatch+1, n)
	var streams, frames int
	require.NoError(t, l.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+l.q.streams+`), (SELECT count(*) FROM `+l.q.frames+`)`).Scan(&streams, &frames))
	assert.Equal(t, 1, streams, "the owned stream is left")
	assert.Equal(t, 1, frames)

	require.NoError(t, l.AppendShared("s0", "ev", []byte("b")))
	require.NoError(t, l.Flush("s0"))
	got := readAll(t, l, "s0", read[0].ID)
	require.Len(t, got, 1, "the frame appended after the prune")
	assert.Equal(t, "b", string(got[0].Data))
}

// TestOwnedAndSharedFramesCommitTogether: one commit with frames of both
// kinds stores each by its rules, and a fenced owned stream does not
// keep the shared frames of the commit from being stored.
func TestOwnedAndSharedFramesCommitTogether(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	l := newLog(t, Config{Schema: schema, MaxDelay: time.Hour})
	taker := newLog(t, Config{Schema: schema})
	ctx := t.Context()
	_, err := l.Open(ctx, "run", 1)
	require.NoError(t, err)
	_, err = taker.Open(ctx, "run", 2)
	require.NoError(t, err)
	require.NoError(t, l.Append("run", 1, frame(1)))
	require.NoError(t, l.AppendShared("shared", "ev", []byte("a")))
	require.NoError(t, l.Flush("shared"))
	assert.ErrorIs(t, l.Flush("run"), ErrFenced)
	assert.Len(t, readAll(t, l, "shared", 0), 1)
	assert.Empty(t, readAll(t, l, "run", 0))
}

// TestTheEventLogUpgradesFromVersionOne: a schema made by the first
// version, with a stream, is upgraded in place; its stream reads and
// opens as before.
func TestTheEventLogUpgradesFromVersionOne(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	ctx := t.Context()
	require.NoError(t, migrate.Postgres(ctx, pool, schema, "coorflow/eventlog:", "event_log_schema", migrations[:1], ErrSchemaTooNew))
	q := newQueries(`"`+schema+`"`, "")
	_, err := pool.Exec(ctx, `INSERT INTO `+q.streams+` (stream, fence, last) VALUES ('run', 3, 1)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+q.frames+` (stream, id, name, frame) VALUES ('run', 1, 'ev', 'data 1')`)
	require.NoError(t, err)
	l := newLog(t, Config{Schema: schema})
	assert.Equal(t, []Frame{frame(1)}, readAll(t, l, "run", 0))
	_, err = l.Open(ctx, "run", 2)
	require.NoError(t, err)
	require.NoError(t, l.Append("run", 2, frame(2)))
	assert.True(t, errors.Is(l.Flush("run"), ErrFenced), "the fence of version one holds")
	n, err := l.Prune(ctx, 0)
	require.NoError(t, err)
	assert.Zero(t, n, "an owned stream of version one is not pruned")
	assert.Equal(t, []Frame{frame(1)}, readAll(t, l, "run", 0))
}

// TestAnAppendToASharedStreamToldOfDroppedFramesIsStillQueued: the
// writer of a shared stream learns of frames dropped by an earlier commit
// from its next append, which is queued and stored all the same.
func TestAnAppendToASharedStreamToldOfDroppedFramesIsStillQueued(t *testing.T) {
	l := newLog(t, Config{MaxHeld: 3})
	ctx := t.Context()
	for _, d := range []string{"a", "b", "c", "d"} {
		require.NoError(t, l.AppendShared("s", "ev", []byte(d)))
	}
	require.NoError(t, l.Flush("other"), "waits for the commit; s's error stays s's")
	got := readAll(t, l, "s", 0)
	require.Len(t, got, 3)
	require.NoError(t, l.Trim(ctx, "s", got[1].ID))
	assert.ErrorIs(t, l.AppendShared("s", "ev", []byte("e")), ErrDropped)
	require.NoError(t, l.Flush("s"))
	got = readAll(t, l, "s", 0)
	require.Len(t, got, 2)
	assert.Equal(t, "ce", string(got[0].Data)+string(got[1].Data))
	assert.Equal(t, got[0].ID+1, got[1].ID)
}
