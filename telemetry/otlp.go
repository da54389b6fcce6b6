package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP/HTTP trace exporter is ours rather than otlptracehttp's: that
// package links gRPC, grpc-gateway and the protobuf runtime (through the
// generated collector service it shares with the gRPC exporter), about a
// fifth of the coorflow binary's packages, to send one POST of a protobuf
// message. This one encodes the message by hand (otlpwire.go) and reads
// the same OTEL_EXPORTER_OTLP_* variables.

// defaultOTLPEndpoint is the URL the specification names when no endpoint
// is configured.
const defaultOTLPEndpoint = "http://localhost:4318/v1/traces"

// maxOTLPResponse bounds the part of a collector's response that is read.
const maxOTLPResponse = 64 << 10

// otlpConfig is the configuration of the OTLP/HTTP exporter.
type otlpConfig struct {
	endpoint string // the full URL spans are posted to
	headers  http.Header
	timeout  time.Duration // one export, retries included
	gzip     bool
	tls      *tls.Config // nil: the default

	// backoff is the first wait before a retry; it doubles up to
	// maxBackoff.
	backoff, maxBackoff time.Duration
}

// otlpEnv reads OTEL_EXPORTER_OTLP_TRACES_<name>, else
// OTEL_EXPORTER_OTLP_<name>.
func otlpEnv(name string) (key, value string) {
	key = "OTEL_EXPORTER_OTLP_TRACES_" + name
	if v := strings.TrimSpace(os.Getenv(key)); v != "" {
		return key, v
	}
	key = "OTEL_EXPORTER_OTLP_" + name
	return key, strings.TrimSpace(os.Getenv(key))
}

// otlpConfigFromEnv reads the exporter's configuration the way the
// OpenTelemetry specification describes it: the signal-specific
// variable wins over the general one, and OTEL_EXPORTER_OTLP_ENDPOINT is a
// base URL to which "v1/traces" is added.
func otlpConfigFromEnv() (otlpConfig, error) {
	cfg := otlpConfig{
		endpoint:   defaultOTLPEndpoint,
		headers:    http.Header{},
		timeout:    10 * time.Second,
		backoff:    time.Second,
		maxBackoff: 10 * time.Second,
	}
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		cfg.endpoint = v
	} else if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		cfg.endpoint = strings.TrimSuffix(v, "/") + "/v1/traces"
	}
	u, err := url.Parse(cfg.endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, fmt.Errorf("telemetry: otlp endpoint %q: want an http:// or https:// URL", cfg.endpoint)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err := parseOTLPHeaders(cfg.headers, name, os.Getenv(name)); err != nil {
			return cfg, err
		}
	}
	if key, v := otlpEnv("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return cfg, fmt.Errorf("telemetry: %s=%q: want a number of milliseconds", key, v)
		}
		cfg.timeout = time.Duration(ms) * time.Millisecond
	}
	switch key, v := otlpEnv("COMPRESSION"); strings.ToLower(v) {
	case "", "none":
	case "gzip":
		cfg.gzip = true
	default:
		return cfg, fmt.Errorf("%w: %s=%q (use gzip or none)", ErrUnsupportedExporter, key, v)
	}
	cfg.tls, err = otlpTLSFromEnv()
	return cfg, err
}

// parseOTLPHeaders adds the headers of a list "key=value,key2=value2"
// (values percent-encoded) to h, replacing earlier values of a key.
func parseOTLPHeaders(h http.Header, name, list string) error {
	for entry := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		k, v, ok := strings.Cut(entry, "=")
		k = strings.TrimSpace(k)
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if !ok || k == "" || err != nil {
			return fmt.Errorf("telemetry: %s: entry %q: want key=value pairs separated by commas", name, entry)
		}
		h.Set(k, val)
	}
	return nil
}

// otlpTLSFromEnv builds the TLS configuration from the CERTIFICATE (trusted
// CA), CLIENT_CERTIFICATE and CLIENT_KEY variables; nil when none is set.
func otlpTLSFromEnv() (*tls.Config, error) {
	caKey, ca := otlpEnv("CERTIFICATE")
	certKey, cert := otlpEnv("CLIENT_CERTIFICATE")
	keyKey, key := otlpEnv("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s: %w", caKey, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("telemetry: %s: no PEM certificate in %s", caKey, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("telemetry: %s and %s go together", certKey, keyKey)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s/%s: %w", certKey, keyKey, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// otlpExporter is an sdktrace.SpanExporter that posts spans to an OTLP/HTTP
// collector as protobuf.
type otlpExporter struct {
	cfg       otlpConfig
	transport *http.Transport
	client    *http.Client

	mu      sync.Mutex
	stopped bool
}

var _ sdktrace.SpanExporter = (*otlpExporter)(nil)

func newOTLPExporter(cfg otlpConfig) *otlpExporter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.tls != nil {
		tr.TLSClientConfig = cfg.tls
	}
	return &otlpExporter{cfg: cfg, transport: tr, client: &http.Client{Transport: tr}}
}

// errOTLPStopped is returned by ExportSpans after Shutdown.
var errOTLPStopped = errors.New("telemetry: otlp exporter is shut down")

// ExportSpans posts spans as one ExportTraceServiceRequest, retrying
// while the collector answers 429, 502, 503 or 504 or cannot be reached,
// within the export timeout.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	stopped := e.stopped
	e.mu.Unlock()
	if stopped {
		return errOTLPStopped
	}
	if len(spans) == 0 {
		return nil
	}
	body := encodeTraces(spans)
	encoding := ""
	if e.cfg.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body) // writes to a bytes.Buffer do not fail
		_ = zw.Close()
		body, encoding = buf.Bytes(), "gzip"
	}
	if e.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.cfg.timeout)
		defer cancel()
	}
	wait := e.cfg.backoff
	for {
		retryAfter, err := e.post(ctx, body, encoding)
		if err == nil {
			return nil
		}
		var re *retryableError
		if !errors.As(err, &re) {
			return err
		}
		wait = max(wait, retryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err // no time left for another attempt
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (then %w)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, e.cfg.maxBackoff)
	}
}

// retryableError is a failed attempt worth repeating.
type retryableError struct{ err error }

func (r *retryableError) Error() string { return r.err.Error() }
func (r *retryableError) Unwrap() error { return r.err }

// post sends one attempt. A retryable failure is a *retryableError, with
// the wait the collector asked for in Retry-After, if any.
func (e *otlpExporter) post(ctx context.Context, body []byte, encoding string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("telemetry: otlp export: %w", err)
	}
	for k, v := range e.cfg.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("telemetry: otlp export to %s: %w", e.cfg.endpoint, err)
		}
		return 0, &retryableError{fmt.Errorf("telemetry: otlp export to %s: %w", e.cfg.endpoint, err)}
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxOTLPResponse))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, nil
	}
	err = fmt.Errorf("telemetry: otlp export to %s: %s: %s", e.cfg.endpoint, resp.Status, printable(msg))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		var after time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return after, &retryableError{err}
	}
	return 0, err
}

// printable keeps a collector's answer readable in an error: at most 200
// bytes, and a protobuf Status body (binary) is not printed.
func printable(b []byte) string {
	s := strings.TrimSpace(string(b))
	for _, r := range s {
		if (r < ' ' && r != '\n' && r != '\t') || r == 0xFFFD {
			return fmt.Sprintf("(%d bytes of binary body)", len(b))
		}
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Shutdown stops the exporter and closes its idle connections; spans
// exported later are refused.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.transport.CloseIdleConnections()
	return nil
}
