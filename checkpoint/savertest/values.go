package savertest

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// valueRules cover the values a Saver must store faithfully.
var valueRules = []rule{
	{"EmptyAndZeroValuesRoundTrip", testEmptyValues},
	{"LargeValuesRoundTrip", testLargeValues},
	{"StoredBytesDoNotAliasCallerSlices", testNoAliasing},
}

func testEmptyValues(t *testing.T, s graph.Saver) {
	nilMeta := graph.CheckpointRecord{Thread: "t", ID: "nil"}
	emptyMeta := graph.CheckpointRecord{Thread: "t", ID: "empty", ParentID: "nil", Meta: []byte{}, Created: base}
	put(t, s, nilMeta, graph.Blob{Channel: "a", Version: "1"})
	put(t, s, emptyMeta, graph.Blob{Channel: "b", Version: "1", Data: []byte{}})

	for _, want := range []graph.CheckpointRecord{nilMeta, emptyMeta} {
		got, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t", ID: want.ID})
		require.NoError(t, err)
		assertRecord(t, want, got)
	}
	got, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t", ID: "nil"})
	require.NoError(t, err)
	assert.True(t, got.Created.IsZero(), "a zero Created stays zero: %v", got.Created)

	blobs, err := s.Blobs(t.Context(), "t", "", []string{"a", "b"})
	require.NoError(t, err)
	require.Len(t, blobs, 2)
	for _, b := range blobs {
		assert.Empty(t, b.Data, "blob %s", b.Channel)
		assert.Empty(t, b.Base, "blob %s", b.Channel)
	}

	ref := graph.CheckpointRef{Thread: "t", ID: "nil"}
	require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{{}, {TaskID: "a", Data: []byte{}}}))
	recs, err := s.TaskRecords(t.Context(), ref)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, []string{"", "a"}, []string{recs[0].TaskID, recs[1].TaskID})
	for _, r := range recs {
		assert.Empty(t, r.Data)
		assert.Empty(t, r.Kind)
		assert.Empty(t, r.Key)
	}
}

func testLargeValues(t *testing.T, s graph.Saver) {
	const mib = 1 << 20
	cp := record("t", "", "big", "", 0)
	cp.Meta = pattern(mib, 1)
	blob := graph.Blob{Channel: "doc", Version: "1", Data: pattern(mib, 2)}
	put(t, s, cp, blob)
	ref := graph.CheckpointRef{Thread: "t", ID: "big"}
	rec := graph.TaskRecord{TaskID: "a", Kind: "result", Data: pattern(mib, 3)}
	require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{rec}))

	got, err := s.GetCheckpoint(t.Context(), ref)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(cp.Meta, got.Meta), "meta of %d bytes, got %d", len(cp.Meta), len(got.Meta))
	blobs, err := s.Blobs(t.Context(), "t", "", []string{"doc"})
	require.NoError(t, err)
	require.Len(t, blobs, 1)
	assert.True(t, bytes.Equal(blob.Data, blobs[0].Data), "blob of %d bytes, got %d", len(blob.Data), len(blobs[0].Data))
	recs, err := s.TaskRecords(t.Context(), ref)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.True(t, bytes.Equal(rec.Data, recs[0].Data), "record of %d bytes, got %d", len(rec.Data), len(recs[0].Data))
}

func testNoAliasing(t *testing.T, s graph.Saver) {
	meta, data, task := []byte("meta"), []byte("data"), []byte("task")
	cp := graph.CheckpointRecord{Thread: "t", ID: "c1", Created: time.Unix(0, 0), Meta: meta}
	require.NoError(t, s.PutCheckpoint(t.Context(), cp, []graph.Blob{{Channel: "c", Version: "1", Data: data}}))
	ref := graph.CheckpointRef{Thread: "t", ID: "c1"}
	require.NoError(t, s.PutTaskRecords(t.Context(), ref, []graph.TaskRecord{{TaskID: "a", Data: task}}))

	// Change what was passed in, and what came out.
	copy(meta, "XXXX")
	copy(data, "XXXX")
	copy(task, "XXXX")
	for range 2 {
		got, err := s.GetCheckpoint(t.Context(), ref)
		require.NoError(t, err)
		assert.Equal(t, []byte("meta"), got.Meta)
		copy(got.Meta, "YYYY")

		list, err := s.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, []byte("meta"), list[0].Meta)
		copy(list[0].Meta, "YYYY")

		blobs, err := s.Blobs(t.Context(), "t", "", []string{"c"})
		require.NoError(t, err)
		require.Len(t, blobs, 1)
		assert.Equal(t, []byte("data"), blobs[0].Data)
		copy(blobs[0].Data, "YYYY")

		recs, err := s.TaskRecords(t.Context(), ref)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		assert.Equal(t, []byte("task"), recs[0].Data)
		copy(recs[0].Data, "YYYY")
	}
}
