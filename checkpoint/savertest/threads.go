package savertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// threadRules cover Threads.
var threadRules = []rule{
	{"ThreadsListsMostRecentlyUpdatedFirstWithCounts", testThreadsOrder},
	{"ThreadsHonoursLimit", testThreadsLimit},
	{"ThreadsOfAnEmptySaverIsEmpty", testThreadsEmpty},
}

// deleteRules cover DeleteThread.
var deleteRules = []rule{
	{"DeleteThreadRemovesEverythingInEveryNamespace", testDeleteRemoves},
	{"DeleteThreadLeavesOtherThreadsIntact", testDeleteLeavesOthers},
	{"DeleteOfUnknownThreadIsNotAnError", testDeleteUnknown},
	{"DeletedThreadCanBeWrittenAgain", testDeleteThenWrite},
}

// at returns a checkpoint record created at base plus minutes.
func at(thread, ns, id, parent string, minutes int) graph.CheckpointRecord {
	cp := record(thread, ns, id, parent, minutes)
	cp.Created = base.Add(time.Duration(minutes) * time.Minute)
	return cp
}

func testThreadsOrder(t *testing.T, s graph.Saver) {
	put(t, s, at("a", "", "a1", "", 0))
	put(t, s, at("a", "sub", "a2", "", 1))
	put(t, s, at("b", "", "b1", "", 2))
	put(t, s, at("c", "", "c1", "", 3))
	put(t, s, at("c", "", "c2", "c1", 4))
	put(t, s, at("a", "", "a3", "a1", 5))

	got, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	want := []graph.ThreadInfo{
		{ID: "a", Checkpoints: 3, Created: base, Updated: base.Add(5 * time.Minute)},
		{ID: "c", Checkpoints: 2, Created: base.Add(3 * time.Minute), Updated: base.Add(4 * time.Minute)},
		{ID: "b", Checkpoints: 1, Created: base.Add(2 * time.Minute), Updated: base.Add(2 * time.Minute)},
	}
	assertThreads(t, want, got)
}

// assertThreads compares thread infos, their timestamps with Equal.
func assertThreads(t *testing.T, want, got []graph.ThreadInfo) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].ID, got[i].ID, "thread %d", i)
		assert.Equal(t, want[i].Checkpoints, got[i].Checkpoints, "checkpoints of %q", want[i].ID)
		assert.Truef(t, want[i].Created.Equal(got[i].Created), "created of %q: want %v, got %v", want[i].ID, want[i].Created, got[i].Created)
		assert.Truef(t, want[i].Updated.Equal(got[i].Updated), "updated of %q: want %v, got %v", want[i].ID, want[i].Updated, got[i].Updated)
	}
}

func testThreadsLimit(t *testing.T, s graph.Saver) {
	for i, id := range []string{"t1", "t2", "t3", "t4"} {
		put(t, s, at(id, "", "c", "", i))
	}
	tests := []struct {
		limit int
		want  []string
	}{
		{0, []string{"t4", "t3", "t2", "t1"}},
		{1, []string{"t4"}},
		{3, []string{"t4", "t3", "t2"}},
		{9, []string{"t4", "t3", "t2", "t1"}},
	}
	for _, tc := range tests {
		got, err := s.Threads(t.Context(), graph.ThreadListOptions{Limit: tc.limit})
		require.NoError(t, err)
		ids := make([]string, len(got))
		for i, th := range got {
			ids[i] = th.ID
		}
		assert.Equal(t, tc.want, ids, "limit %d", tc.limit)
	}
}

func testThreadsEmpty(t *testing.T, s graph.Saver) {
	got, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	assert.Empty(t, got)
}

// threadFixture stores, in thread, two checkpoints with blobs and task
// records in the root namespace and one in namespace "sub".
func threadFixture(t *testing.T, s graph.Saver, thread string) {
	t.Helper()
	blob := graph.Blob{Channel: "messages", Version: "1", Data: []byte(thread)}
	put(t, s, record(thread, "", "c1", "", 0), blob)
	put(t, s, record(thread, "", "c2", "c1", 1), graph.Blob{Channel: "messages", Version: "2", Base: "1", Data: []byte("+")})
	put(t, s, record(thread, "sub", "c1", "", 0), blob)
	for _, ref := range []graph.CheckpointRef{{Thread: thread, ID: "c1"}, {Thread: thread, ID: "c2"}, {Thread: thread, NS: "sub", ID: "c1"}} {
		require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{{TaskID: "a", Kind: "result", Data: []byte(thread)}}))
	}
}

// assertThreadGone checks that nothing of thread can be read.
func assertThreadGone(t *testing.T, s graph.Saver, thread string) {
	t.Helper()
	for _, ns := range []string{"", "sub"} {
		_, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: thread, NS: ns})
		assertNotFound(t, err)
		_, err = s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: thread, NS: ns, ID: "c1"})
		assertNotFound(t, err)
		_, err = s.TaskRecords(t.Context(), graph.CheckpointRef{Thread: thread, NS: ns, ID: "c1"})
		assertNotFound(t, err)

		list, err := s.ListCheckpoints(t.Context(), thread, ns, graph.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, list)
		blobs, err := s.Blobs(t.Context(), thread, ns, []string{"messages"})
		require.NoError(t, err)
		assert.Empty(t, blobs)
	}
	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	for _, th := range threads {
		assert.NotEqual(t, thread, th.ID)
	}
}

// assertThreadIntact checks that the threadFixture of thread is all there.
func assertThreadIntact(t *testing.T, s graph.Saver, thread string) {
	t.Helper()
	list, err := s.ListCheckpoints(t.Context(), thread, "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"c2", "c1"}, idsOf(list))
	list, err = s.ListCheckpoints(t.Context(), thread, "sub", graph.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"c1"}, idsOf(list))

	blobs, err := s.Blobs(t.Context(), thread, "", []string{"messages"})
	require.NoError(t, err)
	assert.Len(t, blobs, 2)
	blobs, err = s.Blobs(t.Context(), thread, "sub", []string{"messages"})
	require.NoError(t, err)
	assert.Len(t, blobs, 1)

	recs, err := s.TaskRecords(t.Context(), graph.CheckpointRef{Thread: thread, NS: "sub", ID: "c1"})
	require.NoError(t, err)
	assert.Equal(t, []graph.TaskRecord{{TaskID: "a", Kind: "result", Data: []byte(thread)}}, recs)
}

func testDeleteRemoves(t *testing.T, s graph.Saver) {
	threadFixture(t, s, "doomed")
	require.NoError(t, s.DeleteThread(t.Context(), "doomed"))
	assertThreadGone(t, s, "doomed")
}

func testDeleteLeavesOthers(t *testing.T, s graph.Saver) {
	for _, th := range []string{"before", "doomed", "after", "doomed-2"} {
		threadFixture(t, s, th)
	}
	require.NoError(t, s.DeleteThread(t.Context(), "doomed"))
	assertThreadGone(t, s, "doomed")
	for _, th := range []string{"before", "after", "doomed-2"} {
		assertThreadIntact(t, s, th)
	}
	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	assert.Len(t, threads, 3)
}

func testDeleteUnknown(t *testing.T, s graph.Saver) {
	threadFixture(t, s, "kept")
	require.NoError(t, s.DeleteThread(t.Context(), "nobody"))
	require.NoError(t, s.DeleteThread(t.Context(), ""))
	assertThreadIntact(t, s, "kept")
}

func testDeleteThenWrite(t *testing.T, s graph.Saver) {
	threadFixture(t, s, "again")
	require.NoError(t, s.DeleteThread(t.Context(), "again"))
	threadFixture(t, s, "again")
	assertThreadIntact(t, s, "again")

	threads, err := s.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, 1)
	assert.Equal(t, 3, threads[0].Checkpoints, "the count starts again")
}
