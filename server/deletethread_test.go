package server_test

import (
	"context"
	"net/http"
	"sync"
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
