package savertest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// atomicityRules cover what a failed write leaves behind.
var atomicityRules = []rule{
	{"PutOfAnExistingCheckpointIDFailsAndKeepsTheFirst", testDuplicateCheckpoint},
	{"FailedPutStoresNoneOfItsBlobs", testFailedPutNoBlobs},
	{"CancelledContextFailsAndStoresNothing", testCancelledContext},
}

func testDuplicateCheckpoint(t *testing.T, s graph.Saver) {
	first := record("t", "", "c1", "", 0)
	put(t, s, first)
	// It follows the newest checkpoint, so only its id is wrong.
	second := record("t", "", "c1", "c1", 9)
	second.Meta = []byte("second")

	err := s.PutCheckpoint(t.Context(), second, nil)
	require.Error(t, err)
	assert.NotErrorIs(t, err, graph.ErrCheckpointConflict, "a duplicate id is not a conflict between writers")

	got, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t", ID: "c1"})
	require.NoError(t, err)
	assertRecord(t, first, got)
	list, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list, 1)
}

func testFailedPutNoBlobs(t *testing.T, s graph.Saver) {
	put(t, s, record("t", "", "c1", "", 0), graph.Blob{Channel: "messages", Version: "1", Data: []byte("a")})

	// Fails because c1 exists; its blobs, stored first or last, must not
	// be visible afterwards.
	err := s.PutCheckpoint(t.Context(), record("t", "", "c1", "c1", 1), []graph.Blob{
		{Channel: "plan", Version: "1", Data: []byte("p")},
		{Channel: "messages", Version: "2", Base: "1", Data: []byte("b")},
	})
	require.Error(t, err)

	blobs, err := s.Blobs(t.Context(), "t", "", []string{"messages", "plan"})
	require.NoError(t, err)
	assert.Equal(t, []graph.Blob{{Channel: "messages", Version: "1", Data: []byte("a")}}, blobs)

	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, 1)
	assert.Equal(t, 1, threads[0].Checkpoints, "the failed put is not counted")
}

func testCancelledContext(t *testing.T, s graph.Saver) {
	chain(t, s, "t", "", "c1")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	err := s.PutCheckpoint(ctx, record("t", "", "c2", "c1", 1), []graph.Blob{{Channel: "messages", Version: "2", Data: []byte("x")}})
	require.ErrorIs(t, err, context.Canceled)
	err = s.PutCheckpoint(ctx, record("fresh", "", "c1", "", 0), nil)
	require.ErrorIs(t, err, context.Canceled)
	err = s.PutTaskRecords(ctx, graph.CheckpointRef{Thread: "t", ID: "c1"}, []graph.TaskRecord{{TaskID: "a", Kind: "result"}})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, s.DeleteThread(ctx, "t"), context.Canceled)

	list, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"c1"}, idsOf(list))
	blobs, err := s.Blobs(t.Context(), "t", "", []string{"messages"})
	require.NoError(t, err)
	assert.Empty(t, blobs)
	recs, err := s.TaskRecords(t.Context(), graph.CheckpointRef{Thread: "t", ID: "c1"})
	require.NoError(t, err)
	assert.Empty(t, recs)
	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, 1)
	assert.Equal(t, "t", threads[0].ID)
	assert.Equal(t, 1, threads[0].Checkpoints)
}
