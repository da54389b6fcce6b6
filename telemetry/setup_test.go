package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/coorflow/coorflow/telemetry"
)

// restoreGlobals puts back the global provider and propagator Setup
// replaces.
func restoreGlobals(t *testing.T) {
	tp, prop := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() {
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(prop)
	})
}

func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
}

func TestExporterFollowsTheEnvironment(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"NothingSet", nil, "none"},
		{"EndpointOnly", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "otlp"},
		{"TracesEndpointOnly", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, "otlp"},
		{"Console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "console"},
		{"UpperCaseList", map[string]string{"OTEL_TRACES_EXPORTER": "OTLP, console"}, "otlp"},
		{"ExplicitNoneBeatsEndpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, "none"},
		{"SDKDisabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			assert.Equal(t, tt.want, telemetry.Exporter())
		})
	}
}

func TestSetupRejectsUnsupportedExporters(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		msg  string
	}{
		{"UnknownExporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, `OTEL_TRACES_EXPORTER="zipkin" (use otlp, console or none)`},
		{"GRPCProtocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, `OTLP protocol "grpc"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restoreGlobals(t)
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := telemetry.Setup(t.Context())
			require.ErrorIs(t, err, telemetry.ErrUnsupportedExporter)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestSetupNoneInstallsOnlyThePropagator(t *testing.T) {
	restoreGlobals(t)
	clearEnv(t)
	before := otel.GetTracerProvider()
	shutdown, err := telemetry.Setup(t.Context())
	require.NoError(t, err)
	require.NoError(t, shutdown(t.Context()))
	assert.Equal(t, before, otel.GetTracerProvider())
	assert.ElementsMatch(t, []string{"traceparent", "tracestate", "baggage"}, otel.GetTextMapPropagator().Fields())
}

func TestSetupConsoleInstallsAnSDKProvider(t *testing.T) {
	restoreGlobals(t)
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	shutdown, err := telemetry.Setup(t.Context())
	require.NoError(t, err)
	_, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider)
	assert.True(t, ok, "the global provider is the SDK's")
	require.NoError(t, shutdown(t.Context()))
}

func TestSetupOTLPExportsToTheConfiguredEndpoint(t *testing.T) {
	restoreGlobals(t)
	clearEnv(t)
	var mu sync.Mutex
	var got []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		assert.NotEmpty(t, body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "svc-test")

	shutdown, err := telemetry.Setup(t.Context())
	require.NoError(t, err)
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{})
	_, span := otel.Tracer(telemetry.TracerName).Start(ctx, "hello")
	span.End()
	require.NoError(t, shutdown(t.Context()), "shutdown flushes the batch")

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"POST /v1/traces application/x-protobuf"}, got)
}
