package telemetry_test

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

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
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_TIMEOUT",
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
		"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_KEY", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
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

// collector is an OTLP/HTTP receiver: it decodes each request body with
// the generated OTLP types and keeps it with its headers.
type collector struct {
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	headers  []http.Header
	paths    []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.requests = append(c.requests, &req)
	c.headers = append(c.headers, r.Header.Clone())
	c.paths = append(c.paths, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func TestSetupOTLPExportsToTheConfiguredEndpoint(t *testing.T) {
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			restoreGlobals(t)
			clearEnv(t)
			var c collector
			srv := httptest.NewServer(&c)
			defer srv.Close()
			t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL+"/")
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc,X-Team=graph")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Team=traces")
			t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", compression)
			t.Setenv("OTEL_SERVICE_NAME", "svc-test")

			shutdown, err := telemetry.Setup(t.Context())
			require.NoError(t, err)
			ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{
				"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
			})
			_, span := otel.Tracer(telemetry.TracerName).Start(ctx, "hello")
			span.SetAttributes(attribute.String("node", "coor/planner"))
			span.End()
			require.NoError(t, shutdown(t.Context()), "shutdown flushes the batch")

			c.mu.Lock()
			defer c.mu.Unlock()
			require.Equal(t, []string{"POST /v1/traces"}, c.paths)
			h := c.headers[0]
			assert.Equal(t, "application/x-protobuf", h.Get("Content-Type"))
			assert.Equal(t, "Bearer abc", h.Get("Authorization"))
			assert.Equal(t, "traces", h.Get("X-Team"), "the traces variable wins")
			if compression == "gzip" {
				assert.Equal(t, "gzip", h.Get("Content-Encoding"))
			}
			rs := c.requests[0].GetResourceSpans()
			require.Len(t, rs, 1)
			assert.Contains(t, rs[0].GetResource().GetAttributes(),
				&commonpb.KeyValue{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "svc-test"}}})
			require.Len(t, rs[0].GetScopeSpans(), 1)
			assert.Equal(t, telemetry.TracerName, rs[0].GetScopeSpans()[0].GetScope().GetName())
			spans := rs[0].GetScopeSpans()[0].GetSpans()
			require.Len(t, spans, 1)
			assert.Equal(t, "hello", spans[0].GetName())
			assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", hex.EncodeToString(spans[0].GetTraceId()))
			assert.Equal(t, "b7ad6b7169203331", hex.EncodeToString(spans[0].GetParentSpanId()))
			assert.Equal(t, []*commonpb.KeyValue{{Key: "node", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "coor/planner"}}}},
				spans[0].GetAttributes())
		})
	}
}

func TestSetupRejectsMalformedOTLPSettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		msg  string
	}{
		{"EndpointWithoutScheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
			`telemetry: otlp endpoint "collector:4318/v1/traces": want an http:// or https:// URL`},
		{"Headers", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_HEADERS": "a=1,oops"},
			`telemetry: OTEL_EXPORTER_OTLP_HEADERS: entry "oops": want key=value pairs separated by commas`},
		{"Timeout", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10s"},
			`telemetry: OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="10s": want a number of milliseconds`},
		{"Compression", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
			`telemetry: unsupported exporter: OTEL_EXPORTER_OTLP_COMPRESSION="zstd" (use gzip or none)`},
		{"ClientCertWithoutKey", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/nonexistent.pem"},
			`telemetry: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together`},
		{"MissingCA", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
			`telemetry: OTEL_EXPORTER_OTLP_CERTIFICATE: open /nonexistent/ca.pem: no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restoreGlobals(t)
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			before := otel.GetTracerProvider()
			_, err := telemetry.Setup(t.Context())
			require.EqualError(t, err, tt.msg)
			assert.Equal(t, before, otel.GetTracerProvider(), "nothing is installed")
		})
	}
}

func TestSetupOTLPTrustsTheConfiguredCertificateAndPresentsTheClientOne(t *testing.T) {
	restoreGlobals(t)
	clearEnv(t)
	var c collector
	srv := httptest.NewUnstartedServer(&c)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	defer srv.Close()
	// The client presents the server's own certificate and key: the
	// server only asks for one.
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	key, err := x509.MarshalPKCS8PrivateKey(srv.TLS.Certificates[0].PrivateKey)
	require.NoError(t, err)
	keyFile := filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600))
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/custom/path")
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", ca)
	t.Setenv("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", ca)
	t.Setenv("OTEL_EXPORTER_OTLP_CLIENT_KEY", keyFile)

	shutdown, err := telemetry.Setup(t.Context())
	require.NoError(t, err)
	_, span := otel.Tracer(telemetry.TracerName).Start(t.Context(), "over-tls")
	span.End()
	require.NoError(t, shutdown(t.Context()))

	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Equal(t, []string{"POST /custom/path"}, c.paths, "the traces endpoint is used as given")
}
