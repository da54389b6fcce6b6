package replicas_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// TestANoticeIsClaimedByOneOfThreeReplicasAtOnce: the notice of an
// ended run is claimed by one of 120 claims made at once by three
// replicas; none claims it while that claim holds, nor once it was sent.
// A notice that is not due (an A2A task's before NoticeDue) is claimed
// by none, and NoticeDue says whether the run had ended.
func TestANoticeIsClaimedByOneOfThreeReplicasAtOnce(t *testing.T) {
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "coorflow_test_")
	saver := postgres.New(pool, postgres.WithSchema(schema))
	var reps []*replicas.Replicas
	for i := range 3 {
		r, err := replicas.New(pool, replicas.Config{Saver: saver, Name: "r" + strconv.Itoa(i), Schema: schema, LeaseTTL: time.Hour})
		require.NoError(t, err)
		require.NoError(t, r.Start(t.Context()))
		t.Cleanup(func() { assert.NoError(t, r.Close()) })
		reps = append(reps, r)
	}
	finish := func(id string, notice bool) {
		t.Helper()
		recordThreads(t, saver, "alice/"+id)
		sr := server.SharedRun{ID: id, Thread: id, Key: "alice/" + id, Owner: "alice", Workflow: "gate", Request: []byte(`{}`),
			CreatedAt: time.Now(), Notice: notice}
		require.NoError(t, reps[0].Enqueue(t.Context(), sr, runs.Refuse, runs.NoLimits))
		c, err := reps[0].Claim(t.Context(), id, []string{"gate"})
		require.NoError(t, err)
		require.NotNil(t, c)
		end := c.Run
		end.Status = server.StatusDone
		require.NoError(t, reps[0].Finish(t.Context(), c, end))
	}

	finish("webhook", true)
	const n = 120
	var won atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			sr, ok, err := reps[i%3].ClaimNotice(t.Context(), "webhook", nil)
			assert.NoError(t, err)
			if ok {
				won.Add(1)
				assert.Equal(t, "webhook", sr.ID)
			}
		})
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int32(1), won.Load(), "claims of %d at once that got the notice", n)
	_, ok, err := reps[1].ClaimNotice(t.Context(), "", []string{"gate"})
	require.NoError(t, err)
	assert.False(t, ok, "a sweep leaves a notice whose claim holds")
	require.NoError(t, reps[2].NoticeSent(t.Context(), "webhook"))
	_, ok, err = reps[1].ClaimNotice(t.Context(), "webhook", nil)
	require.NoError(t, err)
	assert.False(t, ok, "a notice sent is claimed no more")

	finish("task", false)
	_, ok, err = reps[1].ClaimNotice(t.Context(), "task", nil)
	require.NoError(t, err)
	assert.False(t, ok, "a notice not due yet")
	ended, err := reps[2].NoticeDue(t.Context(), "task")
	require.NoError(t, err)
	assert.True(t, ended, "the run had ended: the caller claims its notice")
	sr, ok, err := reps[1].ClaimNotice(t.Context(), "task", nil)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "alice", sr.Owner)
	ended, err = reps[2].NoticeDue(t.Context(), "task")
	require.NoError(t, err)
	assert.False(t, ended, "a notice due already is not made due again")
}
