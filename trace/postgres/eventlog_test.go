package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/postgres"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// newStore returns a store on a schema of its own, and the schema.
func newStore(t *testing.T, pool *pgxpool.Pool) (*postgres.Store, string) {
	t.Helper()
	schema := pgtest.Schema(t, pool, "coorflow_trace_test_")
	s := postgres.New(pool, postgres.WithSchema(schema))
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	require.NoError(t, s.Migrate(t.Context()))
	return s, schema
}

func ev(run string, seq int64, kind, path string) trace.Event {
	return trace.Event{RunID: run, Seq: seq, Kind: kind, Path: path, Time: t0.Add(time.Duration(seq) * time.Millisecond),
		Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq))}
}

func begin(t *testing.T, s trace.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		require.NoError(t, s.CreateRun(t.Context(), trace.RunInfo{ID: id, Owner: "alice", Status: trace.StatusRunning,
			Start: trace.StartInput, StartedAt: t0}))
	}
}

// count is the number of rows of the event log's table in schema whose
// stream is key.
func count(t *testing.T, pool *pgxpool.Pool, schema, table, key string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, table}.Sanitize()+
		` WHERE stream = $1`, key).Scan(&n))
	return n
}

func TestARecordingsEventsAreFramesOfItsStreamInTheEventLog(t *testing.T) {
	pool := pgtest.Pool(t)
	s, schema := newStore(t, pool)
	begin(t, s, "r1")
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{ev("r1", 1, "run_start", "wf"), ev("r1", 2, "node_end", "wf/a")}))
	assert.Equal(t, 2, count(t, pool, schema, "event_frames", "trace/r1"))
	var exists *string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT to_regclass($1)::text`, pgx.Identifier{schema, "trace_events"}.Sanitize()).Scan(&exists))
	assert.Nil(t, exists, "recordings have no table of their own for events")
}

func TestAnEventAppendedAgainIsStoredOnce(t *testing.T) {
	pool := pgtest.Pool(t)
	s, schema := newStore(t, pool)
	begin(t, s, "r1")
	first := ev("r1", 1, "custom", "wf")
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{first}))
	again := first
	again.Payload = json.RawMessage(`{"n":"again"}`)
	// A recorder retrying a batch, and the same seq twice in one batch.
	require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{again, ev("r1", 2, "custom", "wf"), ev("r1", 2, "custom", "wf")}))
	assert.Equal(t, 2, count(t, pool, schema, "event_frames", "trace/r1"))
	got, err := s.Events(t.Context(), "r1", trace.EventQuery{})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.JSONEq(t, `{"n":1}`, string(got[0].Payload), "the first write stays")
}

func TestDeletingARunDeletesItsStreamAndFrames(t *testing.T) {
	pool := pgtest.Pool(t)
	s, schema := newStore(t, pool)
	begin(t, s, "r1", "r2", "old")
	for _, id := range []string{"r1", "r2", "old"} {
		require.NoError(t, s.AppendEvents(t.Context(), []trace.Event{ev(id, 1, "a", "wf"), ev(id, 2, "b", "wf")}))
	}
	require.NoError(t, s.DeleteRun(t.Context(), "r1"))
	assert.Zero(t, count(t, pool, schema, "event_frames", "trace/r1"))
	assert.Zero(t, count(t, pool, schema, "event_streams", "trace/r1"))
	assert.Equal(t, 2, count(t, pool, schema, "event_frames", "trace/r2"), "another run's frames stay")

	rep, err := s.Prune(t.Context(), trace.RetentionPolicy{MaxAge: time.Minute, Now: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"r2", "old"}, rep.PrunedIDs())
	for _, id := range rep.PrunedIDs() {
		assert.Zero(t, count(t, pool, schema, "event_frames", "trace/"+id), "a pruned run's frames go")
		assert.Zero(t, count(t, pool, schema, "event_streams", "trace/"+id))
	}

	// Events appended to a deleted run are refused and not stored.
	err = s.AppendEvents(t.Context(), []trace.Event{ev("r1", 3, "c", "wf")})
	assert.ErrorIs(t, err, trace.ErrNotFound)
	assert.Zero(t, count(t, pool, schema, "event_frames", "trace/r1"))
}

// Two stores on one schema (two replicas), 128 writers, one run each,
// batches of a recorder's kind: every event is stored once, in order.
func TestParallelAppendersAcrossRunsAndStoresLoseNothing(t *testing.T) {
	pool := pgtest.Pool(t)
	a, schema := newStore(t, pool)
	b := postgres.New(pool, postgres.WithSchema(schema))
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	const writers, batches, per = 128, 10, 7
	var wg sync.WaitGroup
	for w := range writers {
		s := a
		if w%2 == 1 {
			s = b
		}
		id := fmt.Sprintf("run-%03d", w)
		begin(t, s, id)
		wg.Go(func() {
			seq := int64(0)
			for range batches {
				var evs []trace.Event
				for range per {
					seq++
					evs = append(evs, ev(id, seq, "node_end", "wf/n"))
				}
				assert.NoError(t, s.AppendEvents(context.Background(), evs))
			}
		})
	}
	wg.Wait()
	for w := range writers {
		id := fmt.Sprintf("run-%03d", w)
		got, err := b.Events(t.Context(), id, trace.EventQuery{})
		require.NoError(t, err)
		require.Len(t, got, batches*per, id)
		for i, e := range got {
			assert.Equal(t, int64(i+1), e.Seq)
			assert.JSONEq(t, fmt.Sprintf(`{"n":%d}`, i+1), string(e.Payload))
		}
	}
}

// countingPool is a pool whose connections count the bytes they read
// from the server.
func countingPool(t *testing.T) (*pgxpool.Pool, *atomic.Int64) {
	t.Helper()
	pgtest.Pool(t) // skips when there is no server
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	require.NoError(t, err)
	read := &atomic.Int64{}
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, read: read}, nil
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, read
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// The views read a run's events by kind, without bodies: the bodies of
// its model calls and the events of other kinds (large state values) are
// not read from the database at all, as the bytes the connection
// receives show.
func TestAViewReadsNoBodiesNorEventsItDoesNotNeed(t *testing.T) {
	pool, read := countingPool(t)
	s, _ := newStore(t, pool)
	begin(t, s, "r1")
	big := func(c byte) json.RawMessage {
		return json.RawMessage(`"` + string(bytes.Repeat([]byte{c}, 256<<10)) + `"`)
	}
	evs := []trace.Event{ev("r1", 1, "run_start", "wf")}
	for i := range 4 {
		call := ev("r1", int64(2*i+2), "model_call", "wf/team/agent:a")
		call.Agent, call.Hash, call.Request, call.Response = "a", "h", big('q'), big('r')
		values := ev("r1", int64(2*i+3), "values", "wf") // not a kind the views read
		values.Payload = big('v')
		evs = append(evs, call, values)
	}
	require.NoError(t, s.AppendEvents(t.Context(), evs))
	const bodies = 4 * 2 * 256 << 10

	read.Store(0)
	tl, err := trace.LoadTimeline(t.Context(), s, "r1")
	require.NoError(t, err)
	require.Equal(t, int64(8), tl.LastSeq, "the timeline is built from the events up to the last model call")
	assert.Less(t, read.Load(), int64(32<<10), "bytes read for the timeline of a run with 3 MiB of bodies and values")

	read.Store(0)
	calls, err := s.Events(t.Context(), "r1", trace.EventQuery{Kinds: []string{"model_call"}, Path: "wf/team", Bodies: true})
	require.NoError(t, err)
	require.Len(t, calls, 4)
	assert.Greater(t, read.Load(), int64(bodies), "the bodies asked for are read (the count sees them)")
	assert.Less(t, read.Load(), int64(bodies+64<<10), "and the values not asked for are not")
}

// What a Recorder's Finish waited for is committed: another store on
// another pool (another replica) reads every event of 128 runs recorded
// at once, and their ends, as soon as Finish returns.
func TestARecordersFinishedRunsAreStoredWhenFinishReturns(t *testing.T) {
	pool := pgtest.Pool(t)
	s, schema := newStore(t, pool)
	rec := trace.NewRecorder(s, trace.RecorderConfig{Batch: 16})
	t.Cleanup(func() { assert.NoError(t, rec.Close(context.Background())) })
	other := postgres.New(pgtest.Pool(t), postgres.WithSchema(schema))
	t.Cleanup(func() { assert.NoError(t, other.Close()) })
	const runs, each = 128, 40
	var wg sync.WaitGroup
	for r := range runs {
		wg.Go(func() {
			id := fmt.Sprintf("run-%03d", r)
			rr, err := rec.Begin(context.Background(), trace.RunInfo{ID: id, Graph: "wf"})
			if !assert.NoError(t, err) {
				return
			}
			for i := range each {
				rr.Observe(graph.Event{Kind: graph.EventCustom, Path: "wf", Data: i, Time: t0})
			}
			if !assert.NoError(t, rr.Finish(context.Background(), nil)) {
				return
			}
			got, err := other.Events(context.Background(), id, trace.EventQuery{})
			assert.NoError(t, err)
			assert.Len(t, got, each, id)
			run, err := other.Run(context.Background(), id)
			assert.NoError(t, err)
			assert.Equal(t, trace.StatusDone, run.Status, id)
		})
	}
	wg.Wait()
}
