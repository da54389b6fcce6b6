package postgres

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/migrate"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/trace"
)

// The events an older version stored in trace_events move to the event
// log when two processes of this one start at once, and the table goes.
func TestAnOlderVersionsEventsMoveToTheEventLog(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_trace_test_")
	require.NoError(t, migrate.Postgres(ctx, pool, schema, schemaMigrations.Lock, schemaMigrations.Table, migrations[:1], ErrSchemaTooNew))
	sc := pgx.Identifier{schema}.Sanitize()
	at := time.Date(2026, 11, 30, 8, 0, 0, 123456000, time.UTC)
	for _, id := range []string{"r1", "empty"} {
		_, err := pool.Exec(ctx, `INSERT INTO `+sc+`.trace_runs (run_id, thread_id, graph_thread, workflow, graph, owner, status,
			start_kind, started, error, events) VALUES ($1, 'th', 'th', 'wf', 'wf', 'alice', 'done', 'input', $2, '', 3)`, id, at)
		require.NoError(t, err)
	}
	want := []trace.Event{
		{RunID: "r1", Seq: 1, Kind: "run_start", Path: "wf", Time: at},
		{RunID: "r1", Seq: 2, Kind: "node_end", Path: "wf/team", Node: "team", Step: 3, Attempt: 2, Time: at.Add(time.Second),
			Duration: 1500 * time.Millisecond, Error: "boom", Payload: json.RawMessage(`{"b": 2,  "a": [1]}`)},
		{RunID: "r1", Seq: 3, Kind: "model_call", Path: "wf/team/agent:x", Node: "team", Step: 3, Attempt: 1,
			Time: at.Add(2 * time.Second), Agent: "x", Payload: json.RawMessage(`{"agent":"x"}`),
			Hash: "0123", Request: json.RawMessage(`{"messages": []}`), Response: json.RawMessage(`[{"content":"hi"}]`)},
		{RunID: "r1", Seq: 5, Kind: "model_call", Path: "wf/team/agent:x", Time: at, Hash: "h", Response: json.RawMessage(`"only"`)},
	}
	for _, e := range want {
		_, err := pool.Exec(ctx, `INSERT INTO `+sc+`.trace_events
			(run_id, seq, kind, path, node, step, attempt, at, duration_ns, agent, payload, error, hash, request, response)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			e.RunID, e.Seq, e.Kind, e.Path, e.Node, e.Step, e.Attempt, e.Time, int64(e.Duration), e.Agent,
			bytesOrNil(e.Payload), e.Error, e.Hash, bytesOrNil(e.Request), bytesOrNil(e.Response))
		require.NoError(t, err)
	}

	stores := []*Store{New(pool, WithSchema(schema)), New(pool, WithSchema(schema))}
	var wg sync.WaitGroup
	for _, s := range stores {
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		wg.Go(func() { assert.NoError(t, s.Migrate(ctx)) })
	}
	wg.Wait()
	s := stores[1]

	got, err := s.Events(ctx, "r1", trace.EventQuery{Bodies: true})
	require.NoError(t, err)
	assert.Equal(t, want, got, "every field, payloads and bodies byte for byte")
	var table *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass($1)::text`, sc+`.trace_events`).Scan(&table))
	assert.Nil(t, table, "trace_events is dropped")

	calls, err := s.Events(ctx, "r1", trace.EventQuery{Kinds: []string{"model_call"}, Path: "wf/team"})
	require.NoError(t, err)
	assert.Len(t, calls, 2, "the moved events are found by kind and path")

	// Every run has its stream: appends go on, to the run with events and
	// to the one without; a moved event written again is left as it is.
	require.NoError(t, s.AppendEvents(ctx, []trace.Event{
		{RunID: "r1", Seq: 1, Kind: "changed", Time: at}, {RunID: "r1", Seq: 6, Kind: "run_end", Path: "wf", Time: at},
		{RunID: "empty", Seq: 1, Kind: "run_start", Path: "wf", Time: at},
	}))
	got, err = s.Events(ctx, "r1", trace.EventQuery{})
	require.NoError(t, err)
	require.Len(t, got, 5)
	assert.Equal(t, "run_start", got[0].Kind)
	got, err = s.Events(ctx, "empty", trace.EventQuery{})
	require.NoError(t, err)
	assert.Len(t, got, 1)

	require.NoError(t, s.DeleteRun(ctx, "r1"))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+sc+`.event_frames WHERE stream = 'trace/r1'`).Scan(&n))
	assert.Zero(t, n, "a moved run's frames go with it")
}
