package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ErrUnsupportedExporter is returned by Setup for an OTEL_TRACES_EXPORTER
// or OTEL_EXPORTER_OTLP_PROTOCOL value it does not support.
var ErrUnsupportedExporter = errors.New("telemetry: unsupported exporter")

// Setup installs a global tracer provider and the W3C propagators
// (traceparent, baggage) configured by the standard OTEL_* environment
// variables, and returns the function that flushes and stops it.
//
// OTEL_TRACES_EXPORTER selects the exporter: "otlp" (OTLP over HTTP with
// protobuf, configured by OTEL_EXPORTER_OTLP_ENDPOINT and the
// OTEL_EXPORTER_OTLP_[TRACES_]{ENDPOINT,HEADERS,TIMEOUT,COMPRESSION,
// CERTIFICATE,CLIENT_CERTIFICATE,CLIENT_KEY} variables; a malformed value
// is an error),
// "console" (JSON lines on standard output) or "none". When it is unset,
// the exporter is "otlp" if an OTLP endpoint is set and "none" otherwise,
// so a developer's run never fails to reach a collector it did not ask
// for. OTEL_SDK_DISABLED=true means "none". OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name the service (default "coorflow"), and the
// SDK reads OTEL_TRACES_SAMPLER and OTEL_BSP_*.
//
// With "none" no provider is installed (spans are not recorded) but the
// propagators are, so trace context still flows through.
func Setup(ctx context.Context) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	noop := func(context.Context) error { return nil }
	exp, err := exporterFromEnv()
	if err != nil || exp == nil {
		return noop, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "coorflow")),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil && res == nil {
		_ = exp.Shutdown(ctx)
		return noop, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// Exporter names the exporter the environment selects: "otlp", "console"
// or "none" (see Setup).
func Exporter() string {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return "none"
	}
	name := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	if i := strings.IndexByte(name, ','); i >= 0 {
		name = strings.TrimSpace(name[:i]) // the first of a list
	}
	if name != "" {
		return name
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		return "otlp"
	}
	return "none"
}

func exporterFromEnv() (sdktrace.SpanExporter, error) {
	switch name := Exporter(); name {
	case "none":
		return nil, nil
	case "console":
		exp, err := stdouttrace.New()
		if err != nil {
			return nil, fmt.Errorf("telemetry: console exporter: %w", err)
		}
		return exp, nil
	case "otlp":
		proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		if proto == "" {
			proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		}
		if proto != "" && proto != "http/protobuf" {
			return nil, fmt.Errorf("%w: OTLP protocol %q (coorflow speaks http/protobuf)", ErrUnsupportedExporter, proto)
		}
		cfg, err := otlpConfigFromEnv()
		if err != nil {
			return nil, err
		}
		return newOTLPExporter(cfg), nil
	default:
		return nil, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q (use otlp, console or none)", ErrUnsupportedExporter, name)
	}
}
