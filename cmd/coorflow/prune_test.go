package main

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
)

// TestServePrunesPeriodically runs the pruner of serve on the fake clock
// of a synctest bubble: a run is removed at the first tick after it is
// older than --prune-max-age, and stopping the pruner ends its goroutine.
func TestServePrunesPeriodically(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stderr lockedBuffer
		a := &app{stderr: &stderr}
		store := memory.New()
		ended := time.Now()
		require.NoError(t, store.CreateRun(t.Context(), trace.RunInfo{ID: "r1", Owner: "alice", Status: trace.StatusDone,
			StartedAt: ended.Add(-time.Minute), EndedAt: &ended}))
		keep := &retentionFlags{maxAge: ageFlag{time.Hour}, maxRuns: countFlag{-1}}
		stop := a.startPruner(t.Context(), store, keep, 10*time.Minute)
		defer stop()

		time.Sleep(65 * time.Minute) // ticks at 10, ..., 60 minutes: not older than an hour yet
		synctest.Wait()
		_, err := store.Run(t.Context(), "r1")
		require.NoError(t, err)
		assert.Empty(t, stderr.String())

		time.Sleep(10 * time.Minute) // the tick at 70 minutes
		synctest.Wait()
		_, err = store.Run(t.Context(), "r1")
		assert.ErrorIs(t, err, trace.ErrNotFound)
		assert.Equal(t, "coorflow: pruned 1 recorded run(s) (1 for their age, 0 for the count); 0 kept\n", stderr.String())
		stop()
	})
}

func TestRetentionFlagsReadDaysAndNone(t *testing.T) {
	fs := newFlags("x")
	r := addRetentionFlags(fs, "prune-")
	require.NoError(t, fs.Parse(nil))
	assert.Equal(t, trace.RetentionPolicy{MaxAge: 30 * 24 * time.Hour, MaxRuns: 10_000}, r.policy())
	require.NoError(t, fs.Parse([]string{"--prune-max-age", "36h", "--prune-max-runs", "none"}))
	assert.Equal(t, trace.RetentionPolicy{MaxAge: 36 * time.Hour, MaxRuns: -1}, r.policy())
	assert.Equal(t, "36h0m0s", r.maxAge.String())
	assert.Equal(t, "none", r.maxRuns.String())
	require.NoError(t, fs.Parse([]string{"--prune-max-age", "7d"}))
	assert.Equal(t, "7d", r.maxAge.String())
}
