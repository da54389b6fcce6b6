package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeListener hands out the server ends of in-memory connections.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn, 16), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.UnixAddr{Name: "pipe", Net: "unix"} }

// dial returns the client end of a new connection.
func (l *pipeListener) dial() net.Conn {
	client, srv := net.Pipe()
	l.conns <- srv
	return client
}

func TestConnectionsBeyondMaxConnsWaitForOneToClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}), Limits{MaxConns: 2})
		ln := newPipeListener()
		served := make(chan error, 1)
		go func() { served <- hs.Serve(ln) }()

		// Three clients send a request each and keep their connection.
		var answered [3]atomic.Bool
		clients := make([]net.Conn, 3)
		var wg sync.WaitGroup
		for i := range clients {
			c := ln.dial()
			clients[i] = c
			wg.Go(func() {
				if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: coorflow\r\n\r\n"); err != nil {
					return
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err == nil && resp.StatusCode == http.StatusNoContent {
					answered[i].Store(true)
				}
			})
		}
		synctest.Wait()
		count := func() int {
			n := 0
			for i := range answered {
				if answered[i].Load() {
					n++
				}
			}
			return n
		}
		require.Equal(t, 2, count(), "two connections are served, the third waits")
		waiting := 0
		for i := range answered {
			if !answered[i].Load() {
				waiting = i
			}
		}

		// One of the served clients leaves: the waiting one is served.
		require.NoError(t, clients[(waiting+1)%3].Close())
		synctest.Wait()
		assert.Equal(t, 3, count())
		assert.True(t, answered[waiting].Load())

		require.NoError(t, hs.Close())
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
		for _, c := range clients {
			_ = c.Close()
		}
		wg.Wait()
	})
}

func TestCapListenerCloseWakesAWaitingAccept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newPipeListener()
		ln := limitListener(inner, 1)
		client := inner.dial()
		defer client.Close()
		c, err := ln.Accept()
		require.NoError(t, err)
		accepted := make(chan error, 1)
		go func() {
			_, err := ln.Accept() // waits for the slot c holds
			accepted <- err
		}()
		synctest.Wait()
		require.Empty(t, accepted, "no slot is free")
		require.NoError(t, ln.Close())
		assert.ErrorIs(t, <-accepted, net.ErrClosed)
		require.NoError(t, c.Close())
		require.NoError(t, c.Close(), "a second close frees no second slot")
		assert.Len(t, ln.(*capListener).slots, 0)
	})
}
