package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/migrate"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/trace"
)

// BenchmarkRecordingOnEventLog writes recordings' events as the Recorder
// does (batches of a run's events, one AppendEvents each), on the event
// log and, side by side, with the per-event inserts into trace_events of
// the versions before (legacyAppend): one writer with the Recorder's
// batch, and 16 writers (runs of several recorders) with small batches.
//
//	go test -run '^$' -bench RecordingOnEventLog -benchtime 3000x ./trace/postgres/
func BenchmarkRecordingOnEventLog(b *testing.B) {
	pool := pgtest.Pool(b)
	for _, c := range []struct {
		name           string
		batch, writers int
	}{{"batch=256", trace.DefaultBatch, 1}, {"batch=16/writers=16", 16, 16}} {
		b.Run(c.name+"/eventlog", func(b *testing.B) {
			s := New(pool, WithSchema(pgtest.Schema(b, pool, "coorflow_trace_bench_")))
			b.Cleanup(func() { _ = s.Close() })
			benchAppends(b, s, c.batch, c.writers, s.AppendEvents)
		})
		b.Run(c.name+"/per-event-insert", func(b *testing.B) {
			schema := pgtest.Schema(b, pool, "coorflow_trace_bench_")
			require.NoError(b, migrate.Postgres(b.Context(), pool, schema, schemaMigrations.Lock, schemaMigrations.Table,
				migrations[:1], ErrSchemaTooNew))
			sc := pgx.Identifier{schema}.Sanitize()
			s := &Store{pool: pool}
			benchAppends(b, legacyIndex{pool, sc}, c.batch, c.writers, func(ctx context.Context, evs []trace.Event) error {
				return s.legacyAppend(ctx, sc, evs)
			})
		})
	}
}

// legacyIndex makes the runs of the benchmark in trace_runs of the
// versions before.
type legacyIndex struct {
	pool *pgxpool.Pool
	sc   string
}

func (l legacyIndex) CreateRun(ctx context.Context, r trace.RunInfo) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO `+l.sc+`.trace_runs (run_id, thread_id, graph_thread, workflow, graph, owner, status,
		start_kind, started, error, events) VALUES ($1, '', '', '', '', '', 'running', 'input', $2, '', 0)`, r.ID, r.StartedAt)
	return err
}

// benchAppends appends b.N batches of batch events, from writers
// goroutines, each to runs of its own, and reports ns/event.
func benchAppends(b *testing.B, index interface {
	CreateRun(context.Context, trace.RunInfo) error
}, batch, writers int, appendEvents func(context.Context, []trace.Event) error) {
	ctx := b.Context()
	payload := json.RawMessage(`{"writes":"` + strings.Repeat("w", 200) + `"}`)
	body := json.RawMessage(`"` + strings.Repeat("b", 2048) + `"`)
	runs := make([]string, writers)
	for w := range runs {
		runs[w] = fmt.Sprintf("bench-%d", w)
		require.NoError(b, index.CreateRun(ctx, trace.RunInfo{ID: runs[w], Status: trace.StatusRunning,
			Start: trace.StartInput, StartedAt: time.Now()}))
	}
	var next atomic.Int64 // batches handed out
	var worker atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(1, writers/2)) // 2 cores: GOMAXPROCS × this goroutines
	b.ResetTimer()                      // not the tables made, nor the runs
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		run := runs[int(worker.Add(1)-1)%writers]
		for pb.Next() {
			first := (next.Add(1)-1)*int64(batch) + 1
			evs := make([]trace.Event, batch)
			for i := range evs {
				e := trace.Event{RunID: run, Seq: first + int64(i), Kind: "node_end", Path: "wf/team", Node: "team",
					Step: 3, Time: time.Now(), Payload: payload}
				if i%8 == 0 {
					e.Kind, e.Path, e.Agent, e.Hash, e.Request, e.Response = "model_call", "wf/team/agent:x", "x", "h", body, body
				}
				evs[i] = e
			}
			if err := appendEvents(ctx, evs); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*batch), "ns/event")
}

// legacyAppend is AppendEvents of the versions before the event log: one
// transaction, the runs locked, one INSERT per event.
func (s *Store) legacyAppend(ctx context.Context, sc string, events []trace.Event) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	ids := []string{}
	seen := map[string]bool{}
	for _, e := range events {
		if !seen[e.RunID] {
			seen[e.RunID] = true
			ids = append(ids, e.RunID)
		}
	}
	rows, err := tx.Query(ctx, `SELECT run_id FROM `+sc+`.trace_runs WHERE run_id = ANY($1) FOR KEY SHARE`, ids)
	if err != nil {
		return err
	}
	if _, err := pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return err
	}
	b := &pgx.Batch{}
	insert := `INSERT INTO ` + sc + `.trace_events
		(run_id, seq, kind, path, node, step, attempt, at, duration_ns, agent, payload, error, hash, request, response)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (run_id, seq) DO NOTHING`
	for _, e := range events {
		b.Queue(insert, e.RunID, e.Seq, e.Kind, e.Path, e.Node, e.Step, e.Attempt, e.Time, int64(e.Duration), e.Agent,
			bytesOrNil(e.Payload), e.Error, e.Hash, bytesOrNil(e.Request), bytesOrNil(e.Response))
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
