package server_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/coorflow/coorflow/server"
)

func TestTheRunSpanIsAChildOfTheCallersSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), TracerProvider: tp})
	e.thread(alice, "echo", "t")

	const traceID, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	resp := e.request("POST", "/v1/threads/t/runs/wait", alice, map[string]any{"input": map[string]any{"text": "x"}},
		"traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	run, ok := spans["run echo"]
	require.True(t, ok, "a run span was recorded")
	assert.Equal(t, traceID, run.Parent().TraceID().String())
	assert.Equal(t, callerSpan, run.Parent().SpanID().String())
	assert.True(t, run.Parent().IsRemote())
	assert.Equal(t, traceID, run.SpanContext().TraceID().String(), "the run joins the caller's trace")
	attrs := map[string]string{}
	for _, kv := range run.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	assert.Equal(t, "t", attrs["coorflow.thread"])
	assert.Equal(t, "echo", attrs["coorflow.workflow"])
	assert.Equal(t, "done", attrs["coorflow.run.status"])
	assert.Len(t, attrs["coorflow.run"], 32)

	node := spans["node tally"]
	require.NotNil(t, node)
	assert.Equal(t, spans["step 1"].SpanContext().SpanID(), node.Parent().SpanID())
	assert.Equal(t, node.SpanContext().SpanID(), spans["chat m"].Parent().SpanID())
	assert.Equal(t, spans["node upper"].SpanContext().SpanID(), spans["execute_tool shout"].Parent().SpanID())
}

func TestWithoutTraceparentTheRunSpanIsARoot(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), TracerProvider: tp})
	e.thread(alice, "echo", "t")
	e.wait(alice, "t", map[string]any{"input": map[string]any{"text": "x"}})
	for _, s := range rec.Ended() {
		if s.Name() == "run echo" {
			assert.False(t, s.Parent().IsValid())
			return
		}
	}
	t.Fatal("no run span")
}
