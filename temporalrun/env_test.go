package temporalrun_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/internal/temporaltest"
	"github.com/coorflow/coorflow/temporalrun"
	"github.com/coorflow/coorflow/trace"
)

// env is a Temporal dev server, a PostgreSQL saver and a worker on one
// task queue, for one test.
type env struct {
	t      testing.TB
	server *temporaltest.Server
	client client.Client
	saver  *postgres.Saver
	pool   *pgxpool.Pool
	events *temporalrun.EventLog
	schema string
	graphs *temporalrun.Graphs
	queue  string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, temporaltest.Options{})
}

func newEnvWith(t testing.TB, opts temporaltest.Options) *env {
	t.Helper()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_temporal_")
	saver := postgres.New(pool, postgres.WithSchema(schema))
	require.NoError(t, saver.Migrate(t.Context()))
	t.Cleanup(func() { assert.NoError(t, saver.Close()) })
	events := temporalrun.NewEventLog(pool, temporalrun.EventLogConfig{Schema: schema})
	require.NoError(t, events.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, events.Close()) })
	srv := temporaltest.Start(t, opts)
	e := &env{t: t, server: srv, client: srv.Client(t), saver: saver, pool: pool, schema: schema, events: events,
		graphs: temporalrun.NewGraphs(saver).StreamTo(events), queue: "q-" + randomHex()}
	return e
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// workerOptions are the options tests run workers with: a short sticky
// schedule-to-start timeout, so a step whose worker died moves to another
// worker in a second, not after the default five.
func workerOptions() worker.Options {
	return worker.Options{StickyScheduleToStartTimeout: time.Second}
}

// startWorker starts a worker on queue, stopped when the test ends.
func (e *env) startWorker(queue string, stepsOnly bool) worker.Worker {
	e.t.Helper()
	w, err := temporalrun.NewWorker(e.client, temporalrun.WorkerConfig{TaskQueue: queue, Graphs: e.graphs,
		StepsOnly: stepsOnly, Options: workerOptions()})
	require.NoError(e.t, err)
	require.NoError(e.t, w.Start())
	e.t.Cleanup(w.Stop)
	return w
}

// runner returns a runner of r on the env's queue; r is added to the
// worker's graphs.
func (e *env) runner(r *graph.Runnable, mod ...func(*temporalrun.Config)) *temporalrun.Runner {
	e.t.Helper()
	e.graphs.Add(r)
	cfg := temporalrun.Config{Client: e.client, Graph: r, Saver: e.saver, TaskQueue: e.queue,
		HeartbeatTimeout: 2 * time.Second, StepTimeout: time.Minute, MaxAttempts: 5,
		Events: e.events, Payloads: trace.DecodePayload}
	for _, m := range mod {
		m(&cfg)
	}
	run, err := temporalrun.New(cfg)
	require.NoError(e.t, err)
	return run
}

// newBenchEnv is newEnv with a worker on its queue.
func newBenchEnv(b *testing.B) *env {
	b.Helper()
	e := newEnv(b)
	e.startWorker(e.queue, false)
	return e
}
