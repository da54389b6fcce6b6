package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func described(id int64, name, path string) Frame {
	return Frame{ID: id, Name: name, Path: path, Data: fmt.Appendf(nil, "data %d", id),
		Meta: fmt.Appendf(nil, `{"n": %d}`, id), Body: fmt.Appendf(nil, "body %d", id)}
}

func TestAFrameAppendedAgainIsStoredOnceAndTheOthersOfItsCommitToo(t *testing.T) {
	l := newLog(t, Config{})
	for _, s := range []string{"a", "b"} {
		_, err := l.Open(t.Context(), s, 1)
		require.NoError(t, err)
	}
	require.NoError(t, l.Append("a", 1, frame(1)))
	require.NoError(t, l.Flush("a"))
	again := frame(1)
	again.Data = []byte("again")
	require.NoError(t, l.AppendAll([]Entry{{Stream: "a", Fence: 1, Frame: again}, {Stream: "a", Fence: 1, Frame: frame(2)},
		{Stream: "a", Fence: 1, Frame: frame(2)}, {Stream: "b", Fence: 1, Frame: frame(1)}}))
	require.NoError(t, l.Flush("a"))
	require.NoError(t, l.Flush("b"))
	got, err := l.Read(t.Context(), "a", 0, 10, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, []Frame{frame(1), frame(2)}, got, "the first write of an id stays")
	got, err = l.Read(t.Context(), "b", 0, 10, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, []Frame{frame(1)}, got)
}

func TestTheFramesOfAnAppendAllCommitInOneTransaction(t *testing.T) {
	l := newLog(t, Config{MaxBatch: 2})
	var entries []Entry
	for _, s := range []string{"a", "b"} {
		_, err := l.Open(t.Context(), s, 1)
		require.NoError(t, err)
		for id := int64(1); id <= 5; id++ {
			entries = append(entries, Entry{Stream: s, Fence: 1, Frame: frame(id)})
		}
	}
	require.NoError(t, l.Append("a", 1, frame(100))) // a commit of its own: the batch holds 2
	require.NoError(t, l.AppendAll(entries))
	require.NoError(t, l.Flush("a"))
	var txs int
	require.NoError(t, l.pool.QueryRow(t.Context(), `SELECT count(DISTINCT xmin::text) FROM `+l.q.frames+` WHERE id <= 5`).Scan(&txs))
	assert.Equal(t, 1, txs, "10 frames, batches of 2, one transaction")
}

func TestSelectReadsDescribedFramesByNameAndPathAndBodiesOnlyWhenAsked(t *testing.T) {
	l := newLog(t, Config{})
	_, err := l.Open(t.Context(), "run", 0)
	require.NoError(t, err)
	paths := []string{"wf", "wf/a_b", "wf/a_b/x", "wf/aXb", "wf/a_bc", "wf/a%b/c"}
	var entries []Entry
	for i, p := range paths {
		name := []string{"call", "end"}[i%2]
		entries = append(entries, Entry{Stream: "run", Frame: described(int64(i+1), name, p)})
	}
	entries = append(entries, Entry{Stream: "run", Frame: Frame{ID: 7, Name: "call", Data: []byte("not described")}})
	require.NoError(t, l.AppendAll(entries))
	require.NoError(t, l.Flush("run"))

	ids := func(q Query) []int64 {
		t.Helper()
		got, err := l.Select(t.Context(), "run", q)
		require.NoError(t, err)
		out := []int64{}
		for _, f := range got {
			out = append(out, f.ID)
			assert.Equal(t, q.Bodies, f.Body != nil, "frame %d: a body only when asked", f.ID)
		}
		return out
	}
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6}, ids(Query{}), "described frames only")
	assert.Equal(t, []int64{1, 3, 5}, ids(Query{Names: []string{"call"}}))
	assert.Equal(t, []int64{2, 3}, ids(Query{Path: "wf/a_b", Bodies: true}), "a path and what lies below, no pattern")
	assert.Equal(t, []int64{3}, ids(Query{Path: "wf/a_b", Names: []string{"call"}}))
	assert.Equal(t, []int64{3, 4}, ids(Query{After: 2, Until: 4}))
	assert.Equal(t, []int64{1, 2}, ids(Query{Limit: 2}))

	got, err := l.Select(t.Context(), "run", Query{Until: 1, Bodies: true})
	require.NoError(t, err)
	require.Len(t, got, 1)
	want := described(1, "call", "wf")
	assert.Equal(t, want.Data, got[0].Data)
	assert.Equal(t, want.Body, got[0].Body)
	assert.JSONEq(t, string(want.Meta), string(got[0].Meta))
	page, err := l.Read(t.Context(), "run", 0, 1, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, []Frame{{ID: 1, Name: "call", Data: want.Data}}, page, "a page reads no path, meta or body")
}

func TestFlushContextStopsWaitingWhenItsContextEnds(t *testing.T) {
	l := newLog(t, Config{})
	_, err := l.Open(t.Context(), "run", 0)
	require.NoError(t, err)
	// Another transaction holds the stream's row: the commit waits.
	tx, err := l.pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `SELECT 1 FROM `+l.q.streams+` WHERE stream = 'run' FOR UPDATE`)
	require.NoError(t, err)

	require.NoError(t, l.Append("run", 0, frame(1)))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- l.FlushContext(ctx, "run") }()
	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, `eventlog: flush stream "run"`)

	require.NoError(t, tx.Rollback(t.Context()))
	require.NoError(t, l.Flush("run"), "the frame is committed once the row is free")
	got, err := l.Read(t.Context(), "run", 0, 10, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, []Frame{frame(1)}, got)
}

func TestSelectEndsAPageAtItsBytesInTheDatabase(t *testing.T) {
	l := newLog(t, Config{})
	_, err := l.Open(t.Context(), "run", 0)
	require.NoError(t, err)
	var entries []Entry
	for i := range int64(6) {
		f := Frame{ID: i + 1, Name: "call", Path: "wf", Data: bytes.Repeat([]byte("d"), 100),
			Meta: []byte(`{}`), Body: bytes.Repeat([]byte("b"), 1000)}
		if i == 3 {
			f.Data = bytes.Repeat([]byte("D"), 5000)
		}
		entries = append(entries, Entry{Stream: "run", Frame: f})
	}
	require.NoError(t, l.AppendAll(entries))
	require.NoError(t, l.Flush("run"))
	ids := func(q Query) []int64 {
		t.Helper()
		got, err := l.Select(t.Context(), "run", q)
		require.NoError(t, err)
		out := []int64{}
		for _, f := range got {
			out = append(out, f.ID)
		}
		return out
	}
	assert.Equal(t, []int64{1, 2, 3}, ids(Query{MaxBytes: 350}), "data counted: 3 × 100 bytes")
	assert.Equal(t, []int64{1, 2, 3}, ids(Query{MaxBytes: 3300, Bodies: true}), "bodies counted when read: 3 × 1,100 bytes")
	assert.Equal(t, []int64{1}, ids(Query{MaxBytes: 50, Bodies: true}), "the first frame whatever its size")
	assert.Equal(t, []int64{4}, ids(Query{MaxBytes: 350, After: 3}), "a frame larger than a page comes alone")
	assert.Equal(t, []int64{5, 6}, ids(Query{MaxBytes: 350, After: 4}))
	assert.Equal(t, []int64{1, 2}, ids(Query{MaxBytes: 1 << 20, Limit: 2}), "the Limit too")
}

// rowsRead is how many rows of the frames table the plan of Select's
// statement for q reads, by EXPLAIN ANALYZE (sequential scans off, as a
// stream of many frames among many streams would have them).
func rowsRead(t *testing.T, l *Log, stream string, q Query) int {
	t.Helper()
	query, args := l.q.selectFrames(stream, q)
	tx, err := l.pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(t.Context(), `SET LOCAL enable_seqscan = off`)
	require.NoError(t, err)
	var plan []struct {
		Plan json.RawMessage `json:"Plan"`
	}
	require.NoError(t, tx.QueryRow(t.Context(), `EXPLAIN (ANALYZE, FORMAT JSON) `+query, args...).Scan(&plan))
	require.Len(t, plan, 1)
	var walk func(raw json.RawMessage) int
	walk = func(raw json.RawMessage) int {
		var n struct {
			Relation string            `json:"Relation Name"`
			Rows     int               `json:"Actual Rows"`
			Loops    int               `json:"Actual Loops"`
			Removed  int               `json:"Rows Removed by Filter"`
			Rechecks int               `json:"Rows Removed by Index Recheck"`
			Plans    []json.RawMessage `json:"Plans"`
		}
		require.NoError(t, json.Unmarshal(raw, &n))
		read := 0
		if n.Relation == "event_frames" {
			read = (n.Rows+n.Removed)*max(n.Loops, 1) + n.Rechecks
		}
		for _, p := range n.Plans {
			read += walk(p)
		}
		return read
	}
	return walk(plan[0].Plan)
}

// A page of the frames of one name reads no further than its Limit: the
// index of described frames gives them by id.
func TestSelectOfOneNameReadsNoFurtherThanItsLimit(t *testing.T) {
	l := newLog(t, Config{})
	_, err := l.Open(t.Context(), "run", 0)
	require.NoError(t, err)
	var entries []Entry
	for i := range int64(2000) {
		name := "other"
		if i%20 == 0 {
			name = "call"
		}
		entries = append(entries, Entry{Stream: "run", Frame: Frame{ID: i + 1, Name: name, Path: "wf", Data: []byte("d"), Meta: []byte(`{}`)}})
	}
	require.NoError(t, l.AppendAll(entries))
	require.NoError(t, l.Flush("run"))
	_, err = l.pool.Exec(t.Context(), `ANALYZE `+l.q.frames)
	require.NoError(t, err)

	for _, q := range []Query{
		{Names: []string{"call"}, Limit: 4},
		{Names: []string{"call"}, Limit: 4, MaxBytes: 1 << 20, Bodies: true},
		{Names: []string{"call"}, Limit: 4, MaxBytes: 1 << 20, After: 1000, Path: "wf"},
	} {
		got, err := l.Select(t.Context(), "run", q)
		require.NoError(t, err)
		require.Len(t, got, 4)
		assert.Equal(t, "call", got[3].Name)
		assert.LessOrEqual(t, rowsRead(t, l, "run", q), q.Limit+1, "%+v: the 100 frames of the name are not all read", q)
	}
}

// A page of the frames of a few names reads no further than its Limit
// for each name (each from the index of described frames, by id), and
// holds what a filter of the same names over every frame holds.
func TestSelectOfAFewNamesReadsNoFurtherThanItsLimitForEach(t *testing.T) {
	l := newLog(t, Config{})
	_, err := l.Open(t.Context(), "run", 0)
	require.NoError(t, err)
	var entries []Entry
	for i := range int64(3000) {
		name := "other"
		switch i % 30 {
		case 0:
			name = "call"
		case 7:
			name = "end"
		case 11:
			name = "start"
		}
		entries = append(entries, Entry{Stream: "run", Frame: Frame{ID: i + 1, Name: name, Path: "wf", Data: []byte("data"),
			Meta: []byte(`{}`), Body: []byte("body")}})
	}
	require.NoError(t, l.AppendAll(entries))
	require.NoError(t, l.Flush("run"))
	_, err = l.pool.Exec(t.Context(), `ANALYZE `+l.q.frames)
	require.NoError(t, err)

	names := []string{"call", "end", "start"}
	for _, q := range []Query{
		{Names: names, Limit: 5},
		{Names: names, Limit: 5, MaxBytes: 20, Bodies: true},
		{Names: names, Limit: 5, MaxBytes: 1 << 20, After: 1500, Until: 2900, Path: "wf"},
	} {
		got, err := l.Select(t.Context(), "run", q)
		require.NoError(t, err)
		var want []int64
		for _, e := range entries {
			f := e.Frame
			if f.ID > q.After && (q.Until == 0 || f.ID <= q.Until) && slices.Contains(names, f.Name) && len(want) < q.Limit {
				want = append(want, f.ID)
			}
		}
		if q.MaxBytes == 20 {
			want = want[:2] // 8 bytes each with its body
		}
		var ids []int64
		for _, f := range got {
			ids = append(ids, f.ID)
			assert.Equal(t, q.Bodies, f.Body != nil)
		}
		assert.Equal(t, want, ids, "%+v", q)
		assert.LessOrEqual(t, rowsRead(t, l, "run", q), len(names)*(q.Limit+1), "%+v: the 300 frames of the names are not all read", q)
	}
}
