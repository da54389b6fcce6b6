package savertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// taskRules cover PutTaskRecords and TaskRecords.
var taskRules = []rule{
	{"TaskRecordsAreOrderedByTaskKindKeyBytewise", testTaskOrder},
	{"PutTaskRecordsReplacesTheSameTaskKindKey", testTaskUpsert},
	{"TaskRecordsAreScopedToTheirCheckpoint", testTaskScoped},
	{"TaskRecordsOfMissingCheckpointAreNotFound", testTaskNotFound},
}

func testTaskOrder(t *testing.T, s graph.Saver) {
	chain(t, s, "t", "", "c1")
	ref := graph.CheckpointRef{Thread: "t", ID: "c1"}
	// Bytewise order, which differs from most locales' collation: upper case
	// before lower case, digits before '_', "" first, ASCII before other
	// UTF-8; and by kind before key.
	want := []graph.TaskRecord{
		{TaskID: "B", Kind: "result", Key: "", Data: []byte("1")},
		{TaskID: "a1", Kind: "call", Key: "k", Data: []byte("2")},
		{TaskID: "a_1", Kind: "Result", Key: "", Data: []byte("3")},
		{TaskID: "a_1", Kind: "call", Key: "", Data: []byte("4")},
		{TaskID: "a_1", Kind: "call", Key: "K2", Data: []byte("5")},
		{TaskID: "a_1", Kind: "call", Key: "k1", Data: []byte("6")},
		{TaskID: "a_1", Kind: "call", Key: "k10", Data: []byte("7")},
		{TaskID: "a_1", Kind: "call", Key: "k2", Data: []byte("8")},
		{TaskID: "b", Kind: "call", Key: "zz", Data: []byte("9")},
		{TaskID: "b", Kind: "interrupt", Key: "z", Data: []byte("10")},
		{TaskID: "b", Kind: "interrupt", Key: "é", Data: []byte("11")},
	}
	// Stored out of order, in two calls.
	require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{want[7], want[10], want[0], want[5], want[8]}))
	require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{want[3], want[9], want[6], want[1], want[4], want[2]}))

	got, err := s.TaskRecords(t.Context(), ref)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func testTaskUpsert(t *testing.T, s graph.Saver) {
	chain(t, s, "t", "", "c1")
	ref := graph.CheckpointRef{Thread: "t", ID: "c1"}
	require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{
		{TaskID: "a", Kind: "call", Key: "k", Data: []byte("old")},
		{TaskID: "a", Kind: "result", Key: "", Data: []byte("kept")},
	}))
	require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{
		{TaskID: "a", Kind: "call", Key: "k", Data: []byte("new")},
		{TaskID: "a", Kind: "call", Key: "k2", Data: []byte("first")},
		// The same key twice in one call: the later record wins.
		{TaskID: "a", Kind: "call", Key: "k2", Data: []byte("last")},
	}))

	got, err := s.TaskRecords(t.Context(), ref)
	require.NoError(t, err)
	assert.Equal(t, []graph.TaskRecord{
		{TaskID: "a", Kind: "call", Key: "k", Data: []byte("new")},
		{TaskID: "a", Kind: "call", Key: "k2", Data: []byte("last")},
		{TaskID: "a", Kind: "result", Key: "", Data: []byte("kept")},
	}, got)
}

func testTaskScoped(t *testing.T, s graph.Saver) {
	// The same checkpoint id in another checkpoint of the thread, in another
	// namespace and in another thread: each has its own records.
	chain(t, s, "t", "", "c1", "c2")
	chain(t, s, "t", "sub", "c1")
	chain(t, s, "t2", "", "c1")
	refs := []graph.CheckpointRef{
		{Thread: "t", ID: "c1"},
		{Thread: "t", ID: "c2"},
		{Thread: "t", NS: "sub", ID: "c1"},
		{Thread: "t2", ID: "c1"},
	}
	for i, ref := range refs {
		recs := []graph.TaskRecord{{TaskID: "task", Kind: "result", Data: []byte{byte(i)}}}
		require.NoError(t, s.PutTaskRecords(t.Context(), ref, recs))
	}
	for i, ref := range refs {
		got, err := s.TaskRecords(t.Context(), ref)
		require.NoError(t, err)
		assert.Equal(t, []graph.TaskRecord{{TaskID: "task", Kind: "result", Data: []byte{byte(i)}}}, got, "%+v", ref)
	}

	put(t, s, record("t", "", "c3", "c2", 2))
	got, err := s.TaskRecords(t.Context(), graph.CheckpointRef{Thread: "t", ID: "c3"})
	require.NoError(t, err)
	assert.Empty(t, got, "a checkpoint without records has none")
}

func testTaskNotFound(t *testing.T, s graph.Saver) {
	chain(t, s, "t", "", "c1")
	chain(t, s, "t2", "", "d1")
	recs := []graph.TaskRecord{{TaskID: "a", Kind: "result", Data: []byte("x")}}
	tests := []struct {
		name string
		ref  graph.CheckpointRef
	}{
		{"UnknownThread", graph.CheckpointRef{Thread: "nobody", ID: "c1"}},
		{"UnknownID", graph.CheckpointRef{Thread: "t", ID: "c9"}},
		{"IDOfAnotherThread", graph.CheckpointRef{Thread: "t", ID: "d1"}},
		{"IDOfAnotherNamespace", graph.CheckpointRef{Thread: "t", NS: "sub", ID: "c1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertNotFound(t, s.PutTaskRecords(t.Context(), tc.ref, recs))
			_, err := s.TaskRecords(t.Context(), tc.ref)
			assertNotFound(t, err)
		})
	}
}
