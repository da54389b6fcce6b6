package savertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// listRules cover ListCheckpoints.
var listRules = []rule{
	{"ListReturnsNewestStoredFirst", testListOrder},
	{"ListHonoursBeforeAndLimit", testListBeforeLimit},
	{"ListBeforeMissingCheckpointIsNotFound", testListBeforeNotFound},
	{"ListOfUnknownThreadIsEmpty", testListUnknownThread},
	{"ListIncludesEveryBranch", testListBranches},
}

func testListOrder(t *testing.T, s graph.Saver) {
	// Ids out of lexical order, all with one timestamp: only the order of
	// storing can tell them apart.
	var stored []graph.CheckpointRecord
	parent := ""
	for i, id := range []string{"k", "b", "x", "a", "m"} {
		cp := record("t", "", id, parent, i)
		cp.Created = base
		put(t, s, cp)
		stored = append(stored, cp)
		parent = id
	}
	got, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
	require.NoError(t, err)
	assertRecords(t, reversed(stored), got)
}

func testListBeforeLimit(t *testing.T, s graph.Saver) {
	chain(t, s, "t", "", "c1", "c2", "c3", "c4", "c5")
	chain(t, s, "other", "", "c1", "c2", "c3", "c4", "c5", "c6")

	tests := []struct {
		name string
		opts graph.ListOptions
		want []string
	}{
		{"NoBounds", graph.ListOptions{}, []string{"c5", "c4", "c3", "c2", "c1"}},
		{"Limit", graph.ListOptions{Limit: 2}, []string{"c5", "c4"}},
		{"LimitAboveCount", graph.ListOptions{Limit: 10}, []string{"c5", "c4", "c3", "c2", "c1"}},
		{"Before", graph.ListOptions{Before: "c3"}, []string{"c2", "c1"}},
		{"BeforeNewest", graph.ListOptions{Before: "c5"}, []string{"c4", "c3", "c2", "c1"}},
		{"BeforeOldest", graph.ListOptions{Before: "c1"}, nil},
		{"BeforeAndLimit", graph.ListOptions{Before: "c4", Limit: 2}, []string{"c3", "c2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListCheckpoints(t.Context(), "t", "", tc.opts)
			require.NoError(t, err)
			if len(tc.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, idsOf(got))
		})
	}
}

func testListBeforeNotFound(t *testing.T, s graph.Saver) {
	chain(t, s, "t", "", "c1", "c2")
	chain(t, s, "other", "", "o1")
	chain(t, s, "t", "sub", "s1")

	for _, before := range []string{"c9", "o1", "s1"} {
		_, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{Before: before})
		assertNotFound(t, err)
	}
}

func testListUnknownThread(t *testing.T, s graph.Saver) {
	chain(t, s, "t", "", "c1")

	got, err := s.ListCheckpoints(t.Context(), "nobody", "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, got)

	got, err = s.ListCheckpoints(t.Context(), "t", "no-such-namespace", graph.ListOptions{Limit: 3})
	require.NoError(t, err)
	assert.Empty(t, got)
}

func testListBranches(t *testing.T, s graph.Saver) {
	// c1 <- c2 <- c4, and c1 <- c3 (a fork): both children of c1 are listed.
	// c3 and c4 each declare the newest checkpoint they were written after.
	c1 := record("t", "", "c1", "", 0)
	c2 := record("t", "", "c2", "c1", 1)
	c3 := record("t", "", "c3", "c1", 1)
	c3.Source, c3.Head = graph.SourceFork, "c2"
	c4 := record("t", "", "c4", "c2", 2)
	c4.Head = "c3"
	for _, cp := range []graph.CheckpointRecord{c1, c2, c3, c4} {
		put(t, s, cp)
	}
	got, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
	require.NoError(t, err)
	assertRecords(t, []graph.CheckpointRecord{c4, c3, c2, c1}, got)
}
