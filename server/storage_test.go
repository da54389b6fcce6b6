package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
)

// storageMessage matches the message of a 429 stored_bytes and captures
// the counts it names.
var storageMessage = regexp.MustCompile(`^owner "alice" has stored (\d+) bytes \(checkpoints (\d+), recorded runs (\d+), store items (\d+)\), the most allowed: delete threads that are no longer needed \(DELETE /v1/threads/\{thread\}: their recorded runs go with them\) or store items, then try again`)

// chattyGraph publishes n tool results of size bytes each.
func chattyGraph(t *testing.T, n, size int) *graph.Runnable {
	t.Helper()
	g := graph.New("chatty", textKey)
	g.AddNode("talk", func(ctx context.Context, s graph.State) (graph.Command, error) {
		out := strings.Repeat("x", size)
		for i := range n {
			graph.Emit(ctx, tools.ResultEvent{ID: strconv.Itoa(i), Name: "talk", Status: "ok", Output: out})
		}
		return graph.Update(textKey.Set("done")), nil
	})
	g.AddEdge(graph.Start, "talk")
	g.AddEdge("talk", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// ownerBytes is what the recorder's store keeps for owner.
func ownerBytes(t *testing.T, rec *trace.Recorder, owner string) int64 {
	t.Helper()
	n, err := rec.Store().(trace.Sizer).OwnerBytes(t.Context(), owner)
	require.NoError(t, err)
	return n
}

// TestStoreItemsCountInTheStorageQuotaAtOnce: Platform store items count
// in MaxStoredBytes (issue 26, finding 9: they did not), and 100 writes
// at once take exactly what the quota holds.
func TestStoreItemsCountInTheStorageQuotaAtOnce(t *testing.T) {
	const value = 1000 // bytes of each item's JSON
	path := func(i int) string { return fmt.Sprintf("docs/k%03d", i) }
	itemSize := int64(len(path(0)) + value)
	const fit = 37
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Store: storemem.New(store.Config{}), MaxStoredBytes: fit*itemSize + itemSize/2})
	body := func(i int) map[string]any {
		return map[string]any{"namespace": []string{"docs"}, "key": fmt.Sprintf("k%03d", i),
			"value": map[string]any{"t": strings.Repeat("v", value-len(`{"t":""}`))}}
	}

	var wg sync.WaitGroup
	statuses := make([]int, 100)
	refusals := make([]server.ErrorBody, 100)
	for i := range statuses {
		wg.Go(func() {
			resp := e.request("PUT", "/store/items", alice, body(i))
			defer resp.Body.Close()
			statuses[i] = resp.StatusCode
			if resp.StatusCode == http.StatusTooManyRequests {
				assert.NoError(t, decodeJSON(resp, &refusals[i]))
			}
		})
	}
	wg.Wait()
	stored := 0
	for i, st := range statuses {
		switch st {
		case http.StatusNoContent:
			stored++
		case http.StatusTooManyRequests:
			got := refusals[i].Error
			assert.Equal(t, "stored_bytes", got.Quota)
			assert.Equal(t, fit*itemSize+itemSize/2, got.Limit)
			m := storageMessage.FindStringSubmatch(got.Message)
			require.NotNil(t, m, got.Message)
			assert.Equal(t, strconv.FormatInt(fit*itemSize, 10), m[4], "the items stored when it was refused")
			assert.True(t, strings.HasSuffix(got.Message, fmt.Sprintf("(this write needs %d more)", itemSize)), got.Message)
		default:
			t.Errorf("PUT %d: %d", i, st)
		}
	}
	assert.Equal(t, fit, stored, "exactly as many items as the quota holds")

	// Deleting one makes room for one; replacing one takes only the
	// difference.
	e.call("POST", "/store/items/search", alice, map[string]any{"namespace_prefix": []string{"docs"}, "limit": 100}, http.StatusOK, nil)
	var one string
	for i, st := range statuses {
		if st == http.StatusNoContent {
			one = fmt.Sprintf("k%03d", i)
			e.call("PUT", "/store/items", alice, body(i), http.StatusNoContent, nil) // the same size again
			break
		}
	}
	e.call("DELETE", "/store/items", alice, map[string]any{"namespace": []string{"docs"}, "key": one}, http.StatusNoContent, nil)
	e.call("PUT", "/store/items", alice, body(200), http.StatusNoContent, nil)
	var got server.ErrorBody
	e.call("PUT", "/store/items", alice, body(201), http.StatusTooManyRequests, &got)
	e.call("PUT", "/store/items", bob, body(201), http.StatusNoContent, nil) // bob's quota is his own
}

// TestARecordingStopsAtTheStorageQuota: recorded runs count in
// MaxStoredBytes, and a run whose events go beyond it stops being
// recorded there, while it runs on (issue 26, finding 9: a run's
// recording grew without bound).
func TestARecordingStopsAtTheStorageQuota(t *testing.T) {
	rec := recorder(t)
	const max = 100 << 10
	e := newEnv(t, server.Config{Workflows: workflows(chattyGraph(t, 200, 2000)), Recorder: rec, MaxStoredBytes: max})
	e.thread(alice, "chatty", "t")
	run := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "go"}})
	assert.Equal(t, "done", run.Status, "the run ran to its end")
	n := ownerBytes(t, rec, "alice")
	assert.LessOrEqual(t, n, int64(max), "the recording stopped at the quota")
	assert.Greater(t, n, int64(max-4000), "it stopped at the first event beyond")

	evs, err := rec.Store().Events(t.Context(), run.ID, trace.EventQuery{})
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	assert.Equal(t, trace.KindTruncated, evs[len(evs)-1].Kind)

	// The runs that follow record their index entries and their
	// checkpoints, until the owner is at its quota.
	var got server.ErrorBody
	for range 50 {
		resp := e.request("POST", "/v1/threads/t/runs/wait", alice, map[string]any{"input": map[string]any{"text": "again"}})
		if resp.StatusCode == http.StatusTooManyRequests {
			require.NoError(t, decodeJSON(resp, &got))
			resp.Body.Close()
			break
		}
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	require.Equal(t, "stored_bytes", got.Error.Quota, "the owner was refused within 50 runs")
	m := storageMessage.FindStringSubmatch(got.Error.Message)
	require.NotNil(t, m, got.Error.Message)
	assert.NotEqual(t, "0", m[3], "the recorded runs are counted")
	assert.LessOrEqual(t, ownerBytes(t, rec, "alice"), int64(max+50*1000), "each run beyond recorded its index entry, no events")
}

// TestStoredBytesOutliveARestartAndGoWithTheirThread: a new server counts
// what the databases hold for an owner — checkpoints, recorded runs, store
// items (issue 26, finding 9: the count started from zero) — and deleting
// a thread deletes its recorded runs and frees their bytes (they stayed,
// uncounted).
func TestStoredBytesOutliveARestartAndGoWithTheirThread(t *testing.T) {
	rec := recorder(t)
	items := storemem.New(store.Config{})
	saver := memory.New()
	cfg := server.Config{Workflows: workflows(chattyGraph(t, 20, 1000)), Recorder: rec, Store: items, Saver: saver}
	first := newEnv(t, cfg)
	first.thread(alice, "chatty", "t")
	first.wait(alice, "t", map[string]any{"input": map[string]any{"text": "go"}})
	first.call("PUT", "/store/items", alice, map[string]any{"namespace": []string{"docs"}, "key": "k", "value": map[string]any{"a": 1}}, http.StatusNoContent, nil)
	recorded := ownerBytes(t, rec, "alice")
	require.Greater(t, recorded, int64(20_000))
	require.NoError(t, first.srv.Shutdown(t.Context()))

	cfg.MaxStoredBytes = recorded // the recorded runs and the item are beyond it
	second := newEnv(t, cfg)
	got, _ := second.refused("POST", "/v1/threads", alice, map[string]any{"workflow": "chatty", "thread_id": "u"})
	m := storageMessage.FindStringSubmatch(got.Message)
	require.NotNil(t, m, got.Message)
	assert.Equal(t, strconv.FormatInt(recorded, 10), m[3], "the recorded runs, read from the recorder's store")
	assert.Equal(t, strconv.Itoa(len("docs/k")+len(`{"a":1}`)), m[4], "the store item, read from the store")
	checkpoints, err := saver.ThreadBytes(t.Context(), "alice/")
	require.NoError(t, err)
	require.NotZero(t, checkpoints)
	assert.Equal(t, strconv.FormatInt(checkpoints, 10), m[2], "the checkpoints, read from the saver")

	second.call("DELETE", "/v1/threads/t", alice, nil, http.StatusNoContent, nil)
	runs, err := rec.Store().Runs(t.Context(), trace.RunQuery{Owner: "alice", Thread: "t"})
	require.NoError(t, err)
	assert.Empty(t, runs, "the thread's recorded runs went with it")
	assert.Zero(t, ownerBytes(t, rec, "alice"))
	second.thread(alice, "chatty", "u") // the deleted thread's bytes are free
}

// decodeJSON decodes resp's body into out.
func decodeJSON(resp *http.Response, out any) error {
	return json.NewDecoder(resp.Body).Decode(out)
}
