package server_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

// readCounter is a Saver that counts the checkpoint reads it passes on.
type readCounter struct {
	graph.Saver
	reads atomic.Int64
}

func (c *readCounter) GetCheckpoint(ctx context.Context, ref graph.CheckpointRef) (graph.CheckpointRecord, error) {
	c.reads.Add(1)
	return c.Saver.GetCheckpoint(ctx, ref)
}

func (c *readCounter) ListCheckpoints(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointRecord, error) {
	c.reads.Add(1)
	return c.Saver.ListCheckpoints(ctx, thread, ns, opts)
}

func TestTheValuesOfARunThatEndedDoneAreServedWithoutReadingTheSaver(t *testing.T) {
	saver := &readCounter{Saver: memory.New()}
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Saver: saver})
	e.thread(alice, "echo", "t")
	ru := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "hi", "count": 1}})
	require.Equal(t, "done", ru.Status)
	assert.JSONEq(t, `{"text": "HI", "log": ["upper", "tally"], "count": 2}`, string(ru.Values))

	reads := saver.reads.Load()
	var got server.Run
	for range 3 { // a client polling the run
		e.call("GET", "/v1/threads/t/runs/"+ru.ID, alice, nil, http.StatusOK, &got)
		assert.JSONEq(t, string(ru.Values), string(got.Values))
	}
	assert.Equal(t, reads, saver.reads.Load(), "the values of a run that ended done come from the cache")

	// They are the values the Saver holds at the run's checkpoint.
	snap := e.state(alice, "t")
	assert.Greater(t, saver.reads.Load(), reads, "the thread's state is read from the Saver")
	assert.Equal(t, ru.Checkpoint, snap.Checkpoint)
	assert.JSONEq(t, string(snap.Values), string(ru.Values))

	// A thread deleted and made again with the same id shows its new values.
	e.call("DELETE", "/v1/threads/t", alice, nil, http.StatusNoContent, nil)
	e.thread(alice, "echo", "t")
	again := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "new", "count": 7}})
	assert.JSONEq(t, `{"text": "NEW", "log": ["upper", "tally"], "count": 8}`, string(again.Values))
}

func TestTheValuesOfAnInterruptedRunAreReadFromTheSaverWithItsQuestions(t *testing.T) {
	saver := &readCounter{Saver: memory.New()}
	e := newEnv(t, server.Config{Workflows: workflows(askGraph(t, false)), Saver: saver})
	e.thread(alice, "ask", "t")
	ru := e.wait(alice, "t", map[string]any{"input": map[string]any{}})
	require.Equal(t, "interrupted", ru.Status)
	require.NotEmpty(t, ru.Interrupts)

	reads := saver.reads.Load()
	var got server.Run
	e.call("GET", "/v1/threads/t/runs/"+ru.ID, alice, nil, http.StatusOK, &got)
	assert.Greater(t, saver.reads.Load(), reads, "an interrupted run's values and questions are read back")
	assert.Equal(t, ru.Interrupts, got.Interrupts)
	assert.JSONEq(t, string(ru.Values), string(got.Values))
}
