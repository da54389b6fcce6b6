package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
)

// conflictOf returns the *graph.CheckpointConflictError err wraps.
func conflictOf(t *testing.T, err error) *graph.CheckpointConflictError {
	t.Helper()
	var conflict *graph.CheckpointConflictError
	require.ErrorAs(t, err, &conflict)
	assert.ErrorIs(t, err, graph.ErrCheckpointConflict)
	return conflict
}

func TestAcquireRefusesALiveLeaseAndTakesOverAReleasedOne(t *testing.T) {
	s := newSaver(t, pgtest.Pool(t))
	ctx := t.Context()
	a, err := s.Acquire(ctx, "t", "replica-a", time.Hour)
	require.NoError(t, err)
	assert.Equal(t, int64(1), a.Token)

	_, err = s.Acquire(ctx, "t", "replica-b", time.Hour)
	require.ErrorIs(t, err, postgres.ErrLeaseHeld)
	assert.EqualError(t, err, `postgres: lease thread "t": postgres: the thread is leased by another holder`)

	a, err = s.Renew(ctx, a, time.Hour)
	require.NoError(t, err, "the holder renews its live lease")
	require.NoError(t, s.Release(ctx, a))
	b, err := s.Acquire(ctx, "t", "replica-b", time.Hour)
	require.NoError(t, err, "a released lease is free at once")
	assert.Equal(t, int64(2), b.Token, "every holder gets a greater token")
	assert.Equal(t, "replica-b", b.Holder)
}

func TestFencedSaverRefusesTheWritesOfAStaleHolder(t *testing.T) {
	s := newSaver(t, pgtest.Pool(t))
	ctx := t.Context()
	// A lease of no duration has expired as soon as it is taken: the
	// holder is presumed dead and another replica takes the thread over.
	a, err := s.Acquire(ctx, "t", "replica-a", 0)
	require.NoError(t, err)
	stale := s.Fenced(a)
	require.NoError(t, stale.PutCheckpoint(ctx, graph.CheckpointRecord{Thread: "t", ID: "c1"}, nil),
		"an expired lease nobody took over still writes")

	b, err := s.Acquire(ctx, "t", "replica-b", time.Hour)
	require.NoError(t, err)
	fresh := s.Fenced(b)

	err = stale.PutCheckpoint(ctx, graph.CheckpointRecord{Thread: "t", ID: "c2", ParentID: "c1"}, []graph.Blob{{Channel: "x", Version: "2", Data: []byte(`1`)}})
	conflict := conflictOf(t, err)
	assert.Equal(t, graph.CheckpointConflictError{Thread: "t", Token: 1, LeaseToken: 2}, *conflict)
	assert.EqualError(t, err, `postgres: put checkpoint "c2" of thread "t": graph: thread "t" was taken over by another writer: `+
		`its lease has fencing token 2, this write held token 1; read the thread's state again and retry`)
	err = stale.PutTaskRecords(ctx, graph.CheckpointRef{Thread: "t", ID: "c1"}, []graph.TaskRecord{{TaskID: "x", Kind: "do", Key: "k", Data: []byte(`1`)}})
	assert.Equal(t, graph.CheckpointConflictError{Thread: "t", Token: 1, LeaseToken: 2}, *conflictOf(t, err))
	_, err = s.Renew(ctx, a, time.Hour)
	assert.Equal(t, graph.CheckpointConflictError{Thread: "t", Token: 1, LeaseToken: 2}, *conflictOf(t, err))

	head, err := s.GetCheckpoint(ctx, graph.CheckpointRef{Thread: "t"})
	require.NoError(t, err)
	assert.Equal(t, "c1", head.ID, "the stale write stored nothing; the work before it is kept")
	recs, err := s.TaskRecords(ctx, graph.CheckpointRef{Thread: "t", ID: "c1"})
	require.NoError(t, err)
	assert.Empty(t, recs)

	require.NoError(t, fresh.PutTaskRecords(ctx, graph.CheckpointRef{Thread: "t", ID: "c1"}, []graph.TaskRecord{{TaskID: "x", Kind: "do", Key: "k", Data: []byte(`2`)}}))
	require.NoError(t, fresh.PutCheckpoint(ctx, graph.CheckpointRecord{Thread: "t", ID: "c2", ParentID: "c1"}, nil))
	head, err = s.GetCheckpoint(ctx, graph.CheckpointRef{Thread: "t"})
	require.NoError(t, err)
	assert.Equal(t, "c2", head.ID)

	// The head's compare-and-swap still holds under a fence.
	err = fresh.PutCheckpoint(ctx, graph.CheckpointRecord{Thread: "t", ID: "c3", ParentID: "c1"}, nil)
	assert.Equal(t, graph.CheckpointConflictError{Thread: "t", Expected: "c1", Newest: "c2"}, *conflictOf(t, err))
	assert.False(t, errors.Is(err, postgres.ErrLeaseHeld))
}

func TestFencedSaverWritesOnlyItsThread(t *testing.T) {
	s := newSaver(t, pgtest.Pool(t))
	l, err := s.Acquire(t.Context(), "t", "replica-a", time.Hour)
	require.NoError(t, err)
	err = s.Fenced(l).PutCheckpoint(t.Context(), graph.CheckpointRecord{Thread: "other", ID: "c1"}, nil)
	assert.EqualError(t, err, `postgres: put checkpoint "c1" of thread "other": the lease is on thread "t", not on this one`)
}
