package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

// brokenSaver is a memory saver whose reads or writes of one thread fail
// with an error that names the storage's insides, once broken.
type brokenSaver struct {
	graph.Saver
	thread string
	reads  atomic.Bool
	// writesFrom fails writes of checkpoints from this step on (-1: the
	// input's; unset: none).
	writesFrom atomic.Pointer[int]
}

func (b *brokenSaver) err(thread string) error {
	return errors.New(`sqlite: SELECT meta FROM checkpoints WHERE thread = '` + thread + `': disk I/O error`)
}

func (b *brokenSaver) GetCheckpoint(ctx context.Context, ref graph.CheckpointRef) (graph.CheckpointRecord, error) {
	if b.reads.Load() && ref.Thread == b.thread {
		return graph.CheckpointRecord{}, b.err(ref.Thread)
	}
	return b.Saver.GetCheckpoint(ctx, ref)
}

func (b *brokenSaver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if from := b.writesFrom.Load(); from != nil && cp.Step >= *from && cp.Thread == b.thread {
		return b.err(cp.Thread)
	}
	return b.Saver.PutCheckpoint(ctx, cp, blobs)
}

// logBuffer collects a server's JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// entry returns the log entry whose request_id is id.
func (l *logBuffer) entry(t *testing.T, id string) map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.SplitSeq(l.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["request_id"] == id {
			return m
		}
	}
	t.Fatalf("no log entry with request_id %q in:\n%s", id, l.buf.String())
	return nil
}

func TestInternalErrorsAreLoggedNotAnswered(t *testing.T) {
	saver := &brokenSaver{Saver: memory.New(), thread: "alice/c1"}
	var log logBuffer
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Saver: saver,
		Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	e.thread(alice, "echo", "c1")

	// internalError requires a generic 500 naming the request id, and a
	// log entry under that id with the detail.
	internalError := func(resp *http.Response, body []byte, op string) {
		t.Helper()
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "%s", body)
		id := resp.Header.Get("X-Request-Id")
		require.NotEmpty(t, id)
		var got server.ErrorBody
		require.NoError(t, json.Unmarshal(body, &got))
		assert.Equal(t, server.ErrorDetail{Code: "internal", RequestID: id,
			Message: "internal error: the server's log has the details under request id " + id}, got.Error, op)
		for _, secret := range []string{"alice/c1", "SELECT", "sqlite", "disk I/O"} {
			assert.NotContains(t, string(body), secret, op)
		}
		logged := log.entry(t, id)
		assert.Equal(t, "ERROR", logged["level"])
		assert.Contains(t, logged["err"], `SELECT meta FROM checkpoints WHERE thread = 'alice/c1': disk I/O error`, op)
	}
	do := func(method, path string, body any) (*http.Response, []byte) {
		t.Helper()
		resp := e.request(method, path, alice, body)
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, err := buf.ReadFrom(resp.Body)
		require.NoError(t, err)
		return resp, buf.Bytes()
	}

	// A request whose read fails.
	saver.reads.Store(true)
	resp, body := do("GET", "/v1/threads/c1", nil)
	internalError(resp, body, "read the thread")
	saver.reads.Store(false)

	// A run that cannot store its input.
	from := -1
	saver.writesFrom.Store(&from)
	resp, body = do("POST", "/v1/threads/c1/runs/wait", map[string]any{"input": map[string]any{"text": "x"}})
	internalError(resp, body, "run")

	// A run that fails once started: its error event and its error say
	// no more.
	zero := 0
	saver.writesFrom.Store(&zero)
	evs := e.stream("POST", "/v1/threads/c1/runs/stream", alice, map[string]any{"input": map[string]any{"text": "x"}})
	require.Equal(t, []string{"error", "end"}, names(evs[len(evs)-2:]))
	generic := `^internal error: the server's log has the details under request id [0-9a-f]{32}$`
	assert.Regexp(t, generic, evs[len(evs)-2].event(t).Error)
	failed := evs[len(evs)-1].run(t)
	require.NotNil(t, failed.Error)
	assert.Equal(t, "internal", failed.Error.Code)
	assert.Regexp(t, generic, failed.Error.Message)
	id := strings.TrimPrefix(failed.Error.Message, "internal error: the server's log has the details under request id ")
	assert.Equal(t, id, failed.Error.RequestID)
	assert.Equal(t, failed.ID, log.entry(t, id)["run"])

	// Every answer names its request.
	ok := e.request("GET", "/healthz", "", nil)
	ok.Body.Close()
	assert.Len(t, ok.Header.Get("X-Request-Id"), 32)
}
