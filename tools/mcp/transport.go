package mcp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopGrace is how long a stdio server has to exit after its stdin closes,
// and again after SIGTERM, before it is killed.
const stopGrace = 2 * time.Second

// stderrTail is how much of a stdio server's stderr is kept for messages.
const stderrTail = 4 << 10

// link is the transport side of one session: what started it and how to
// tell that it ended.
type link struct {
	transport sdk.Transport
	// exited is closed when a stdio server's process has exited.
	exited chan struct{}
	cmd    *exec.Cmd
	stderr *tailBuffer
	// stale is set when an HTTP server refused the session's id (400 or
	// 404): it restarted, or dropped the session.
	stale atomic.Bool
	wg    sync.WaitGroup
}

// stdioLink starts the server's command with only the environment the
// Server allows, in a process group of its own.
func stdioLink(s *Server, getenv func(string) string, note func(string)) (*link, error) {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = serverEnv(s, getenv)
	setProcessGroup(cmd)
	l := &link{cmd: cmd, stderr: &tailBuffer{max: stderrTail}, exited: make(chan struct{})}
	cmd.Stderr = l.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Command, err)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		_ = cmd.Wait()
		close(l.exited)
	}()
	l.transport = &sdk.IOTransport{Reader: &progressTap{r: stdout, note: note}, Writer: stdin, MaxLineLength: maxMessageBytes}
	return l, nil
}

// serverEnv is a stdio server's environment: the inherited names that are
// set, then the Server's own values.
func serverEnv(s *Server, getenv func(string) string) []string {
	vals := map[string]string{}
	for _, name := range append(append([]string{}, DefaultInheritEnv...), s.InheritEnv...) {
		if v := getenv(name); v != "" {
			vals[name] = v
		}
	}
	for k, v := range s.Env {
		vals[k] = v
	}
	env := make([]string, 0, len(vals))
	for _, k := range mapKeys(vals) {
		env = append(env, k+"="+vals[k])
	}
	return env
}

// httpLink connects to a streamable HTTP server with the Server's headers.
func httpLink(s *Server, note func(string)) *link {
	l := &link{}
	rt := &headerTransport{base: http.DefaultTransport, headers: s.Headers, bearer: s.Bearer, stale: &l.stale, note: note}
	l.transport = &sdk.StreamableClientTransport{
		Endpoint:     s.URL,
		HTTPClient:   &http.Client{Transport: rt},
		MaxRetries:   2,
		MaxEventSize: maxMessageBytes,
	}
	return l
}

// ended reports whether a stdio server's process has exited.
func (l *link) ended() bool {
	if l.exited == nil {
		return false
	}
	select {
	case <-l.exited:
		return true
	default:
		return false
	}
}

// stop ends a stdio server that outlived its session: the session's close
// has closed its stdin; it gets stopGrace to exit, then SIGTERM, then
// SIGKILL, its process group with it.
func (l *link) stop() {
	if l.cmd == nil {
		return
	}
	for _, sig := range []func(){func() {}, func() { signalProcessGroup(l.cmd, false) }} {
		sig()
		t := time.NewTimer(stopGrace)
		select {
		case <-l.exited:
			t.Stop()
			signalProcessGroup(l.cmd, true) // what it started, if anything is left
			l.wg.Wait()
			return
		case <-t.C:
		}
	}
	signalProcessGroup(l.cmd, true)
	l.wg.Wait()
}

// awaitExit waits a little for a stdio server whose output ended to exit,
// so that why can say how it ended.
func (l *link) awaitExit() {
	if l.exited == nil {
		return
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-l.exited:
	case <-t.C:
	}
}

// why describes how a stdio server ended, with the end of its stderr.
func (l *link) why() string {
	if l.cmd == nil || !l.ended() {
		return ""
	}
	msg := "the server exited"
	if st := l.cmd.ProcessState; st != nil {
		msg = "the server exited (" + st.String() + ")"
	}
	if tail := strings.TrimSpace(l.stderr.String()); tail != "" {
		msg += "; its stderr ends with: " + tail
	}
	return msg
}

// headerTransport adds the server's headers to every request, notices when
// the server refuses the session's id, and caps JSON bodies.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	bearer  string
	stale   *atomic.Bool
	note    func(string)
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if t.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+t.bearer)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	// A server that restarted does not know the session: the spec says
	// 404, and some servers say 400. Either way the request did not run.
	// (Only messages count: a server may refuse the optional GET stream.)
	if req.Method == http.MethodPost && req.Header.Get("Mcp-Session-Id") != "" && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest) {
		t.stale.Store(true)
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/json"):
		resp.Body = &cappedBody{r: io.LimitReader(resp.Body, maxMessageBytes+1), c: resp.Body}
	case strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = &progressTap{r: resp.Body, note: t.note, sse: true}
	}
	return resp, nil
}

// cappedBody fails a body longer than maxMessageBytes.
type cappedBody struct {
	r io.Reader
	c io.Closer
	n int64
}

var errBodyTooLarge = errors.New("mcp: the server's response is larger than 8 MiB")

func (b *cappedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > maxMessageBytes {
		return n, errBodyTooLarge
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.c.Close() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "\uFFFD")
}

// connect opens the transport of s.
func connectLink(s *Server, getenv func(string) string, note func(string)) (*link, error) {
	if s.URL != "" {
		return httpLink(s, note), nil
	}
	return stdioLink(s, getenv, note)
}
