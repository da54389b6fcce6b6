package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

func openInternal(t *testing.T) *Saver {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "group.db"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// waitPending returns once n PutCheckpoint calls are queued.
func waitPending(s *Saver, n int) {
	for {
		s.puts.mu.Lock()
		got := len(s.puts.pending)
		s.puts.mu.Unlock()
		if got >= n {
			return
		}
		runtime.Gosched()
	}
}

func record(thread, id, parent string) graph.CheckpointRecord {
	return graph.CheckpointRecord{Thread: thread, ID: id, ParentID: parent, Source: graph.SourceLoop,
		Created: time.Now(), Meta: []byte(`{"format":1}`)}
}

// TestGroupOfPutsWithAConflict: checkpoints that queue while the writer is
// busy are stored by the next writer together; the one that conflicts
// fails alone, with its own error, and every other one is stored with its
// blob.
func TestGroupOfPutsWithAConflict(t *testing.T) {
	s := openInternal(t)
	ctx := t.Context()
	require.NoError(t, s.PutCheckpoint(ctx, record("a", "a1", ""), nil))

	_, err := s.share.Lock(ctx)
	require.NoError(t, err)
	const n = 8
	errs := make(chan error, n+1)
	for i := range n {
		thread := fmt.Sprintf("t%d", i)
		go func() {
			errs <- s.PutCheckpoint(ctx, record(thread, "c1", ""),
				[]graph.Blob{{Channel: "messages", Version: "c1", Data: []byte(`["hi"]`)}})
		}()
	}
	conflicting := make(chan error, 1)
	go func() {
		conflicting <- s.PutCheckpoint(ctx, record("a", "a2", "not-the-head"),
			[]graph.Blob{{Channel: "messages", Version: "a2", Data: []byte(`["lost"]`)}})
	}()
	waitPending(s, n+1)
	s.share.Unlock()

	for range n {
		assert.NoError(t, <-errs)
	}
	err = <-conflicting
	require.ErrorIs(t, err, graph.ErrCheckpointConflict)
	assert.ErrorContains(t, err, `sqlite: put checkpoint "a2" of thread "a": graph: thread "a" was advanced by another writer: its newest checkpoint is "a1", not "not-the-head"`)

	for i := range n {
		thread := fmt.Sprintf("t%d", i)
		cp, err := s.GetCheckpoint(ctx, graph.CheckpointRef{Thread: thread})
		require.NoError(t, err)
		assert.Equal(t, "c1", cp.ID)
		blobs, err := s.Blobs(ctx, thread, "", []string{"messages"})
		require.NoError(t, err)
		assert.Len(t, blobs, 1)
	}
	head, err := s.GetCheckpoint(ctx, graph.CheckpointRef{Thread: "a"})
	require.NoError(t, err)
	assert.Equal(t, "a1", head.ID)
	blobs, err := s.Blobs(ctx, "a", "", []string{"messages"})
	require.NoError(t, err)
	assert.Empty(t, blobs, "the refused checkpoint's blob is not stored")
}

// TestPutCancelledWhileQueuedStoresNothing: a PutCheckpoint whose context
// ends while it waits for the writer returns the context's error, and no
// later writer stores its checkpoint.
func TestPutCancelledWhileQueuedStoresNothing(t *testing.T) {
	s := openInternal(t)
	_, err := s.share.Lock(t.Context())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.PutCheckpoint(ctx, record("t", "c1", ""), nil) }()
	waitPending(s, 1)
	cancel()
	err = <-done
	s.share.Unlock()
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, `sqlite: put checkpoint "c1" of thread "t": context canceled`)

	require.NoError(t, s.PutCheckpoint(t.Context(), record("u", "c1", ""), nil), "the next writer runs")
	_, err = s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t"})
	assert.ErrorIs(t, err, graph.ErrNotFound)
}
