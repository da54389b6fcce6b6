package server

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of the Limits fields left zero.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultHTTPWriteTimeout  = 60 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConns          = 1024
)

// Limits bound what a client's connections can hold of an HTTPServer. A
// zero field takes its default; a negative one means no limit.
type Limits struct {
	// ReadHeaderTimeout bounds the reading of a request's headers
	// (default 10s), ReadTimeout the reading of the whole request, body
	// included (default 30s).
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// WriteTimeout bounds the writing of an answer (default 60s). Event
	// streams and runs/wait lift it and bound each write instead
	// (Config.WriteTimeout).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no request
	// for this long (default 60s).
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's headers (default 64 KiB).
	MaxHeaderBytes int
	// MaxConns caps the open connections (default 1024); those beyond
	// wait in the listen queue until one closes.
	MaxConns int
}

func (l Limits) withDefaults() Limits {
	l.ReadHeaderTimeout = orDefault(l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	l.ReadTimeout = orDefault(l.ReadTimeout, DefaultReadTimeout)
	l.WriteTimeout = orDefault(l.WriteTimeout, DefaultHTTPWriteTimeout)
	l.IdleTimeout = orDefault(l.IdleTimeout, DefaultIdleTimeout)
	l.MaxHeaderBytes = orDefault(l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	l.MaxConns = orDefault(l.MaxConns, DefaultMaxConns)
	return l
}

// HTTPServer serves a handler (a Server) over HTTP within Limits, so that
// slow or idle clients cannot hold connections open. Create it with
// NewHTTPServer.
type HTTPServer struct {
	hs       *http.Server
	maxConns int
}

// NewHTTPServer returns an HTTPServer serving h within limits.
//
//	hs := server.NewHTTPServer(srv, server.Limits{})
//	go hs.Serve(ln)
//	...
//	hs.Shutdown(ctx)  // stop taking requests
//	srv.Shutdown(ctx) // then stop the runs
func NewHTTPServer(h http.Handler, limits Limits) *HTTPServer {
	l := limits.withDefaults()
	return &HTTPServer{
		hs: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: l.ReadHeaderTimeout,
			ReadTimeout:       l.ReadTimeout,
			WriteTimeout:      l.WriteTimeout,
			IdleTimeout:       l.IdleTimeout,
			MaxHeaderBytes:    l.MaxHeaderBytes,
		},
		maxConns: l.MaxConns,
	}
}

// Serve accepts connections on ln, at most Limits.MaxConns open at a time,
// until Shutdown or Close; it then returns http.ErrServerClosed.
func (s *HTTPServer) Serve(ln net.Listener) error {
	if s.maxConns > 0 {
		ln = limitListener(ln, s.maxConns)
	}
	return s.hs.Serve(ln)
}

// Shutdown stops taking connections and waits for the requests in
// progress to end, or for ctx (see http.Server.Shutdown).
func (s *HTTPServer) Shutdown(ctx context.Context) error { return s.hs.Shutdown(ctx) }

// Close closes the listener and every connection at once.
func (s *HTTPServer) Close() error { return s.hs.Close() }

// limitListener accepts at most n connections open at a time: Accept
// waits while n are open.
func limitListener(ln net.Listener, n int) net.Listener {
	return &capListener{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

type capListener struct {
	net.Listener
	slots     chan struct{} // one value per open connection
	closed    chan struct{}
	closeOnce sync.Once
}

// Accept waits for a free slot, then for a connection.
func (l *capListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &capConn{Conn: c, free: func() { <-l.slots }}, nil
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (l *capListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// capConn frees its slot when closed, once.
type capConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
