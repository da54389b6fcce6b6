package telemetry

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// recordSpans runs record against a provider with res and returns the
// spans it ended.
func recordSpans(t *testing.T, res *resource.Resource, record func(trace.TracerProvider)) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	record(tp)
	require.NoError(t, tp.Shutdown(t.Context()))
	return rec.Ended()
}

func decodeTraces(t *testing.T, b []byte) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	var req coltracepb.ExportTraceServiceRequest
	require.NoError(t, proto.Unmarshal(b, &req))
	return &req
}

// anyJSON prints an AnyValue in the protobuf JSON form, which is easy to
// compare.
func anyJSON(t *testing.T, v *commonpb.AnyValue) string {
	t.Helper()
	b, err := protojson.Marshal(v)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, json.Compact(&out, b)) // protojson varies its spacing
	return out.String()
}

// TestEncodeTracesDecodesWithTheGeneratedTypes checks every field the
// encoder writes against the generated OTLP decoder.
func TestEncodeTracesDecodesWithTheGeneratedTypes(t *testing.T) {
	long := strings.Repeat("x", 20000) // a length of three varint bytes
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "svc"))
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x0a, 0xf7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14},
		SpanID:     trace.SpanID{0xb7, 1, 2, 3, 4, 5, 6, 7},
		TraceFlags: trace.FlagsSampled,
		Remote:     true,
	})
	linked := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled,
	})
	start := time.Unix(1700000000, 123456789)
	spans := recordSpans(t, res, func(tp trace.TracerProvider) {
		ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
		_, s := tp.Tracer("scope-a", trace.WithInstrumentationVersion("v1.2.3"),
			trace.WithInstrumentationAttributes(attribute.Bool("scoped", true))).Start(ctx, "root",
			trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
			trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.Int("n", 1)}}))
		s.SetAttributes(
			attribute.String("s", "v"), attribute.String("empty", ""), attribute.String("long", long),
			attribute.Bool("f", false), attribute.Int64("neg", -5), attribute.Float64("pi", 3.25),
			attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{1, -2}),
			attribute.Float64Slice("fs", []float64{0.5}), attribute.StringSlice("ss", []string{"a", ""}),
		)
		s.AddEvent("retry", trace.WithTimestamp(start.Add(time.Millisecond)), trace.WithAttributes(attribute.Int("attempt", 2)))
		s.SetStatus(codes.Error, "model failed")
		s.End(trace.WithTimestamp(start.Add(time.Second)))
		_, ok := tp.Tracer("scope-b").Start(context.Background(), "second")
		ok.SetStatus(codes.Ok, "")
		ok.End()
	})
	require.Len(t, spans, 2)

	req := decodeTraces(t, encodeTraces(spans))
	require.Len(t, req.GetResourceSpans(), 1, "one resource")
	rs := req.GetResourceSpans()[0]
	assert.Equal(t, "https://opentelemetry.io/schemas/1.26.0", rs.GetSchemaUrl())
	require.Len(t, rs.GetResource().GetAttributes(), 1)
	assert.Equal(t, "service.name", rs.GetResource().GetAttributes()[0].GetKey())
	require.Len(t, rs.GetScopeSpans(), 2, "one group per scope")

	a := rs.GetScopeSpans()[0]
	assert.Equal(t, "scope-a", a.GetScope().GetName())
	assert.Equal(t, "v1.2.3", a.GetScope().GetVersion())
	require.Len(t, a.GetScope().GetAttributes(), 1)
	assert.Equal(t, "scoped", a.GetScope().GetAttributes()[0].GetKey())
	require.Len(t, a.GetSpans(), 1)
	root := a.GetSpans()[0]
	assert.Equal(t, "root", root.GetName())
	assert.Equal(t, "0af70102030405060708090a0b0c0d0e", hex.EncodeToString(root.GetTraceId()))
	assert.Equal(t, "b701020304050607", hex.EncodeToString(root.GetParentSpanId()))
	assert.Len(t, root.GetSpanId(), 8)
	assert.Equal(t, uint32(0x301), root.GetFlags(), "sampled, with a remote parent")
	assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, root.GetKind())
	assert.Equal(t, uint64(start.UnixNano()), root.GetStartTimeUnixNano())
	assert.Equal(t, uint64(start.Add(time.Second).UnixNano()), root.GetEndTimeUnixNano())
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, root.GetStatus().GetCode())
	assert.Equal(t, "model failed", root.GetStatus().GetMessage())

	got := map[string]string{}
	for _, kv := range root.GetAttributes() {
		got[kv.GetKey()] = anyJSON(t, kv.GetValue())
	}
	assert.True(t, got["long"] == `{"stringValue":"`+long+`"}`, "a 20,000-byte value survives")
	delete(got, "long")
	assert.Equal(t, map[string]string{
		"s":     `{"stringValue":"v"}`,
		"empty": `{"stringValue":""}`,
		"f":     `{"boolValue":false}`,
		"neg":   `{"intValue":"-5"}`,
		"pi":    `{"doubleValue":3.25}`,
		"bs":    `{"arrayValue":{"values":[{"boolValue":true},{"boolValue":false}]}}`,
		"is":    `{"arrayValue":{"values":[{"intValue":"1"},{"intValue":"-2"}]}}`,
		"fs":    `{"arrayValue":{"values":[{"doubleValue":0.5}]}}`,
		"ss":    `{"arrayValue":{"values":[{"stringValue":"a"},{"stringValue":""}]}}`,
	}, got)

	require.Len(t, root.GetEvents(), 1)
	ev := root.GetEvents()[0]
	assert.Equal(t, "retry", ev.GetName())
	assert.Equal(t, uint64(start.Add(time.Millisecond).UnixNano()), ev.GetTimeUnixNano())
	require.Len(t, ev.GetAttributes(), 1)
	assert.Equal(t, `{"intValue":"2"}`, anyJSON(t, ev.GetAttributes()[0].GetValue()))

	require.Len(t, root.GetLinks(), 1)
	l := root.GetLinks()[0]
	assert.Equal(t, "01000000000000000000000000000000", hex.EncodeToString(l.GetTraceId()))
	assert.Equal(t, "0200000000000000", hex.EncodeToString(l.GetSpanId()))
	assert.Equal(t, uint32(0x101), l.GetFlags())
	require.Len(t, l.GetAttributes(), 1)

	b := rs.GetScopeSpans()[1]
	assert.Equal(t, "scope-b", b.GetScope().GetName())
	require.Len(t, b.GetSpans(), 1)
	second := b.GetSpans()[0]
	assert.Empty(t, second.GetParentSpanId(), "a root span has no parent")
	assert.Equal(t, tracepb.Span_SPAN_KIND_INTERNAL, second.GetKind())
	assert.Equal(t, tracepb.Status_STATUS_CODE_OK, second.GetStatus().GetCode())
	assert.Equal(t, uint32(0x101), second.GetFlags())
}

func TestEncodeTracesWritesSliceAndMapValues(t *testing.T) {
	spans := recordSpans(t, resource.Empty(), func(tp trace.TracerProvider) {
		_, s := tp.Tracer("t").Start(context.Background(), "s")
		s.SetAttributes(
			attribute.Slice("mixed", attribute.StringValue("a"), attribute.Int64Value(1)),
			attribute.Map("m", attribute.String("k", "v"), attribute.Bool("b", true)),
			attribute.ByteSlice("raw", []byte{0, 1, 2}),
		)
		s.End()
	})
	req := decodeTraces(t, encodeTraces(spans))
	got := map[string]string{}
	for _, kv := range req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0].GetAttributes() {
		got[kv.GetKey()] = anyJSON(t, kv.GetValue())
	}
	assert.Equal(t, map[string]string{
		"mixed": `{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"1"}]}}`,
		"m":     `{"kvlistValue":{"values":[{"key":"b","value":{"boolValue":true}},{"key":"k","value":{"stringValue":"v"}}]}}`,
		"raw":   `{"bytesValue":"AAEC"}`,
	}, got)
}

// testExporter returns an exporter for srv whose retries wait 1ms.
func testExporter(srv *httptest.Server, timeout time.Duration) *otlpExporter {
	return newOTLPExporter(otlpConfig{
		endpoint: srv.URL + "/v1/traces", headers: http.Header{}, timeout: timeout,
		backoff: time.Millisecond, maxBackoff: time.Millisecond,
	})
}

func oneSpan(t *testing.T) []sdktrace.ReadOnlySpan {
	return recordSpans(t, resource.Empty(), func(tp trace.TracerProvider) {
		_, s := tp.Tracer("t").Start(context.Background(), "s")
		s.End()
	})
}

func TestOTLPExporterRetriesWhileTheCollectorIsBusy(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	exp := testExporter(srv, time.Minute)
	defer exp.Shutdown(t.Context())

	require.NoError(t, exp.ExportSpans(t.Context(), oneSpan(t)))
	assert.Equal(t, int32(3), calls.Load(), "two refusals, then the export")
}

func TestOTLPExporterReportsARejectedExportWithoutRetrying(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "invalid trace id", http.StatusBadRequest)
	}))
	defer srv.Close()
	exp := testExporter(srv, time.Minute)
	defer exp.Shutdown(t.Context())

	err := exp.ExportSpans(t.Context(), oneSpan(t))
	require.EqualError(t, err, "telemetry: otlp export to "+srv.URL+"/v1/traces: 400 Bad Request: invalid trace id")
	assert.Equal(t, int32(1), calls.Load())
}

func TestOTLPExporterGivesUpAtItsTimeout(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	exp := testExporter(srv, time.Minute)
	defer exp.Shutdown(t.Context())

	err := exp.ExportSpans(t.Context(), oneSpan(t))
	require.EqualError(t, err, "telemetry: otlp export to "+srv.URL+"/v1/traces: 429 Too Many Requests: slow down",
		"a Retry-After beyond the timeout ends the export at once")
	assert.Equal(t, int32(1), calls.Load())
}

func TestOTLPExporterRefusesSpansAfterShutdown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("no request after shutdown")
	}))
	defer srv.Close()
	exp := testExporter(srv, time.Minute)
	require.NoError(t, exp.Shutdown(t.Context()))
	require.ErrorIs(t, exp.ExportSpans(t.Context(), oneSpan(t)), errOTLPStopped)
}

func TestPrintableHidesBinaryBodies(t *testing.T) {
	assert.Equal(t, "(3 bytes of binary body)", printable([]byte{0x08, 0x03, 0x12}))
	assert.Equal(t, strings.Repeat("e", 200)+"…", printable([]byte(strings.Repeat("e", 300))))
}
