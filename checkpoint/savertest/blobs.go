package savertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// blobRules cover the blobs stored with PutCheckpoint and read with Blobs.
var blobRules = []rule{
	{"BlobsReturnsEveryVersionOfTheChannelOnEveryBranch", testBlobsEveryVersion},
	{"BlobsReturnsOnlyTheRequestedChannels", testBlobsOnlyRequested},
	{"BlobsExcludeOtherThreadsAndNamespaces", testBlobsScoped},
	{"BlobsOfUnknownThreadOrChannelAreEmpty", testBlobsUnknown},
	{"StoringTheSameBlobAgainKeepsTheFirst", testBlobsFirstKept},
}

// blobFixture stores, in thread "t" and namespace "", a line c1 <- c2 and a
// fork c1 <- c3, each introducing blobs; and blobs of the same channels in
// thread "t2" and in namespace "sub" of "t". It returns the blobs of "t" in
// namespace "", by channel.
func blobFixture(t *testing.T, s graph.Saver) map[string][]graph.Blob {
	t.Helper()
	m1 := graph.Blob{Channel: "messages", Version: "00001", Data: []byte(`[{"role":"user"}]`)}
	m2 := graph.Blob{Channel: "messages", Version: "00002", Base: "00001", Data: []byte(`[{"role":"ai"}]`)}
	m3 := graph.Blob{Channel: "messages", Version: "00002.fork", Base: "00001", Data: pattern(100, 7)}
	p1 := graph.Blob{Channel: "plan", Version: "00001", Data: []byte(`{"steps":[]}`)}
	n1 := graph.Blob{Channel: "count", Version: "00002", Data: []byte("3")}
	put(t, s, record("t", "", "c1", "", 0), m1, p1)
	put(t, s, record("t", "", "c2", "c1", 1), m2, n1)
	fork := record("t", "", "c3", "c1", 1)
	fork.Source, fork.Head = graph.SourceFork, "c2"
	put(t, s, fork, m3)

	put(t, s, record("t2", "", "c1", "", 0),
		graph.Blob{Channel: "messages", Version: "00001", Data: []byte("other thread")},
		graph.Blob{Channel: "messages", Version: "00009", Data: []byte("other thread, other version")})
	put(t, s, record("t", "sub", "c1", "", 0),
		graph.Blob{Channel: "messages", Version: "00001", Data: []byte("other namespace")},
		graph.Blob{Channel: "plan", Version: "00009", Data: []byte("other namespace, other version")})

	return map[string][]graph.Blob{
		"messages": {m1, m2, m3},
		"plan":     {p1},
		"count":    {n1},
	}
}

func testBlobsEveryVersion(t *testing.T, s graph.Saver) {
	want := blobFixture(t, s)
	got, err := s.Blobs(t.Context(), "t", "", []string{"messages"})
	require.NoError(t, err)
	assert.ElementsMatch(t, want["messages"], got)
}

func testBlobsOnlyRequested(t *testing.T, s graph.Saver) {
	byChannel := blobFixture(t, s)
	tests := []struct {
		name     string
		channels []string
	}{
		{"One", []string{"plan"}},
		{"Two", []string{"plan", "messages"}},
		{"All", []string{"count", "plan", "messages"}},
		{"RepeatedName", []string{"count", "count"}},
		{"WithUnknown", []string{"nothing", "count"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want []graph.Blob
			seen := map[string]bool{}
			for _, ch := range tc.channels {
				if !seen[ch] {
					want = append(want, byChannel[ch]...)
				}
				seen[ch] = true
			}
			got, err := s.Blobs(t.Context(), "t", "", tc.channels)
			require.NoError(t, err)
			assert.ElementsMatch(t, want, got)
		})
	}
}

func testBlobsScoped(t *testing.T, s graph.Saver) {
	blobFixture(t, s)
	got, err := s.Blobs(t.Context(), "t2", "", []string{"messages", "plan"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{
		{Channel: "messages", Version: "00001", Data: []byte("other thread")},
		{Channel: "messages", Version: "00009", Data: []byte("other thread, other version")},
	}, got)

	got, err = s.Blobs(t.Context(), "t", "sub", []string{"messages", "plan"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{
		{Channel: "messages", Version: "00001", Data: []byte("other namespace")},
		{Channel: "plan", Version: "00009", Data: []byte("other namespace, other version")},
	}, got)
}

func testBlobsUnknown(t *testing.T, s graph.Saver) {
	blobFixture(t, s)
	tests := []struct {
		name, thread, ns string
		channels         []string
	}{
		{"UnknownThread", "nobody", "", []string{"messages"}},
		{"UnknownNamespace", "t", "nowhere", []string{"messages"}},
		{"UnknownChannel", "t", "", []string{"nothing"}},
		{"NoChannels", "t", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Blobs(t.Context(), tc.thread, tc.ns, tc.channels)
			require.NoError(t, err)
			assert.Empty(t, got)
		})
	}
}

func testBlobsFirstKept(t *testing.T, s graph.Saver) {
	first := graph.Blob{Channel: "messages", Version: "00001", Data: []byte("first")}
	again := graph.Blob{Channel: "messages", Version: "00001", Base: "00000", Data: []byte("second")}
	put(t, s, record("t", "", "c1", "", 0), first)
	put(t, s, record("t", "", "c2", "c1", 1), again)
	// Twice within one put, too.
	put(t, s, record("t", "", "c3", "c2", 2), again, again)

	got, err := s.Blobs(t.Context(), "t", "", []string{"messages"})
	require.NoError(t, err)
	assert.Equal(t, []graph.Blob{first}, got)

	list, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"c3", "c2", "c1"}, idsOf(list), "every checkpoint is stored")
}
