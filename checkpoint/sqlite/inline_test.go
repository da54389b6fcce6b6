package sqlite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
)

// putStep stores checkpoint id of thread t after parent with blobs.
func putStep(t *testing.T, s *sqlite.Saver, id, parent string, step int, blobs ...graph.Blob) {
	t.Helper()
	cp := graph.CheckpointRecord{Thread: "t", ID: id, ParentID: parent, Step: step, Source: graph.SourceLoop, Meta: []byte("m")}
	require.NoError(t, s.PutCheckpoint(t.Context(), cp, blobs))
}

// blobsAt reads the blobs of thread t at versions.
func blobsAt(t *testing.T, s *sqlite.Saver, versions map[string]string) []graph.Blob {
	t.Helper()
	got, err := s.BlobsAt(t.Context(), "t", "", versions)
	require.NoError(t, err)
	return got
}

// countRows counts the rows of a query of the raw file.
func countRows(t *testing.T, path, query string) int {
	t.Helper()
	var n int
	require.NoError(t, rawDB(t, path).QueryRowContext(t.Context(), query).Scan(&n))
	return n
}

func TestSmallBlobsOfTheCheckpointsOwnVersionAreKeptInItsRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s := open(t, path)
	full := graph.Blob{Channel: "messages", Version: "c1", Data: []byte(`["hi"]`)}
	count := graph.Blob{Channel: "count", Version: "c1", Data: []byte(`1`)}
	empty := graph.Blob{Channel: "flag", Version: "c1"} // reads back nil, stored or not
	big := graph.Blob{Channel: "doc", Version: "c1", Data: []byte(strings.Repeat("x", 300))}
	putStep(t, s, "c1", "", 0, full, count, empty, big)
	delta := graph.Blob{Channel: "messages", Version: "c2", Base: "c1", Data: []byte(`["hello"]`)}
	other := graph.Blob{Channel: "count", Version: "v7", Data: []byte(`2`)}
	putStep(t, s, "c2", "c1", 1, delta, other)

	assert.Equal(t, 2, countRows(t, path, `SELECT count(*) FROM checkpoint_blobs`), "the large blob and the one of another version")
	assert.Equal(t, 2, countRows(t, path, `SELECT count(*) FROM checkpoints WHERE blobs IS NOT NULL`))

	got, err := s.Blobs(t.Context(), "t", "", []string{"messages", "count", "flag", "doc"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{full, count, empty, big, delta, other}, got)
	assert.ElementsMatch(t, []graph.Blob{delta, full, count, big},
		blobsAt(t, s, map[string]string{"messages": "c2", "count": "c1", "doc": "c1"}), "a chain through two rows")
	assert.ElementsMatch(t, []graph.Blob{other}, blobsAt(t, s, map[string]string{"count": "v7"}))
	assert.Empty(t, blobsAt(t, s, map[string]string{"count": "c2", "messages": "c9"}), "no such versions")
}

func TestStoringABlobOfARowAgainKeepsTheFirst(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "checkpoints.db"))
	// In the row of c1 first, then given again by c2. And in
	// checkpoint_blobs first (given by c2 under c3's id), then in the row
	// of c3.
	first := graph.Blob{Channel: "messages", Version: "c1", Data: []byte("first")}
	early := graph.Blob{Channel: "plan", Version: "c3", Data: []byte("early")}
	putStep(t, s, "c1", "", 0, first)
	putStep(t, s, "c2", "c1", 1, graph.Blob{Channel: "messages", Version: "c1", Data: []byte("second")}, early)
	putStep(t, s, "c3", "c2", 2, graph.Blob{Channel: "plan", Version: "c3", Data: []byte("late")})
	// The same blob twice in one call: the first, too large for the row,
	// is kept.
	large := graph.Blob{Channel: "doc", Version: "c4", Data: []byte(strings.Repeat("x", 300))}
	putStep(t, s, "c4", "c3", 3, large, graph.Blob{Channel: "doc", Version: "c4", Data: []byte("small")})

	got, err := s.Blobs(t.Context(), "t", "", []string{"messages"})
	require.NoError(t, err)
	assert.Equal(t, []graph.Blob{first}, got)
	assert.Equal(t, []graph.Blob{first}, blobsAt(t, s, map[string]string{"messages": "c1"}))
	got, err = s.Blobs(t.Context(), "t", "", []string{"plan", "doc"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{early, large}, got)
	assert.Equal(t, []graph.Blob{early}, blobsAt(t, s, map[string]string{"plan": "c3"}))
	assert.Equal(t, []graph.Blob{large}, blobsAt(t, s, map[string]string{"doc": "c4"}))
}

func TestCorruptBlobOfARowIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s := open(t, path)
	putStep(t, s, "c1", "", 0, graph.Blob{Channel: "messages", Version: "c1", Data: []byte("d")})
	_, err := rawDB(t, path).ExecContext(t.Context(), `UPDATE checkpoints SET blobs = '{"messages":["","not hex"]}'`)
	require.NoError(t, err)

	_, err = s.Blobs(t.Context(), "t", "", []string{"messages"})
	assert.EqualError(t, err, `sqlite: blobs of thread "t" namespace "": corrupt blob row: sql: Scan error on column index 3, name "data": want a blob, got <nil>`)
	_, err = s.BlobsAt(t.Context(), "t", "", map[string]string{"messages": "c1"})
	assert.EqualError(t, err, `sqlite: blobs of thread "t" namespace "" at their versions: corrupt blob row: sql: Scan error on column index 3, name "data": want a blob, got <nil>`)
}

// testdata/schema1.db was written by this package at schema version 1,
// before blobs were kept in checkpoint rows: thread t1 with c1 <- c2 <- c3
// in namespace "" (messages a chain of deltas, count two full values) and
// s1 in namespace "sub", a task record of c3, and thread t2 with d1.
func TestReadsAFileOfSchemaVersion1(t *testing.T) {
	src, err := os.ReadFile("testdata/schema1.db")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	require.NoError(t, os.WriteFile(path, src, 0o600))
	s := open(t, path)
	ctx := t.Context()
	assert.Equal(t, 2, countRows(t, path, `SELECT max(version) FROM checkpoint_schema`), "migrated")

	newest, err := s.GetCheckpoint(ctx, graph.CheckpointRef{Thread: "t1"})
	require.NoError(t, err)
	assert.Equal(t, graph.CheckpointRecord{Thread: "t1", ID: "c3", ParentID: "c2", Step: 2, Source: graph.SourceLoop,
		Created: time.Date(2026, 11, 30, 12, 0, 2, 0, time.UTC), Meta: []byte(`{"step":2}`)}, newest)
	list, err := s.ListCheckpoints(ctx, "t1", "", graph.ListOptions{})
	require.NoError(t, err)
	var ids []string
	for _, cp := range list {
		ids = append(ids, cp.ID)
	}
	assert.Equal(t, []string{"c3", "c2", "c1"}, ids)

	m1 := graph.Blob{Channel: "messages", Version: "c1", Data: []byte(`["hi"]`)}
	m2 := graph.Blob{Channel: "messages", Version: "c2", Base: "c1", Data: []byte(`["hello"]`)}
	m3 := graph.Blob{Channel: "messages", Version: "c3", Base: "c2", Data: []byte(`["bye"]`)}
	n3 := graph.Blob{Channel: "count", Version: "c3", Data: []byte(`3`)}
	got, err := s.BlobsAt(ctx, "t1", "", map[string]string{"messages": "c3", "count": "c3"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{m1, m2, m3, n3}, got)
	all, err := s.Blobs(ctx, "t1", "", []string{"messages"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{m1, m2, m3}, all)
	recs, err := s.TaskRecords(ctx, graph.CheckpointRef{Thread: "t1", ID: "c3"})
	require.NoError(t, err)
	assert.Equal(t, []graph.TaskRecord{{TaskID: "task1", Kind: "result", Data: []byte(`"done"`)}}, recs)
	threads, err := s.Threads(ctx, graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, 2)
	assert.Equal(t, "t2", threads[0].ID, "the newest first")
	assert.Equal(t, 4, threads[1].Checkpoints, "t1, both namespaces")

	// A new step keeps its delta in its row, on a chain that starts in
	// the old table.
	m4 := graph.Blob{Channel: "messages", Version: "c4", Base: "c3", Data: []byte(`["again"]`)}
	require.NoError(t, s.PutCheckpoint(ctx, graph.CheckpointRecord{Thread: "t1", ID: "c4", ParentID: "c3", Step: 3, Source: graph.SourceLoop}, []graph.Blob{m4}))
	got, err = s.BlobsAt(ctx, "t1", "", map[string]string{"messages": "c4"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []graph.Blob{m1, m2, m3, m4}, got)
}

func TestBlobsAtEndsACycleOfBasesThroughRows(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "checkpoints.db"))
	a := graph.Blob{Channel: "c", Version: "c1", Base: "c2", Data: []byte("1")}
	b := graph.Blob{Channel: "c", Version: "c2", Base: "c1", Data: []byte("2")}
	putStep(t, s, "c1", "", 0, a)
	putStep(t, s, "c2", "c1", 1, b)
	assert.ElementsMatch(t, []graph.Blob{a, b}, blobsAt(t, s, map[string]string{"c": "c2"}))
}
