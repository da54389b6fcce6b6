package savertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// conflictRules cover the head of a namespace: PutCheckpoint stores a
// checkpoint only after the newest one its writer saw.
var conflictRules = []rule{
	{"PutAfterAStaleParentConflictsAndStoresNothing", testStaleParent},
	{"ConcurrentWritersAfterTheSameHeadOneWins", testSameHeadRace},
	{"ConcurrentFirstCheckpointsOfAThreadOneWins", testFirstCheckpointRace},
	{"ForkDeclaringTheNewestIsStored", testDeclaredFork},
	{"EachNamespaceHasItsOwnHead", testNamespaceHeads},
	{"PutAfterTheThreadWasDeletedConflicts", testDeletedThread},
}

// assertConflict checks that err is a conflict with the fields of want,
// found both with errors.Is and errors.As.
func assertConflict(t *testing.T, want graph.CheckpointConflictError, err error) {
	t.Helper()
	require.ErrorIs(t, err, graph.ErrCheckpointConflict)
	var got *graph.CheckpointConflictError
	require.ErrorAs(t, err, &got)
	assert.Equal(t, want, *got)
}

// blobOf returns a blob of channel "messages" at version id.
func blobOf(id string) graph.Blob {
	return graph.Blob{Channel: "messages", Version: id, Data: []byte("written by " + id)}
}

// assertStored checks that thread has exactly the checkpoints ids in the
// root namespace, newest first, in one line, with one "messages" blob each
// and nothing else.
func assertStored(t *testing.T, s graph.Saver, thread string, ids ...string) {
	t.Helper()
	list, err := s.ListCheckpoints(t.Context(), thread, "", graph.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, ids, idsOf(list))
	assertLine(t, list)

	blobs, err := s.Blobs(t.Context(), thread, "", []string{"messages"})
	require.NoError(t, err)
	versions := make([]string, len(blobs))
	for i, b := range blobs {
		versions[i] = b.Version
	}
	assert.ElementsMatch(t, ids, versions, "the blobs are those of the stored checkpoints")

	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	for _, th := range threads {
		if th.ID == thread {
			assert.Equal(t, len(ids), th.Checkpoints, "checkpoints counted in thread %q", thread)
		}
	}
}

func testStaleParent(t *testing.T, s graph.Saver) {
	put(t, s, record("t", "", "c1", "", 0), blobOf("c1"))
	put(t, s, record("t", "", "c2", "c1", 1), blobOf("c2"))

	// A writer that read the thread at c1 and did not see c2.
	err := s.PutCheckpoint(t.Context(), record("t", "", "c3", "c1", 1), []graph.Blob{blobOf("c3")})
	assertConflict(t, graph.CheckpointConflictError{Thread: "t", Expected: "c1", Newest: "c2"}, err)
	// One that expects to start the thread.
	err = s.PutCheckpoint(t.Context(), record("t", "", "c4", "", 0), []graph.Blob{blobOf("c4")})
	assertConflict(t, graph.CheckpointConflictError{Thread: "t", Expected: "", Newest: "c2"}, err)

	assertStored(t, s, "t", "c2", "c1")
	for _, id := range []string{"c3", "c4"} {
		_, err = s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t", ID: id})
		assertNotFound(t, err)
	}
	// The writer that read c2 goes on.
	put(t, s, record("t", "", "c3", "c2", 2), blobOf("c3"))
	assertStored(t, s, "t", "c3", "c2", "c1")
}

// race has n writers put the checkpoints checkpoint(i) at once and
// returns their errors.
func race(t *testing.T, s graph.Saver, n int, checkpoint func(i int) graph.CheckpointRecord) []error {
	t.Helper()
	errs := make([]error, n)
	runAll(n, func(i int) error {
		cp := checkpoint(i)
		errs[i] = s.PutCheckpoint(t.Context(), cp, []graph.Blob{blobOf(cp.ID)})
		return nil
	})
	return errs
}

// winner checks that exactly one of errs is nil and returns its index.
func winner(t *testing.T, errs []error) int {
	t.Helper()
	won := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, won, "writers %d and %d both stored their checkpoint", won, i)
			won = i
		}
	}
	require.NotEqual(t, -1, won, "no writer stored its checkpoint: %v", errs)
	return won
}

func testSameHeadRace(t *testing.T, s graph.Saver) {
	put(t, s, record("t", "", "c0", "", 0), blobOf("c0"))
	put(t, s, record("t", "", "c1", "c0", 1), blobOf("c1"))

	errs := race(t, s, writers, func(i int) graph.CheckpointRecord {
		return record("t", "", fmt.Sprintf("w%d", i), "c1", 2)
	})
	won := winner(t, errs)
	id := fmt.Sprintf("w%d", won)
	for i, err := range errs {
		if i != won {
			assertConflict(t, graph.CheckpointConflictError{Thread: "t", Expected: "c1", Newest: id}, err)
		}
	}
	assertStored(t, s, "t", id, "c1", "c0")
}

func testFirstCheckpointRace(t *testing.T, s graph.Saver) {
	put(t, s, record("other", "", "c0", "", 0), blobOf("c0"))

	errs := race(t, s, writers, func(i int) graph.CheckpointRecord {
		return record("new", "", fmt.Sprintf("w%d", i), "", 0)
	})
	won := winner(t, errs)
	id := fmt.Sprintf("w%d", won)
	for i, err := range errs {
		if i != won {
			assertConflict(t, graph.CheckpointConflictError{Thread: "new", Expected: "", Newest: id}, err)
		}
	}
	assertStored(t, s, "new", id)
	assertStored(t, s, "other", "c0")
}

func testDeclaredFork(t *testing.T, s graph.Saver) {
	chain(t, s, "t", "", "c1", "c2", "c3")

	// UpdateState on c1 while c3 is the newest: a new branch from c1.
	fork := record("t", "", "f1", "c1", 1)
	fork.Source, fork.Head = graph.SourceFork, "c3"
	put(t, s, fork)
	put(t, s, record("t", "", "f2", "f1", 2))

	// A fork, or a step on the old branch, by a writer that still thinks
	// c3 is the newest.
	stale := record("t", "", "f3", "c1", 1)
	stale.Source, stale.Head = graph.SourceFork, "c3"
	err := s.PutCheckpoint(t.Context(), stale, nil)
	assertConflict(t, graph.CheckpointConflictError{Thread: "t", Expected: "c3", Newest: "f2"}, err)
	err = s.PutCheckpoint(t.Context(), record("t", "", "c4", "c3", 3), nil)
	assertConflict(t, graph.CheckpointConflictError{Thread: "t", Expected: "c3", Newest: "f2"}, err)

	list, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"f2", "f1", "c3", "c2", "c1"}, idsOf(list))
	assert.Equal(t, "c1", list[1].ParentID)
	newest, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t"})
	require.NoError(t, err)
	assert.Equal(t, "f2", newest.ID, "the fork's branch is the one the thread continues")
}

func testNamespaceHeads(t *testing.T, s graph.Saver) {
	chain(t, s, "t", "", "r1", "r2")
	chain(t, s, "t", "sub", "s1")

	// Each namespace follows its own newest, whatever the others do.
	put(t, s, record("t", "sub", "s2", "s1", 1))
	put(t, s, record("t", "", "r3", "r2", 2))
	put(t, s, record("t", "other", "o1", "", 0))

	err := s.PutCheckpoint(t.Context(), record("t", "sub", "s3", "s1", 1), nil)
	assertConflict(t, graph.CheckpointConflictError{Thread: "t", NS: "sub", Expected: "s1", Newest: "s2"}, err)
	err = s.PutCheckpoint(t.Context(), record("t", "", "r4", "s2", 3), nil)
	assertConflict(t, graph.CheckpointConflictError{Thread: "t", Expected: "s2", Newest: "r3"}, err)
	// Heads belong to their thread too.
	err = s.PutCheckpoint(t.Context(), record("u", "", "x1", "r3", 3), nil)
	assertConflict(t, graph.CheckpointConflictError{Thread: "u", Expected: "r3", Newest: ""}, err)

	for ns, want := range map[string]string{"": "r3", "sub": "s2", "other": "o1"} {
		got, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t", NS: ns})
		require.NoError(t, err)
		assert.Equal(t, want, got.ID, "newest of namespace %q", ns)
	}
	list, err := s.ListCheckpoints(t.Context(), "u", "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list)
}

func testDeletedThread(t *testing.T, s graph.Saver) {
	put(t, s, record("t", "", "c1", "", 0), blobOf("c1"))
	put(t, s, record("t", "", "c2", "c1", 1), blobOf("c2"))
	require.NoError(t, s.DeleteThread(t.Context(), "t"))

	// A writer that had read the thread before it was deleted does not
	// bring it back.
	err := s.PutCheckpoint(t.Context(), record("t", "", "c3", "c2", 2), []graph.Blob{blobOf("c3")})
	assertConflict(t, graph.CheckpointConflictError{Thread: "t", Expected: "c2", Newest: ""}, err)
	assertThreadGone(t, s, "t")

	put(t, s, record("t", "", "n1", "", 0), blobOf("n1"))
	assertStored(t, s, "t", "n1")
}
