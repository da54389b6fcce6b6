package replicas_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// threeReplicas are three Replicas on one schema, with their Saver.
func threeReplicas(t *testing.T) ([]*replicas.Replicas, *postgres.Saver) {
	t.Helper()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	saver := postgres.New(pool, postgres.WithSchema(schema))
	var out []*replicas.Replicas
	for i := range 3 {
		reps, err := replicas.New(pool, replicas.Config{Saver: saver, Name: fmt.Sprintf("r%d", i), LeaseTTL: time.Minute, Schema: schema})
		require.NoError(t, err)
		require.NoError(t, reps.Start(t.Context()))
		t.Cleanup(func() { assert.NoError(t, reps.Close()) })
		out = append(out, reps)
	}
	return out, saver
}

// recordThreads stores the record of each thread key, as the server does
// when it creates a thread: Enqueue admits runs only on a thread that has
// one.
func recordThreads(t testing.TB, saver *postgres.Saver, keys ...string) {
	t.Helper()
	for _, key := range keys {
		ref := graph.CheckpointRef{Thread: key, NS: server.ThreadRecordNS}
		if _, err := saver.GetCheckpoint(t.Context(), ref); err == nil {
			continue
		}
		rec := graph.CheckpointRecord{Thread: key, NS: server.ThreadRecordNS, ID: "thread", Source: "server", Created: time.Now(), Meta: []byte(`{}`)}
		require.NoError(t, saver.PutCheckpoint(t.Context(), rec, nil))
	}
}

// enqueueAll enqueues alice's runs on the threads all at once, the i-th
// on reps[i%len(reps)], and returns their errors, in order.
func enqueueAll(t *testing.T, reps []*replicas.Replicas, saver *postgres.Saver, threads []string, busy runs.Busy, limits runs.Limits) []error {
	t.Helper()
	for _, th := range threads {
		recordThreads(t, saver, "alice/"+th)
	}
	errs := make([]error, len(threads))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, th := range threads {
		wg.Go(func() {
			sr := server.SharedRun{ID: fmt.Sprintf("run-%d", i), Thread: th, Key: "alice/" + th, Owner: "alice", Workflow: "gate",
				Request: json.RawMessage(`{}`), CreatedAt: time.Now()}
			<-start
			errs[i] = reps[i%len(reps)].Enqueue(t.Context(), sr, busy, limits)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// admittedOf counts the runs admitted and requires the others refused
// at quota with count limit.
func admittedOf(t *testing.T, errs []error, quota string, limit int) int {
	t.Helper()
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
			continue
		}
		var qe *runs.QuotaError
		require.ErrorAs(t, err, &qe)
		assert.Equal(t, runs.QuotaError{Owner: "alice", Quota: quota, Count: limit, Limit: limit}, *qe)
	}
	return n
}

func TestEnqueueOnThreeReplicasAdmitsExactlyTheActiveQuota(t *testing.T) {
	const n, quota = 150, 16
	reps, saver := threeReplicas(t)
	threads := make([]string, n)
	for i := range threads {
		threads[i] = fmt.Sprintf("t%d", i)
	}
	errs := enqueueAll(t, reps, saver, threads, runs.Refuse, runs.Limits{MaxActive: quota, MaxQueued: 0})
	assert.Equal(t, quota, admittedOf(t, errs, runs.QuotaActiveRuns, quota))
}

func TestEnqueueOnThreeReplicasQueuesExactlyTheQueuedQuota(t *testing.T) {
	const n, threads, quota = 150, 5, 12
	reps, saver := threeReplicas(t)
	limits := runs.Limits{MaxActive: threads, MaxQueued: quota}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("t%d", i%threads)
	}
	errs := enqueueAll(t, reps, saver, keys, runs.Queue, limits)
	// The first run of each thread is active, the others queue behind.
	assert.Equal(t, threads+quota, admittedOf(t, errs, runs.QuotaQueuedRuns, quota))

	// A thread's runs refuse one more unless it queues.
	err := reps[0].Enqueue(t.Context(), server.SharedRun{ID: "x", Thread: "t0", Key: "alice/t0", Owner: "alice", Workflow: "gate",
		Request: json.RawMessage(`{}`), CreatedAt: time.Now()}, runs.Refuse, runs.NoLimits)
	var be *runs.BusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "alice/t0", be.Thread)
}

// BenchmarkEnqueueAndCancel admits runs among replicas and releases each
// (a cancel while queued), from parallel goroutines of one owner, each on
// a thread of its own: the owner's lock serializes them.
func BenchmarkEnqueueAndCancel(b *testing.B) {
	pool := pgtest.Pool(b)
	schema := pgtest.Schema(b, pool, "coorflow_test_")
	saver := postgres.New(pool, postgres.WithSchema(schema))
	reps, err := replicas.New(pool, replicas.Config{Saver: saver, Name: "r0", LeaseTTL: time.Minute, Schema: schema})
	require.NoError(b, err)
	require.NoError(b, reps.Start(b.Context()))
	b.Cleanup(func() { assert.NoError(b, reps.Close()) })
	var next atomic.Int64
	limits := runs.Limits{MaxActive: 16, MaxQueued: 64}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		th := fmt.Sprintf("t%d", next.Add(1))
		recordThreads(b, saver, "alice/"+th)
		for pb.Next() {
			id := fmt.Sprintf("run-%d", next.Add(1))
			sr := server.SharedRun{ID: id, Thread: th, Key: "alice/" + th, Owner: "alice", Workflow: "gate",
				Request: json.RawMessage(`{}`), CreatedAt: time.Now()}
			if err := reps.Enqueue(b.Context(), sr, runs.Refuse, limits); err != nil {
				b.Fatal(err)
			}
			if _, err := reps.Cancel(b.Context(), id); err != nil {
				b.Fatal(err)
			}
		}
	})
}
