package savertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// concurrencyRules cover use of one Saver from many goroutines.
var concurrencyRules = []rule{
	{"ConcurrentWritersOnDifferentThreads", testConcurrentThreads},
	{"ConcurrentWritersAndReadersOnTheSameThread", testConcurrentSameThread},
}

const (
	writers   = 8
	perWriter = 10
)

// runAll runs fn(i) for i in [0, n) on n goroutines and returns their
// errors joined.
func runAll(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func testConcurrentThreads(t *testing.T, s graph.Saver) {
	ctx := t.Context()
	err := runAll(writers, func(w int) error {
		thread := fmt.Sprintf("thread-%d", w)
		parent := ""
		for i := range perWriter {
			id := fmt.Sprintf("c%02d", i)
			blob := graph.Blob{Channel: "messages", Version: id, Data: []byte(thread + id)}
			if err := s.PutCheckpoint(ctx, record(thread, "", id, parent, i), []graph.Blob{blob}); err != nil {
				return err
			}
			ref := graph.CheckpointRef{Thread: thread, ID: id}
			if err := s.PutTaskRecords(ctx, ref, []graph.TaskRecord{{TaskID: "a", Kind: "result", Data: []byte(id)}}); err != nil {
				return err
			}
			parent = id
		}
		return nil
	})
	require.NoError(t, err)

	threads, err := s.Threads(ctx, graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, writers)
	for w := range writers {
		thread := fmt.Sprintf("thread-%d", w)
		list, err := s.ListCheckpoints(ctx, thread, "", graph.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list, perWriter, thread)
		for n, cp := range list {
			i, parent := perWriter-1-n, ""
			if i > 0 {
				parent = fmt.Sprintf("c%02d", i-1)
			}
			assertRecord(t, record(thread, "", fmt.Sprintf("c%02d", i), parent, i), cp)
		}
		blobs, err := s.Blobs(ctx, thread, "", []string{"messages"})
		require.NoError(t, err)
		assert.Len(t, blobs, perWriter, thread)
		recs, err := s.TaskRecords(ctx, graph.CheckpointRef{Thread: thread, ID: "c05"})
		require.NoError(t, err)
		assert.Equal(t, []graph.TaskRecord{{TaskID: "a", Kind: "result", Data: []byte("c05")}}, recs)
	}
	for _, th := range threads {
		assert.Equal(t, perWriter, th.Checkpoints, th.ID)
	}
}

func testConcurrentSameThread(t *testing.T, s graph.Saver) {
	ctx := t.Context()
	put(t, s, record("shared", "", "seed", "", 0))
	seed := graph.CheckpointRef{Thread: "shared", ID: "seed"}
	// Every writer stores checkpoints with its own blobs and one blob all
	// share, each after the newest it reads, again after a conflict, and
	// writes the same task record key on the seed checkpoint; every reader
	// reads while they write.
	common := graph.Blob{Channel: "config", Version: "1", Data: []byte("shared")}
	err := runAll(2*writers, func(g int) error {
		if g >= writers {
			return read(ctx, s, g)
		}
		for i := range perWriter {
			id := fmt.Sprintf("w%d-c%02d", g, i)
			own := graph.Blob{Channel: "messages", Version: id, Data: []byte(id)}
			if err := putAfterNewest(ctx, s, record("shared", "", id, "", i+1), common, own); err != nil {
				return err
			}
			rec := graph.TaskRecord{TaskID: "a", Kind: "result", Data: []byte("same")}
			if err := s.PutTaskRecords(ctx, seed, []graph.TaskRecord{rec}); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)

	list, err := s.ListCheckpoints(ctx, "shared", "", graph.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list, writers*perWriter+1)
	assert.Equal(t, "seed", list[len(list)-1].ID)
	assertLine(t, list)
	// Each writer's checkpoints appear in the order it stored them.
	next := make([]int, writers)
	for _, cp := range reversed(list[:len(list)-1]) {
		var w, i int
		_, err := fmt.Sscanf(cp.ID, "w%d-c%02d", &w, &i)
		require.NoError(t, err)
		assert.Equal(t, next[w], i, "order of writer %d", w)
		next[w] = i + 1
	}

	blobs, err := s.Blobs(ctx, "shared", "", []string{"config"})
	require.NoError(t, err)
	assert.Equal(t, []graph.Blob{common}, blobs)
	blobs, err = s.Blobs(ctx, "shared", "", []string{"messages"})
	require.NoError(t, err)
	assert.Len(t, blobs, writers*perWriter)

	recs, err := s.TaskRecords(ctx, seed)
	require.NoError(t, err)
	assert.Equal(t, []graph.TaskRecord{{TaskID: "a", Kind: "result", Data: []byte("same")}}, recs)

	threads, err := s.Threads(ctx, graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, 1)
	assert.Equal(t, writers*perWriter+1, threads[0].Checkpoints)
}

// putAfterNewest stores cp as the child of the newest checkpoint of its
// thread and namespace, reading that again after each conflict, as a
// writer that lost a race would.
func putAfterNewest(ctx context.Context, s graph.Saver, cp graph.CheckpointRecord, blobs ...graph.Blob) error {
	for range 10000 {
		newest, err := s.GetCheckpoint(ctx, graph.CheckpointRef{Thread: cp.Thread, NS: cp.NS})
		if err != nil && !errors.Is(err, graph.ErrNotFound) {
			return err
		}
		cp.ParentID = newest.ID
		err = s.PutCheckpoint(ctx, cp, blobs)
		if !errors.Is(err, graph.ErrCheckpointConflict) {
			return err
		}
	}
	return fmt.Errorf("put checkpoint %q: still in conflict after 10000 attempts", cp.ID)
}

// assertLine checks that list, newest first, is one line of history: each
// checkpoint the child of the next, the last one the first of its thread.
func assertLine(t *testing.T, list []graph.CheckpointRecord) {
	t.Helper()
	for i, cp := range list {
		parent := ""
		if i+1 < len(list) {
			parent = list[i+1].ID
		}
		assert.Equal(t, parent, cp.ParentID, "the parent of %q", cp.ID)
	}
}

// read reads the "shared" thread a few times, as a reader would while it is
// being written.
func read(ctx context.Context, s graph.Saver, g int) error {
	for range perWriter {
		cp, err := s.GetCheckpoint(ctx, graph.CheckpointRef{Thread: "shared"})
		if err != nil {
			return err
		}
		if _, err := s.ListCheckpoints(ctx, "shared", "", graph.ListOptions{Limit: 5}); err != nil {
			return err
		}
		if _, err := s.Blobs(ctx, "shared", "", []string{"config", "messages"}); err != nil {
			return err
		}
		if _, err := s.TaskRecords(ctx, graph.CheckpointRef{Thread: "shared", ID: cp.ID}); err != nil {
			return fmt.Errorf("reader %d: %w", g, err)
		}
	}
	return nil
}
