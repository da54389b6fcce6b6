package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// guarded serves a Server with one token on 127.0.0.1 within limits, and
// returns its address and its listener.
func guarded(t *testing.T, limits Limits) (string, *capListener) {
	t.Helper()
	srv, err := New(Config{Workflows: map[string]*graph.Runnable{}, Saver: memory.New(), Tokens: map[string]string{"tok": "alice"},
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := NewHTTPServer(srv, limits)
	g := hs.guard(ln)
	served := make(chan error, 1)
	go func() { served <- hs.hs.Serve(g) }()
	t.Cleanup(func() {
		require.NoError(t, hs.Close())
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
		require.NoError(t, srv.Shutdown(context.Background()))
	})
	return ln.Addr().String(), g
}

// conn is a client connection that sends requests one after another.
type conn struct {
	net.Conn
	r *bufio.Reader
}

func dialConn(t *testing.T, addr string) *conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	// A bound in case the server never answers nor closes: far beyond
	// what any step here takes.
	require.NoError(t, c.SetDeadline(time.Now().Add(time.Minute)))
	return &conn{Conn: c, r: bufio.NewReader(c)}
}

// get sends GET path, with the token when tok, and returns the status,
// or an error when the server closed the connection.
func (c *conn) get(path string, tok bool) (int, error) {
	req := "GET " + path + " HTTP/1.1\r\nHost: coorflow\r\n"
	if tok {
		req += "Authorization: Bearer tok\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestAnIPBeyondItsShareLosesItsOldestAnonymousConnection: one address
// holds MaxConnsPerIP connections at most: one more closes its oldest
// anonymous connection, or is closed when all carry a token.
func TestAnIPBeyondItsShareLosesItsOldestAnonymousConnection(t *testing.T) {
	addr, g := guarded(t, Limits{MaxConns: 16, MaxAnonConns: 8, MaxConnsPerIP: 3, IdleTimeout: time.Hour, AnonTimeout: time.Hour})
	authed := []*conn{dialConn(t, addr), dialConn(t, addr)}
	for _, c := range authed {
		st, err := c.get("/v1/workflows", true)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, st)
	}
	anon := dialConn(t, addr)
	st, err := anon.get("/healthz", false)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, st)

	// A fourth: the anonymous one is closed, the new one served.
	fourth := dialConn(t, addr)
	st, err = fourth.get("/v1/workflows", true)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, st)
	_, err = anon.get("/healthz", false)
	assert.Error(t, err, "the oldest anonymous connection of the address was closed")

	// A fifth, when all three carry a token: it is closed at once.
	fifth := dialConn(t, addr)
	_, err = fifth.get("/v1/workflows", true)
	assert.Error(t, err, "the address has no room left")
	authed = append(authed, fourth)
	for _, c := range authed {
		st, err := c.get("/v1/workflows", true)
		require.NoError(t, err, "the connections with a token stay")
		assert.Equal(t, http.StatusOK, st)
	}

	// One leaves: there is room again.
	require.NoError(t, authed[0].Close())
	g.waitFor(func() bool { return g.byIP["127.0.0.1"] == 2 })
	st, err = dialConn(t, addr).get("/healthz", false)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, st)
}

// TestAnonymousConnectionsGetTheShortTimeout: an anonymous connection is
// closed after AnonTimeout idle; one that carried a token keeps the idle
// timeout, though it went idle first.
// TestAnonymousConnectionsGetTheShortTimeout gives the anonymous timeout
// 2 s: the requests that open each connection must arrive within it, which
// a loaded machine does not promise in 200 ms.
func TestAnonymousConnectionsGetTheShortTimeout(t *testing.T) {
	addr, g := guarded(t, Limits{IdleTimeout: time.Hour, AnonTimeout: 2 * time.Second})
	authed := dialConn(t, addr)
	st, err := authed.get("/v1/workflows", true)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, st)
	anon := dialConn(t, addr)
	st, err = anon.get("/healthz", false)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, st)

	_, err = anon.r.ReadByte() // waits for the server to close it
	assert.ErrorIs(t, err, io.EOF, "the anonymous connection was closed, not timed out by the client")
	g.waitFor(func() bool { return g.anon.Len() == 0 })
	st, err = authed.get("/v1/workflows", true)
	require.NoError(t, err, "the connection with a token outlived the anonymous timeout")
	assert.Equal(t, http.StatusOK, st)

	// Silence before any request is anonymous too.
	silent := dialConn(t, addr)
	_, err = silent.r.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
}
