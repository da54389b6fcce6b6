// Package mcptest runs the MCP implementations coorflow is tested against,
// which we did not write: the reference test server
// (@modelcontextprotocol/server-everything) and the TypeScript SDK
// (@modelcontextprotocol/sdk), at the versions pinned in npm/package.json
// and installed by `npm ci` in npm/ (.ci/run does it).
//
// A test that needs them skips, saying why, only when node or the
// installed packages are absent; under CI=true that is a failure.
package mcptest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NodeModulesEnv names a node_modules directory to use instead of
// npm/node_modules (CI keeps one per lockfile hash).
const NodeModulesEnv = "COORFLOW_MCP_NODE_MODULES"

// startTimeout bounds how long a server has to say it listens.
const startTimeout = 60 * time.Second

// unavailable skips t, or fails it when CI=true: in CI the packages must
// be there.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("mcptest: %s (CI=true: the MCP test packages must be installed; see .ci/run)", msg)
	}
	t.Skipf("mcptest: %s", msg)
}

// Node returns the path of node, or skips t.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "node is not installed: %v", err)
	}
	return p
}

// Dir returns the directory of the npm project (package.json and the
// lockfile).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "npm")
}

// NodeModules returns the node_modules directory holding the pinned
// packages, or skips t.
func NodeModules(t testing.TB) string {
	t.Helper()
	nm := os.Getenv(NodeModulesEnv)
	if nm == "" {
		nm = filepath.Join(Dir(), "node_modules")
	}
	for _, pkg := range []string{"@modelcontextprotocol/server-everything", "@modelcontextprotocol/sdk"} {
		if _, err := os.Stat(filepath.Join(nm, pkg, "package.json")); err != nil {
			unavailable(t, "%s is not installed in %s: run `npm ci` in %s", pkg, nm, Dir())
		}
	}
	return nm
}

// Everything returns the command line that starts the reference server
// over stdio: node and its arguments.
func Everything(t testing.TB) (node string, args []string) {
	t.Helper()
	node = Node(t)
	script := filepath.Join(NodeModules(t), "@modelcontextprotocol", "server-everything", "dist", "index.js")
	return node, []string{script, "stdio"}
}

// HTTPServer is the reference server over streamable HTTP, on a port of
// its own. It is stopped when the test ends.
type HTTPServer struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// StartEverythingHTTP starts the reference server's streamable HTTP
// transport and waits until it listens.
func StartEverythingHTTP(t testing.TB) *HTTPServer {
	t.Helper()
	s := &HTTPServer{t: t, port: freePort(t)}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// URL is the server's MCP endpoint.
func (s *HTTPServer) URL() string { return fmt.Sprintf("http://127.0.0.1:%d/mcp", s.port) }

// Start starts the server (again, after Kill) on its port and waits until
// it listens.
func (s *HTTPServer) Start() {
	t := s.t
	t.Helper()
	node, args := Everything(t)
	cmd := exec.Command(node, args[0], "streamableHttp")
	cmd.Env = []string{"PORT=" + strconv.Itoa(s.port), "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("mcptest: start server-everything: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var said []string
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "listening on port") {
				ready <- nil
				_, _ = io.Copy(io.Discard, stderr)
				break
			}
			said = append(said, line)
		}
		_ = cmd.Wait()
		ready <- fmt.Errorf("server-everything exited before listening: %s", strings.Join(said, "\n"))
		close(s.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("mcptest: %v", err)
		}
	case <-ctx.Done():
		s.Kill()
		t.Fatalf("mcptest: server-everything did not listen within %s", startTimeout)
	}
}

// Kill kills the server and waits until it has exited.
func (s *HTTPServer) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// freePort returns a TCP port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
