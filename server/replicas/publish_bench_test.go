package replicas_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/internal/pgtest"
	runpolicy "github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// BenchmarkPublish measures the events a replica stores for the streams
// of the runs it executes (cluster mode), from the first Publish to the
// run's Finish, which returns once they are all stored: runs runs at once,
// each publishing b.N/runs events of a token's size.
func BenchmarkPublish(b *testing.B) {
	for _, runs := range []int{1, 16} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			pool := pgtest.Pool(b)
			schema := pgtest.Schema(b, pool, "coorflow_bench_")
			saver := postgres.New(pool, postgres.WithSchema(schema))
			reps, err := replicas.New(pool, replicas.Config{Saver: saver, Name: "bench", LeaseTTL: time.Minute, Schema: schema})
			require.NoError(b, err)
			require.NoError(b, reps.Start(b.Context()))
			b.Cleanup(func() { _ = reps.Close() })
			claims := make([]*server.Claim, runs)
			for i := range claims {
				sr := server.SharedRun{ID: fmt.Sprintf("run-%d", i), Thread: fmt.Sprintf("t%d", i), Key: fmt.Sprintf("alice/t%d", i),
					Owner: "alice", Workflow: "wf", Request: json.RawMessage(`{}`), CreatedAt: time.Now()}
				recordThreads(b, saver, sr.Key)
				require.NoError(b, reps.Enqueue(b.Context(), sr, runpolicy.Refuse, runpolicy.NoLimits))
				var err error
				claims[i], err = reps.Claim(b.Context(), sr.ID, []string{"wf"})
				require.NoError(b, err)
				require.NotNil(b, claims[i])
			}
			frame := []byte(`id: 1` + "\n" + `event: token` + "\n" + `data: {"id":1,"run_id":"run-0","kind":"token","path":"wf/agent","node":"agent","step":3,"time":"2026-12-02T06:00:00Z","data":"a token"}` + "\n\n")
			per := max(b.N/runs, 1)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, c := range claims {
				wg.Go(func() {
					for id := range per {
						if err := reps.Publish(b.Context(), c, server.SharedEvent{ID: c.Run.Events + int64(id) + 1, Name: "token", Frame: frame}); err != nil {
							b.Error(err)
							return
						}
					}
					sr := c.Run
					sr.Status = server.StatusDone
					if err := reps.Finish(b.Context(), c, sr); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			events := float64(per * runs)
			b.ReportMetric(events/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(elapsed.Nanoseconds())/events, "ns/event")
			for _, c := range claims { // every event was stored, in order
				var after int64
				for {
					evs, err := reps.Events(b.Context(), c.Run.ID, after, per+1)
					require.NoError(b, err)
					if len(evs) == 0 {
						break
					}
					require.Equal(b, after+1, evs[0].ID)
					after = evs[len(evs)-1].ID
				}
				require.Equal(b, int64(per), after)
			}
		})
	}
}
