package savertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// blobsAtRules cover graph.BlobReader, for Savers that are one; the
// others skip them.
var blobsAtRules = []rule{
	{"BlobsAtReturnsTheVersionsAndTheirBasesOnly", testBlobsAtChain},
	{"BlobsAtLeavesOutVersionsNotStored", testBlobsAtMissing},
	{"BlobsAtExcludesOtherThreadsAndNamespaces", testBlobsAtScoped},
	{"BlobsAtEndsACycleOfBases", testBlobsAtCycle},
}

// blobReader returns s as a graph.BlobReader, or skips t.
func blobReader(t *testing.T, s graph.Saver) graph.BlobReader {
	t.Helper()
	br, ok := s.(graph.BlobReader)
	if !ok {
		t.Skipf("%T is not a graph.BlobReader", s)
	}
	return br
}

func testBlobsAtChain(t *testing.T, s graph.Saver) {
	br := blobReader(t, s)
	want := blobFixture(t, s)
	m1, m2, m3 := want["messages"][0], want["messages"][1], want["messages"][2]
	got, err := br.BlobsAt(t.Context(), "t", "", map[string]string{"messages": "00002", "plan": "00001"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{m2, m1, want["plan"][0]}, got, "the version, its base, and no other branch")

	got, err = br.BlobsAt(t.Context(), "t", "", map[string]string{"messages": "00002.fork"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{m3, m1}, got)

	got, err = br.BlobsAt(t.Context(), "t", "", map[string]string{"count": "00002"})
	require.NoError(t, err)
	assert.ElementsMatch(t, want["count"], got, "a full value has no base to follow")
}

func testBlobsAtMissing(t *testing.T, s graph.Saver) {
	br := blobReader(t, s)
	want := blobFixture(t, s)
	got, err := br.BlobsAt(t.Context(), "t", "", map[string]string{"messages": "99999", "plan": "00001"})
	require.NoError(t, err)
	assert.ElementsMatch(t, want["plan"], got)

	got, err = br.BlobsAt(t.Context(), "nobody", "", map[string]string{"messages": "00001"})
	require.NoError(t, err)
	assert.Empty(t, got)
	got, err = br.BlobsAt(t.Context(), "t", "", nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func testBlobsAtScoped(t *testing.T, s graph.Saver) {
	br := blobReader(t, s)
	blobFixture(t, s)
	got, err := br.BlobsAt(t.Context(), "t", "sub", map[string]string{"messages": "00001", "plan": "00009"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{
		{Channel: "messages", Version: "00001", Data: []byte("other namespace")},
		{Channel: "plan", Version: "00009", Data: []byte("other namespace, other version")},
	}, got)
	got, err = br.BlobsAt(t.Context(), "t2", "", map[string]string{"messages": "00009"})
	require.NoError(t, err)
	assert.Equal(t, []graph.Blob{{Channel: "messages", Version: "00009", Data: []byte("other thread, other version")}}, got)
}

// testBlobsAtCycle: bases that lead back to a version already read (a
// corrupt store) end the chain rather than loop.
func testBlobsAtCycle(t *testing.T, s graph.Saver) {
	br := blobReader(t, s)
	a := graph.Blob{Channel: "c", Version: "a", Base: "b", Data: []byte("1")}
	b := graph.Blob{Channel: "c", Version: "b", Base: "a", Data: []byte("2")}
	put(t, s, record("t", "", "c1", "", 0), a, b)
	got, err := br.BlobsAt(t.Context(), "t", "", map[string]string{"c": "a"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{a, b}, got)
}
