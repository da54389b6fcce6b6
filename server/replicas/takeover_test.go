package replicas_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/runs/eventlog"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// TestATakeoverWaitsForTheLeaseNotForTheNextLook: a live replica whose
// own lease is an hour long (so it would look for expired leases every
// half hour) takes a dead replica's run over once the dead one's lease of
// two seconds expires: it wakes at the earliest lease it knows of. Without
// that, the stream below waits half an hour (the test's minute runs out).
func TestATakeoverWaitsForTheLeaseNotForTheNextLook(t *testing.T) {
	gate := make(chan struct{})
	close(gate)
	c := newCluster(t, 1, gateGraph(t, gate), time.Hour)
	th := thread(t, c.urls[0])
	pool := pgtest.Pool(t)
	dead, err := replicas.New(pool, replicas.Config{Saver: c.saver, Name: "dead", LeaseTTL: 2 * time.Second, Schema: c.schema})
	require.NoError(t, err)
	defer dead.Close()
	sr := server.SharedRun{ID: "run-1", Thread: th, Key: "alice/" + th, Owner: "alice", Workflow: "gate",
		Request: json.RawMessage(`{"input":{"text":"hi"}}`), CreatedAt: time.Now()}
	require.NoError(t, dead.Enqueue(t.Context(), sr, runs.Refuse, runs.NoLimits))
	claim, err := dead.Claim(t.Context(), sr.ID, []string{sr.Workflow})
	require.NoError(t, err)
	require.NotNil(t, claim)

	// What the live replica knows: the dead one's lease, not its own.
	wait, ok, err := dead.NextDue(t.Context(), []string{"gate"})
	require.NoError(t, err)
	assert.False(t, ok, "a replica does not wait for its own leases (%v)", wait)
	live, err := replicas.New(pool, replicas.Config{Saver: c.saver, Name: "other", LeaseTTL: time.Hour, Schema: c.schema})
	require.NoError(t, err)
	defer live.Close()
	wait, ok, err = live.NextDue(t.Context(), []string{"gate"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.LessOrEqual(t, wait, 2*time.Second)
	_, ok, err = live.NextDue(t.Context(), []string{"another"})
	require.NoError(t, err)
	assert.False(t, ok, "the leases of runs of workflows a replica does not serve are not its business")

	// Any replica's word wakes the live one's claim loop once, as a run's
	// end elsewhere would; from then on it waits for the lease.
	require.NoError(t, dead.Offer(t.Context(), "no-such-run"))

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.urls[0]+"/v1/threads/"+th+"/runs/run-1/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := bufio.NewScanner(resp.Body)
	var got server.Run
	for name := ""; name != "end"; {
		var data []byte
		name, data = nextEvent(t, events)
		if name == "end" {
			require.NoError(t, json.Unmarshal(data, &got))
		}
	}
	assert.Equal(t, server.StatusDone, got.Status)
	assert.Equal(t, "r0", got.Replica, "the live replica took the run over")
	assert.Equal(t, 1, got.Takeovers)
}

// TestARunsEventsAreStoredBeforeItsCheckpoints: events are queued for the
// event log's group commit, but the claim's Saver stores them before the
// run's next checkpoint, so a replica that takes the run over from that
// checkpoint finds every event that came before it in the stream.
func TestARunsEventsAreStoredBeforeItsCheckpoints(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	saver := postgres.New(pool, postgres.WithSchema(schema))
	// Commits an hour apart: only the checkpoint stores the events.
	reps, err := replicas.New(pool, replicas.Config{Saver: saver, Name: "r0", LeaseTTL: time.Minute, Schema: schema,
		EventLog: eventlog.Config{MaxDelay: time.Hour}})
	require.NoError(t, err)
	require.NoError(t, reps.Start(t.Context()))
	defer reps.Close()
	sr := server.SharedRun{ID: "run-1", Thread: "t", Key: "alice/t", Owner: "alice", Workflow: "gate",
		Request: json.RawMessage(`{}`), CreatedAt: time.Now()}
	recordThreads(t, saver, sr.Key)
	require.NoError(t, reps.Enqueue(t.Context(), sr, runs.Refuse, runs.NoLimits))
	claim, err := reps.Claim(t.Context(), sr.ID, []string{"gate"})
	require.NoError(t, err)
	require.NotNil(t, claim)
	for id := int64(1); id <= 3; id++ {
		require.NoError(t, reps.Publish(t.Context(), claim, server.SharedEvent{ID: id, Name: "ev", Frame: []byte("x")}))
	}
	cp := graph.CheckpointRecord{Thread: sr.Key, ID: "cp-1", Step: 0, Source: graph.SourceInput, Created: time.Now()}
	require.NoError(t, claim.Saver.PutCheckpoint(t.Context(), cp, nil))
	evs, err := reps.Events(t.Context(), sr.ID, 0, 10)
	require.NoError(t, err)
	assert.Len(t, evs, 3, "the events before the checkpoint are stored with it")
	got, err := reps.Run(t.Context(), sr.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(3), got.Events)
}

// TestTheEventsAnOlderVersionStoredMoveToTheEventLog: events a replica of
// a version before the event log stored in server_run_events are read
// from the log once a replica of this version starts, and that table is
// gone (migration 4); the runs gain their final values (migration 5).
func TestTheEventsAnOlderVersionStoredMoveToTheEventLog(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	saver := postgres.New(pool, postgres.WithSchema(schema))
	first, err := replicas.New(pool, replicas.Config{Saver: saver, Name: "r0", Schema: schema})
	require.NoError(t, err)
	require.NoError(t, first.Start(t.Context()))
	sr := server.SharedRun{ID: "old-run", Thread: "t", Key: "alice/t", Owner: "alice", Workflow: "gate",
		Request: json.RawMessage(`{}`), CreatedAt: time.Now()}
	recordThreads(t, saver, sr.Key)
	require.NoError(t, first.Enqueue(t.Context(), sr, runs.Refuse, runs.NoLimits))
	require.NoError(t, first.Close())
	// The schema as the older version left it (version 3, with its
	// events table), and what it wrote.
	for _, stmt := range []string{
		`CREATE TABLE ` + schema + `.server_run_events (run_id text COLLATE "C" NOT NULL REFERENCES ` + schema + `.server_runs ON DELETE CASCADE,
			id bigint NOT NULL, name text NOT NULL, frame bytea NOT NULL, PRIMARY KEY (run_id, id))`,
		`ALTER TABLE ` + schema + `.server_runs DROP COLUMN notice, DROP COLUMN notice_until`, // migration 7's, with its index
		`DROP TABLE ` + schema + `.server_closed_threads`,                                     // migration 6's
		`ALTER TABLE ` + schema + `.server_runs DROP COLUMN final`,                            // migration 5's
		`DELETE FROM ` + schema + `.server_runs_schema WHERE version >= 4`,
		`INSERT INTO ` + schema + `.server_run_events (run_id, id, name, frame) VALUES ('old-run', 1, 'a', 'x'), ('old-run', 2, 'b', 'y')`,
	} {
		_, err = pool.Exec(t.Context(), stmt)
		require.NoError(t, err)
	}

	next, err := replicas.New(pool, replicas.Config{Saver: saver, Name: "r1", Schema: schema})
	require.NoError(t, err)
	require.NoError(t, next.Start(t.Context()))
	defer next.Close()
	evs, err := next.Events(t.Context(), "old-run", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, []server.SharedEvent{{ID: 1, Name: "a", Frame: []byte("x")}, {ID: 2, Name: "b", Frame: []byte("y")}}, evs)
	got, err := next.Run(t.Context(), "old-run")
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Events)
	assert.Nil(t, got.Final, "a run of an older version has no final values")
	var table *string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT to_regclass($1)::text`, schema+".server_run_events").Scan(&table))
	assert.Nil(t, table, "the old events table is dropped")
}

// TestFinishStoresARunsFinalValues: the final values a run's replica
// gives Finish (a stateless run's, kept before it deletes the thread)
// are what every replica reads of the run; a run finished without them
// has none.
func TestFinishStoresARunsFinalValues(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	saver := postgres.New(pool, postgres.WithSchema(schema))
	reps, err := replicas.New(pool, replicas.Config{Saver: saver, Name: "r0", Schema: schema})
	require.NoError(t, err)
	require.NoError(t, reps.Start(t.Context()))
	defer reps.Close()
	final := json.RawMessage(`{"values":{"text":"HI"}}`)
	for i, want := range []json.RawMessage{final, nil} {
		sr := server.SharedRun{ID: "run-" + strconv.Itoa(i), Thread: "t" + strconv.Itoa(i), Key: "alice/t" + strconv.Itoa(i), Owner: "alice", Workflow: "gate",
			Request: json.RawMessage(`{}`), CreatedAt: time.Now()}
		recordThreads(t, saver, sr.Key)
		require.NoError(t, reps.Enqueue(t.Context(), sr, runs.Refuse, runs.NoLimits))
		claim, err := reps.Claim(t.Context(), sr.ID, []string{"gate"})
		require.NoError(t, err)
		require.NotNil(t, claim)
		end := claim.Run
		end.Status, end.Final = server.StatusDone, want
		require.NoError(t, reps.Finish(t.Context(), claim, end))
		got, err := reps.Run(t.Context(), sr.ID)
		require.NoError(t, err)
		assert.Equal(t, server.StatusDone, got.Status)
		if want == nil {
			assert.Nil(t, got.Final, "a run finished without final values has none")
		} else {
			assert.JSONEq(t, string(want), string(got.Final))
		}
	}
}
