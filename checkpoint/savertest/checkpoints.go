package savertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// checkpointRules cover PutCheckpoint and GetCheckpoint.
var checkpointRules = []rule{
	{"PutThenGetReturnsEveryField", testPutThenGet},
	{"GetWithoutIDReturnsNewestStoredNotNewestTimestamp", testGetNewest},
	{"GetOfMissingCheckpointIsNotFound", testGetNotFound},
	{"NamespacesAreSeparate", testNamespacesSeparate},
}

func testPutThenGet(t *testing.T, s graph.Saver) {
	recs := []graph.CheckpointRecord{
		{
			Thread: "thread-1", NS: "", ID: "cp-input", ParentID: "", Step: -1,
			Source: graph.SourceInput, Created: time.Date(2024, 2, 29, 23, 59, 58, 123456789, time.FixedZone("UTC+5", 5*3600)),
			Meta: pattern(200, 0),
		},
		{
			Thread: "thread-1", NS: "", ID: "cp-loop", ParentID: "cp-input", Step: 0,
			Source: graph.SourceLoop, Created: time.Date(2024, 3, 1, 0, 0, 0, 1000, time.UTC),
			Meta: []byte(`{"versions":{"messages":"00001"},"next":["planner"]}`),
		},
		{
			Thread: "线程 'two'", NS: `team|agent:"3"`, ID: "cp-fork", ParentID: "cp-elsewhere", Step: 1 << 40,
			Source: graph.SourceFork, Created: time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC),
			Meta: []byte{0, 0xff, '\'', '"', '\\', 0, '\n'},
		},
		{
			Thread: "thread-3", NS: "sub", ID: "cp-update", ParentID: "cp-input", Step: 7,
			Source: graph.Source("custom"), Created: time.Date(2030, 1, 2, 3, 4, 5, 6000, time.Local),
			Meta: []byte("update"),
		},
	}
	// The parents of the last two come first: a checkpoint follows the
	// newest of its namespace.
	put(t, s, record(recs[2].Thread, recs[2].NS, recs[2].ParentID, "", 0))
	put(t, s, record(recs[3].Thread, recs[3].NS, recs[3].ParentID, "", 0))
	for _, cp := range recs {
		put(t, s, cp)
	}
	for _, want := range recs {
		got, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: want.Thread, NS: want.NS, ID: want.ID})
		require.NoError(t, err, "get %q", want.ID)
		assertRecord(t, want, got)
	}
}

func testGetNewest(t *testing.T, s graph.Saver) {
	// Stored in the order m, z, a; the clock ties for the first two and goes
	// backwards for the third. The newest is the last stored.
	tie := base.Add(time.Hour)
	parent := ""
	for i, c := range []struct {
		id      string
		created time.Time
	}{{"m", tie}, {"z", tie}, {"a", tie.Add(-time.Minute)}} {
		cp := record("t", "", c.id, parent, i)
		cp.Created = c.created
		put(t, s, cp)
		parent = c.id

		got, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t"})
		require.NoError(t, err)
		assertRecord(t, cp, got)
	}
}

func testGetNotFound(t *testing.T, s graph.Saver) {
	chain(t, s, "t1", "", "c1", "c2")
	chain(t, s, "t2", "", "d1")
	chain(t, s, "t1", "sub", "s1")

	tests := []struct {
		name string
		ref  graph.CheckpointRef
	}{
		{"UnknownThreadNewest", graph.CheckpointRef{Thread: "nobody"}},
		{"UnknownThreadWithID", graph.CheckpointRef{Thread: "nobody", ID: "c1"}},
		{"UnknownID", graph.CheckpointRef{Thread: "t1", ID: "c9"}},
		{"IDOfAnotherThread", graph.CheckpointRef{Thread: "t1", ID: "d1"}},
		{"IDOfAnotherNamespace", graph.CheckpointRef{Thread: "t1", ID: "s1"}},
		{"IDOfRootInANamespace", graph.CheckpointRef{Thread: "t1", NS: "sub", ID: "c1"}},
		{"NewestOfAnEmptyNamespace", graph.CheckpointRef{Thread: "t1", NS: "other"}},
		{"NewestOfANamespaceOnlyAnotherThreadHas", graph.CheckpointRef{Thread: "t2", NS: "sub"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.GetCheckpoint(t.Context(), tc.ref)
			assertNotFound(t, err)
		})
	}
}

func testNamespacesSeparate(t *testing.T, s graph.Saver) {
	root := chain(t, s, "t", "", "r1", "r2")
	sub := chain(t, s, "t", "sub", "s1", "s2", "s3")
	// The same id in two namespaces names two checkpoints.
	same := []graph.CheckpointRecord{record("t", "", "same", "r2", 5), record("t", "sub", "same", "s3", 6)}
	same[1].Meta = []byte("the sub one")
	put(t, s, same[0])
	put(t, s, same[1])
	root = append(root, same[0])
	sub = append(sub, same[1])

	for ns, want := range map[string][]graph.CheckpointRecord{"": root, "sub": sub} {
		got, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t", NS: ns})
		require.NoError(t, err)
		assertRecord(t, want[len(want)-1], got)

		got, err = s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t", NS: ns, ID: "same"})
		require.NoError(t, err)
		assertRecord(t, want[len(want)-1], got)

		list, err := s.ListCheckpoints(t.Context(), "t", ns, graph.ListOptions{})
		require.NoError(t, err)
		assert.Equal(t, idsOf(reversed(want)), idsOf(list), "namespace %q", ns)
	}
}
