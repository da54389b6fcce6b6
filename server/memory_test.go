package server_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/server"
)

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestFinishedRunsKeepNoValuesOrEventsInMemory(t *testing.T) {
	// The threads live in SQLite, whose pages are not on the Go heap: what
	// the heap grows by is what the server keeps.
	saver, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "threads.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = saver.Close() })
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Saver: saver})
	input := map[string]any{"input": map[string]any{"text": strings.Repeat("x", 900<<10)}}
	run := func(i int) server.Run {
		id := fmt.Sprintf("t%d", i)
		e.thread(alice, "echo", id)
		return e.wait(alice, id, input)
	}
	run(0) // warm up: statements, connections, pools
	before := liveHeap()
	const runs = 16
	var last server.Run
	for i := 1; i <= runs; i++ {
		last = run(i)
		require.Equal(t, "done", last.Status)
	}
	after := liveHeap()
	growth := int64(after) - int64(before)
	t.Logf("live heap: %d KiB before, %d KiB after %d finished runs with a 900 KiB input (%d KiB a run)",
		before>>10, after>>10, runs, growth/runs>>10)
	// Before finished runs dropped their values, input and events, each
	// kept 2.7 MiB.
	assert.Less(t, growth, int64(2<<20), "the live heap grew by %d KiB for %d finished runs", growth>>10, runs)

	// What was dropped is read back on demand.
	var got server.Run
	e.call("GET", "/v1/threads/t16/runs/"+last.ID, alice, nil, http.StatusOK, &got)
	assert.Equal(t, "done", got.Status)
	assert.Contains(t, string(got.Values), strings.Repeat("X", 1000), "the values come back from the saver")
}
