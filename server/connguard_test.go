package server_test

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
	"github.com/coorflow/coorflow/server"
)

// serveOnLoopback serves a Server on 127.0.0.1 within limits and returns
// its address.
func serveOnLoopback(t *testing.T, limits server.Limits) string {
	t.Helper()
	srv, err := server.New(server.Config{Workflows: workflows(echoGraph(t)), Saver: memory.New(), Tokens: tokens,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := server.NewHTTPServer(srv, limits)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, hs.Close())
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
		require.NoError(t, srv.Shutdown(context.Background()))
	})
	return ln.Addr().String()
}

// holdAnonymous opens a connection, asks /healthz without a token and
// keeps the connection; it returns the connection, or nil when the server
// closed it first.
func holdAnonymous(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: coorflow\r\n\r\n"); err != nil {
		return nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c
}

// TestClientsWithoutATokenCannotStarveThoseWithOne: a client without a
// token holds every connection MaxConns allows, kept alive; a request
// with a token is still answered at once (issue 26, finding 10: it waited
// 59.4 s behind 1,024 anonymous connections).
func TestClientsWithoutATokenCannotStarveThoseWithOne(t *testing.T) {
	const maxConns = 16
	addr := serveOnLoopback(t, server.Limits{MaxConns: maxConns, IdleTimeout: 10 * time.Minute, ReadHeaderTimeout: 10 * time.Minute})
	for range maxConns {
		holdAnonymous(t, addr)
	}
	// Half of them again, sending nothing at all.
	for range maxConns / 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
	}

	// Far more than the request needs; the anonymous connections would
	// hold it for the 10 minutes of their idle timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/v1/workflows", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+alice)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	require.NoError(t, err, "the request with a token was not answered")
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
