package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
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

// meddler is an executor that lets another writer of the thread store a
// checkpoint (writes as node asNode) between the server's look at the
// thread and the run's start, then runs the workflow.
type meddler struct {
	r      *graph.Runnable
	saver  graph.Saver
	asNode string
	writes []graph.Write
	armed  atomic.Bool
}

func (m *meddler) Stream(ctx context.Context, input []graph.Write, opts ...graph.Option) iter.Seq2[graph.Event, error] {
	if m.armed.Swap(false) {
		spec, err := m.r.Spec(opts...)
		if err == nil {
			_, err = m.r.UpdateState(ctx, spec.Thread, m.asNode, m.writes, graph.WithSaver(m.saver))
		}
		if err != nil {
			return func(yield func(graph.Event, error) bool) { yield(graph.Event{Kind: graph.EventError, Err: err}, err) }
		}
	}
	return m.r.Stream(ctx, input, opts...)
}

func TestARunThatStoredNoCheckpointShowsTheValuesOfTheCheckpointItNames(t *testing.T) {
	var fail atomic.Bool
	g := graph.New("once", textKey)
	g.AddNode("work", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if fail.Load() {
			return graph.Command{}, errors.New("boom")
		}
		return graph.Update(textKey.Set("worked")), nil
	})
	g.AddEdge(graph.Start, "work")
	g.AddEdge("work", graph.End)
	wf, err := g.Compile()
	require.NoError(t, err)
	saver := memory.New()
	m := &meddler{r: wf, saver: saver, asNode: "work", writes: []graph.Write{textKey.Set("by another writer")}}
	e := newEnv(t, server.Config{Workflows: workflows(wf), Saver: saver, Executors: map[string]server.Executor{"once": m}})
	e.thread(alice, "once", "t")
	fail.Store(true)
	failed := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "hi"}})
	require.Equal(t, "error", failed.Status, "the thread waits to run work")

	// The run that continues it finds work done by another writer, and
	// ends done at once, at the checkpoint the server saw before it.
	m.armed.Store(true)
	ru := e.wait(alice, "t", map[string]any{})
	require.Equal(t, "done", ru.Status)
	threads, err := saver.Threads(t.Context(), graph.ThreadListOptions{})
	require.NoError(t, err)
	require.Len(t, threads, 1)
	at, err := wf.State(t.Context(), threads[0].ID, graph.WithSaver(saver), graph.FromCheckpoint(ru.Checkpoint))
	require.NoError(t, err)
	want, err := json.Marshal(at.State)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(ru.Values), "the values the Saver holds at the run's checkpoint")
	var got server.Run
	e.call("GET", "/v1/threads/t/runs/"+ru.ID, alice, nil, http.StatusOK, &got)
	assert.JSONEq(t, string(want), string(got.Values))
}
