package savertest

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// rule is one subtest of the suite: a rule of the Saver contract and the
// test that checks it against a fresh Saver.
type rule struct {
	name string
	test func(t *testing.T, s graph.Saver)
}

// Run checks that the Savers returned by newSaver satisfy the graph.Saver
// contract. newSaver is called once per subtest and must return an empty
// Saver; it should register any cleanup with t.Cleanup.
func Run(t *testing.T, newSaver func(t *testing.T) graph.Saver) {
	t.Helper()
	groups := [][]rule{
		checkpointRules,
		listRules,
		blobRules,
		blobsAtRules,
		taskRules,
		threadRules,
		deleteRules,
		atomicityRules,
		valueRules,
		concurrencyRules,
		conflictRules,
		sizeRules,
	}
	for _, group := range groups {
		for _, r := range group {
			t.Run(r.name, func(t *testing.T) {
				r.test(t, newSaver(t))
			})
		}
	}
}

// base is the timestamp the suite's checkpoints are created at, give or take
// their step.
var base = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// record returns a checkpoint of the given thread, namespace and id whose
// other fields are derived from its arguments, so every record differs.
func record(thread, ns, id, parent string, step int) graph.CheckpointRecord {
	return graph.CheckpointRecord{
		Thread:   thread,
		NS:       ns,
		ID:       id,
		ParentID: parent,
		Step:     step,
		Source:   graph.SourceLoop,
		Created:  base.Add(time.Duration(step) * time.Second),
		Meta:     []byte(`{"checkpoint":"` + id + `","thread":"` + thread + `"}`),
	}
}

// put stores cp and blobs and fails the test if that fails.
func put(t *testing.T, s graph.Saver, cp graph.CheckpointRecord, blobs ...graph.Blob) {
	t.Helper()
	require.NoError(t, s.PutCheckpoint(t.Context(), cp, blobs), "put checkpoint %q of thread %q", cp.ID, cp.Thread)
}

// chain stores a line of checkpoints with the given ids in thread and ns,
// each the parent of the next, and returns them in the order stored.
func chain(t *testing.T, s graph.Saver, thread, ns string, ids ...string) []graph.CheckpointRecord {
	t.Helper()
	out := make([]graph.CheckpointRecord, len(ids))
	parent := ""
	for i, id := range ids {
		out[i] = record(thread, ns, id, parent, i)
		put(t, s, out[i])
		parent = id
	}
	return out
}

// idsOf returns the ids of recs in order.
func idsOf(recs []graph.CheckpointRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// reversed returns a reversed copy of recs.
func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// assertRecord checks that got is want as a Saver returns it: every field
// equal, Created to the microsecond, an empty Meta either nil or empty, and
// Head, which a Saver does not store, empty.
func assertRecord(t *testing.T, want, got graph.CheckpointRecord) {
	t.Helper()
	want.Head = ""
	assert.Truef(t, want.Created.Truncate(time.Microsecond).Equal(got.Created),
		"Created of %q: want %v, got %v", want.ID, want.Created, got.Created)
	assert.Truef(t, bytes.Equal(want.Meta, got.Meta), "Meta of %q: want %q, got %q", want.ID, want.Meta, got.Meta)
	want.Created, got.Created = time.Time{}, time.Time{}
	want.Meta, got.Meta = nil, nil
	assert.Equal(t, want, got)
}

// assertRecords checks got against want element by element.
func assertRecords(t *testing.T, want, got []graph.CheckpointRecord) {
	t.Helper()
	require.Equal(t, idsOf(want), idsOf(got))
	for i := range want {
		assertRecord(t, want[i], got[i])
	}
}

// assertNotFound checks that err wraps graph.ErrNotFound.
func assertNotFound(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, graph.ErrNotFound)
}

// pattern returns n bytes that take every byte value, zero and 0xff
// included, varied by seed and by position beyond 256 so that a shifted copy
// differs.
func pattern(n int, seed byte) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(i) ^ byte(i>>8)*31 + seed
	}
	return out
}
