package server_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

// gatedSaver holds the first DeleteThread until the test lets it go on.
type gatedSaver struct {
	graph.Saver
	once    sync.Once
	entered chan struct{} // closed when DeleteThread is called
	proceed chan struct{} // closed by the test
}

func (g *gatedSaver) DeleteThread(ctx context.Context, thread string) error {
	g.once.Do(func() {
		close(g.entered)
		<-g.proceed
	})
	return g.Saver.DeleteThread(ctx, thread)
}

// TestARunCannotStartOnAThreadBeingDeleted: DELETE /v1/threads/{thread}
// checked that the thread had no run, then deleted its checkpoints and
// its recorded runs in later steps; a run started between them was
// admitted and ran on a thread whose checkpoints and recording were
// deleted under it (its recording's bytes left the quota while it went on
// writing). The thread is busy until its deletion ends.
func TestARunCannotStartOnAThreadBeingDeleted(t *testing.T) {
	saver := &gatedSaver{Saver: memory.New(), entered: make(chan struct{}), proceed: make(chan struct{})}
	e := newEnv(t, server.Config{Workflows: workflows(chattyGraph(t, 1, 10)), Recorder: recorder(t), Saver: saver})
	e.thread(alice, "chatty", "t")
	e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "go"}})

	deleted := make(chan int, 1)
	go func() {
		req, err := http.NewRequestWithContext(t.Context(), "DELETE", e.hs.URL+"/v1/threads/t", nil)
		if err != nil {
			deleted <- 0
			return
		}
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := e.client.Do(req)
		if err != nil {
			deleted <- 0
			return
		}
		resp.Body.Close()
		deleted <- resp.StatusCode
	}()
	<-saver.entered // the deletion checked the thread and is deleting it

	resp := e.request("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{"text": "again"}})
	var got server.ErrorBody
	err := decodeJSON(resp, &got)
	resp.Body.Close()
	close(saver.proceed)
	assert.Equal(t, http.StatusNoContent, <-deleted)
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "a run was admitted on the thread being deleted")
	assert.Equal(t, server.ErrorDetail{Code: server.CodeThreadBusy, Message: `thread "t" is being deleted: wait for the deletion to end`}, got.Error)
}

// recordGate holds the answer of the first read of a thread's record,
// once armed, until the test lets it go on.
type recordGate struct {
	graph.Saver
	armed   chan struct{} // closed by the test: the next record read waits
	first   atomic.Bool
	entered chan struct{} // closed when that read waits
	proceed chan struct{} // closed by the test
}

func (g *recordGate) GetCheckpoint(ctx context.Context, ref graph.CheckpointRef) (graph.CheckpointRecord, error) {
	rec, err := g.Saver.GetCheckpoint(ctx, ref)
	select {
	case <-g.armed:
		if ref.NS == server.ThreadRecordNS && g.first.CompareAndSwap(false, true) {
			close(g.entered) // read, not yet answered
			<-g.proceed
		}
	default:
	}
	return rec, err
}

// TestARunThatReadTheThreadBeforeItWasDeletedDoesNotRunOnIt: a request
// read the thread's record, then the thread was deleted (the deletion
// ended), then the request's run was submitted: it was admitted, as the
// thread was no longer being deleted, and ran on a thread that no longer
// existed, leaving checkpoints and a recording of a thread nobody has. A
// run starts only on a thread whose record is there.
func TestARunThatReadTheThreadBeforeItWasDeletedDoesNotRunOnIt(t *testing.T) {
	saver := &recordGate{Saver: memory.New(), armed: make(chan struct{}), entered: make(chan struct{}), proceed: make(chan struct{})}
	e := newEnv(t, server.Config{Workflows: workflows(chattyGraph(t, 1, 10)), Recorder: recorder(t), Saver: saver})
	e.thread(alice, "chatty", "t")

	close(saver.armed)
	started := make(chan *http.Response, 1)
	go func() {
		started <- e.request("POST", "/v1/threads/t/runs/wait", alice, map[string]any{"input": map[string]any{"text": "late"}})
	}()
	<-saver.entered // the run's request is reading the thread's record
	e.call("DELETE", "/v1/threads/t", alice, nil, http.StatusNoContent, nil)
	close(saver.proceed)

	resp := <-started
	var got server.ErrorBody
	err := decodeJSON(resp, &got)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a run started on a deleted thread: %+v", got)
	assert.Equal(t, server.ErrorDetail{Code: server.CodeUnknownThread, Message: `unknown thread "t"`}, got.Error)
	_, err = saver.Saver.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "alice/t"})
	assert.ErrorIs(t, err, graph.ErrNotFound, "the deleted thread has no checkpoint")
}
