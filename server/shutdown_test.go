package server_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

// restartable gives the saver of a first server and, after it has shut
// down, the saver of the one that replaces it.
type restartable struct {
	name   string
	first  func(t *testing.T) graph.Saver
	second func(t *testing.T) graph.Saver
}

func savers() []restartable {
	var mem *memory.Saver
	var path string
	var db *sqlite.Saver
	return []restartable{
		{
			name:   "SharedMemorySaver",
			first:  func(t *testing.T) graph.Saver { mem = memory.New(); return mem },
			second: func(t *testing.T) graph.Saver { return mem },
		},
		{
			name: "SQLiteFileReopened",
			first: func(t *testing.T) graph.Saver {
				path = filepath.Join(t.TempDir(), "threads.db")
				var err error
				db, err = sqlite.Open(t.Context(), path)
				require.NoError(t, err)
				return db
			},
			second: func(t *testing.T) graph.Saver {
				require.NoError(t, db.Close(), "the first process is gone")
				reopened, err := sqlite.Open(t.Context(), path)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, reopened.Close()) })
				return reopened
			},
		},
	}
}

func TestShutdownCancelsRunsAndANewServerContinuesThem(t *testing.T) {
	for _, rs := range savers() {
		t.Run(rs.name, func(t *testing.T) {
			b := newBlocker(t)
			e1 := newEnv(t, server.Config{Workflows: workflows(b.r), Saver: rs.first(t)})
			e1.thread(alice, "block", "t")
			var ru server.Run
			e1.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &ru)
			b.waitEntered(t) // a and b have finished; slow is running

			watcher := e1.request("GET", "/v1/threads/t/runs/"+ru.ID+"/stream?kinds=run_end", alice, nil)
			defer watcher.Body.Close()
			require.Equal(t, http.StatusOK, watcher.StatusCode)

			require.NoError(t, e1.srv.Shutdown(t.Context()))

			evs := readEvents(t, watcher.Body, nil)
			assert.Equal(t, []string{"end"}, names(evs), "the stream ends with its run")
			cancelled := evs[0].run(t)
			assert.Equal(t, "cancelled", cancelled.Status)
			assert.Equal(t, &server.ErrorDetail{Code: "shutting_down", Message: "run cancelled: the server is shutting down"}, cancelled.Error)
			e1.fails("POST", "/v1/threads/t/runs", alice, map[string]any{}, http.StatusServiceUnavailable,
				server.ErrorDetail{Code: "shutting_down", Message: "the server is shutting down; start the run again later"})
			e1.fails("GET", "/healthz", "", nil, http.StatusServiceUnavailable,
				server.ErrorDetail{Code: "shutting_down", Message: "the server is shutting down"})
			assert.Equal(t, map[string]int32{"a": 1, "b": 1, "slow": 1, "c": 0}, b.counts())

			b.open()
			e2 := newEnv(t, server.Config{Workflows: workflows(b.r), Saver: rs.second(t)})
			snap := e2.state(alice, "t")
			assert.Equal(t, []string{"slow"}, snap.Next, "the last checkpoint survived")
			assert.JSONEq(t, `{"log": ["a", "b"]}`, string(snap.Values))

			done := e2.wait(alice, "t", map[string]any{})
			assert.Equal(t, "done", done.Status)
			assert.JSONEq(t, `{"log": ["a", "b", "slow", "c"]}`, string(done.Values))
			assert.Equal(t, map[string]int32{"a": 1, "b": 1, "slow": 2, "c": 1}, b.counts(), "finished steps were not run again")
		})
	}
}

func TestShutdownDropsQueuedRunsAndWaitsForRunning(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), QueueBusy: true})
	e.thread(alice, "block", "t")
	var first, queued server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, &first)
	b.waitEntered(t)
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{}, http.StatusAccepted, &queued)
	require.Equal(t, "queued", queued.Status)

	require.NoError(t, e.srv.Shutdown(t.Context()))
	for _, id := range []string{first.ID, queued.ID} {
		var got server.Run
		e.call("GET", "/v1/threads/t/runs/"+id, alice, nil, http.StatusOK, &got)
		assert.Equal(t, "cancelled", got.Status)
		assert.Equal(t, "shutting_down", got.Error.Code)
	}
	assert.Equal(t, int32(1), b.counts()["a"], "the queued run never started")
	require.NoError(t, e.srv.Shutdown(t.Context()), "a second Shutdown is harmless")
}

func TestShutdownGivesUpWhenItsContextEnds(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	g := graph.New("stubborn", logKey)
	g.AddNode("deaf", func(ctx context.Context, s graph.State) (graph.Command, error) {
		close(entered)
		<-release
		return graph.Command{}, nil
	})
	g.AddEdge(graph.Start, "deaf")
	g.AddEdge("deaf", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r)})
	e.thread(alice, "stubborn", "t")
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{}}, http.StatusAccepted, nil)
	<-entered

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = e.srv.Shutdown(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "server: shutdown: runs still ending: context canceled", err.Error())
	close(release)
	require.NoError(t, e.srv.Shutdown(t.Context()), "the run ended once its node returned")
}
