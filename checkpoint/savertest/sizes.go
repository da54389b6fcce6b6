package savertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// sizeRules cover graph.ThreadSizer, for the Savers that are one.
var sizeRules = []rule{
	{"ThreadBytesCountsTheThreadsUnderAPrefix", testThreadBytes},
}

func testThreadBytes(t *testing.T, s graph.Saver) {
	sz, ok := s.(graph.ThreadSizer)
	if !ok {
		t.Skip("the Saver is not a graph.ThreadSizer")
	}
	size := func(prefix string) int64 {
		t.Helper()
		n, err := sz.ThreadBytes(t.Context(), prefix)
		require.NoError(t, err)
		return n
	}
	assert.Zero(t, size("alice/"))

	cpSize := func(cp graph.CheckpointRecord) int64 {
		return int64(len(cp.ID) + len(cp.ParentID) + len(cp.NS) + len(cp.Meta))
	}
	blob := graph.Blob{Channel: "text", Version: "v1", Data: []byte(`"hello"`)}
	a1, a2 := record("alice/t1", "", "a1", "", 0), record("alice/t1", "sub", "a2", "", 1)
	put(t, s, a1, blob)
	put(t, s, a2)
	recs := []graph.TaskRecord{{TaskID: "task", Kind: "write", Key: "k", Data: []byte(`{"x":1}`)}}
	require.NoError(t, s.PutTaskRecords(t.Context(), graph.CheckpointRef{Thread: "alice/t1", ID: "a1"}, recs))
	b := record("alice/t2", "", "b1", "", 0)
	put(t, s, b)
	for _, other := range []string{"alicex/t", "alice", "bob/t"} {
		put(t, s, record(other, "", "o1", "", 0), blob)
	}

	want := cpSize(a1) + cpSize(a2) + cpSize(b) + int64(len("text")+len("v1")+len(`"hello"`)) +
		int64(len("task")+len("write")+len("k")+len(`{"x":1}`))
	assert.Equal(t, want, size("alice/"), "alice's threads, and no others")
	assert.Equal(t, want-cpSize(b), size("alice/t1"))
	assert.Greater(t, size(""), want, "every thread")

	require.NoError(t, s.DeleteThread(t.Context(), "alice/t1"))
	assert.Equal(t, cpSize(b), size("alice/"))
}
