// Package temporaltest starts the real Temporal server (the CLI's dev
// server, SQLite inside) for tests: COORFLOW_TEMPORAL_CLI, or the binary
// .ci/run builds into ~/.cache/coorflow/temporal-cli/<version>/temporal
// ($XDG_CACHE_HOME for ~/.cache).
// A test skips only when the binary is absent, and fails then with CI=true.
//
// The dev server's defaults cost about 100 ms per activity; Args turns
// that down with dynamic config (see DynamicConfig).
package temporaltest

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/coorflow/coorflow/temporalrun"
)

// CLIVersion is the version of the Temporal CLI the tests run.
const CLIVersion = "v1.5.1"

// DynamicConfig is the server configuration the tests use, and why:
//
//   - history.transferProcessorMaxPollRPS (default 20): the dev server has
//     one history shard, and its transfer queue — which hands new workflow
//     and activity tasks to matching — reads at most 20 times a second, so
//     each step waited up to 50 ms for the next read.
//   - history.timerProcessorMaxPollRPS (default 20): the same for timers:
//     heartbeat and schedule-to-start timeouts fire when they are due, so
//     a dead worker's step moves on at once.
//   - matching.numTaskqueueReadPartitions, …WritePartitions = 1 (default
//     4): with one worker polling, a task written to another partition
//     than the one being polled waits to be forwarded.
//   - system.enableActivityEagerExecution (default false): a step
//     scheduled on the workflow's own queue comes back to its worker with
//     the workflow task's completion, without a trip through matching.
var DynamicConfig = []string{
	"history.transferProcessorMaxPollRPS=10000",
	"history.timerProcessorMaxPollRPS=10000",
	"matching.numTaskqueueReadPartitions=1",
	"matching.numTaskqueueWritePartitions=1",
	"system.enableActivityEagerExecution=true",
}

// CLIPath returns where the Temporal CLI binary is expected.
func CLIPath() string {
	if p := os.Getenv("COORFLOW_TEMPORAL_CLI"); p != "" {
		return p
	}
	dir, err := os.UserCacheDir() // $XDG_CACHE_HOME or ~/.cache
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "coorflow", "temporal-cli", CLIVersion, "temporal")
}

// Options configure a server.
type Options struct {
	// DBFile keeps the server's state in a file, so a restarted server
	// (same HostPort) finds its workflows; empty keeps it in memory.
	DBFile string
	// HostPort binds the server; empty takes a free loopback port.
	HostPort string
	// Log receives the server's output (default: discarded).
	Log io.Writer
}

// Server is a running dev server.
type Server struct {
	HostPort string
	dev      *testsuite.DevServer
}

// Start starts a dev server for t, stopped when t ends. It skips t when
// the CLI binary is absent (fails with CI=true).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	path := CLIPath()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("temporal: the Temporal CLI is not at %s (set COORFLOW_TEMPORAL_CLI; .ci/run builds it): %v", path, err)
		}
		t.Skipf("temporal: the Temporal CLI is not at %s (set COORFLOW_TEMPORAL_CLI; .ci/run builds it)", path)
	}
	if opts.HostPort == "" {
		opts.HostPort = FreeHostPort(t)
	}
	s := &Server{HostPort: opts.HostPort}
	s.start(t, opts)
	t.Cleanup(func() { s.Stop(t) })
	return s
}

func (s *Server) start(t testing.TB, opts Options) {
	t.Helper()
	t.Setenv("TEMPORAL_VERSION_CHECK_DISABLED", "1")
	args := []string{}
	for _, kv := range DynamicConfig {
		args = append(args, "--dynamic-config-value", kv)
	}
	out := opts.Log
	if out == nil {
		out = io.Discard
	}
	// A bound on a server that never comes up, not on a slow one: on a
	// loaded 2-core machine the dev server took over a minute once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dev, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  CLIPath(),
		ClientOptions: &client.Options{HostPort: opts.HostPort, Namespace: "default", Logger: quiet()},
		DBFilename:    opts.DBFile,
		LogLevel:      "error",
		ExtraArgs:     args,
		Stdout:        out,
		Stderr:        out,
	})
	if err != nil {
		t.Fatalf("temporal: start the dev server: %v", err)
	}
	s.dev = dev
}

// Stop stops the server (again is a no-op).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if s.dev == nil {
		return
	}
	if err := s.dev.Stop(); err != nil {
		t.Logf("temporal: stop the dev server: %v", err)
	}
	s.dev = nil
}

// Restart stops the server and starts it again on the same address with
// opts (DBFile set keeps its workflows).
func (s *Server) Restart(t testing.TB, opts Options) {
	t.Helper()
	s.Stop(t)
	opts.HostPort = s.HostPort
	s.start(t, opts)
}

// Client returns a client of the server, closed when t ends.
func (s *Server) Client(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: s.HostPort, Namespace: "default", Logger: quiet()})
	if err != nil {
		t.Fatalf("temporal: dial %s: %v", s.HostPort, err)
	}
	t.Cleanup(c.Close)
	return c
}

// FreeHostPort returns a loopback address no one listens on.
func FreeHostPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("temporal: find a free port: %v", err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// quiet is a logger that keeps the SDK's warnings out of test output
// unless COORFLOW_TEMPORAL_LOG is set.
func quiet() log.Logger {
	if os.Getenv("COORFLOW_TEMPORAL_LOG") != "" {
		return nil
	}
	return temporalrun.Logger(os.Stderr)
}
