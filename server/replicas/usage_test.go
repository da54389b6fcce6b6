package replicas_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
)

// TestARenewalSharesWhatARunningRunSpentSoFar: each renewal of a claim
// stores what the run spent so far (Claim.Spent), so every replica shows
// a running run's usage, not 0 until it ends; a renewal with nothing to
// share keeps what was shared, and one whose lease another replica took
// over stores nothing.
func TestARenewalSharesWhatARunningRunSpentSoFar(t *testing.T) {
	c := newCluster(t, 1, gateGraph(t, make(chan struct{})), time.Hour)
	th := thread(t, c.urls[0])
	pool := pgtest.Pool(t)
	rep, err := replicas.New(pool, replicas.Config{Saver: c.saver, Name: "runner", LeaseTTL: time.Hour, Schema: c.schema})
	require.NoError(t, err)
	defer rep.Close()
	sr := server.SharedRun{ID: "run-1", Thread: th, Key: "alice/" + th, Owner: "alice", Workflow: "gate",
		Request: json.RawMessage(`{"input":{"text":"hi"}}`), CreatedAt: time.Now()}
	require.NoError(t, rep.Enqueue(t.Context(), sr, runs.Refuse, runs.NoLimits))
	claim, err := rep.Claim(t.Context(), sr.ID, []string{sr.Workflow})
	require.NoError(t, err)
	require.NotNil(t, claim)

	spent := llm.Spend{Calls: 2, PromptTokens: 120, CompletionTokens: 30, CostUSD: 0.25}
	claim.Spent = func() llm.Spend { return spent }
	cancel, err := rep.Renew(t.Context(), claim)
	require.NoError(t, err)
	assert.False(t, cancel)
	var v server.Run
	require.Equal(t, http.StatusOK, call(t, http.MethodGet, c.urls[0]+"/v1/threads/"+th+"/runs/run-1", "", &v))
	assert.Equal(t, server.StatusRunning, v.Status)
	assert.Equal(t, spent, v.Usage, "another replica shows what the running run spent")

	claim.Spent = nil
	_, err = rep.Renew(t.Context(), claim)
	require.NoError(t, err)
	got, err := rep.Run(t.Context(), sr.ID)
	require.NoError(t, err)
	assert.Equal(t, spent, got.Usage, "nothing to share keeps what was shared")

	stale := *claim
	stale.Token--
	stale.Spent = func() llm.Spend { return llm.Spend{Calls: 99} }
	_, err = rep.Renew(t.Context(), &stale)
	require.Error(t, err, "a claim whose lease is not the run's stores nothing")
	got, err = rep.Run(t.Context(), sr.ID)
	require.NoError(t, err)
	assert.Equal(t, spent, got.Usage)
}
