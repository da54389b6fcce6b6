package server

import (
	"context"
	"net"
	"net/http"
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
	DefaultAnonTimeout       = 5 * time.Second
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
	// MaxAnonConns caps the anonymous connections when the handler is a
	// Server (default a quarter of MaxConns, at least 1): a connection is
	// anonymous until one of its requests carries a token of
	// Config.Tokens. One more closes the oldest anonymous connection, and
	// so does a new connection while MaxConns are open: clients without a
	// token cannot keep those with one waiting.
	MaxAnonConns int
	// MaxConnsPerIP caps the connections of one remote IP address
	// (default half of MaxConns, at least 1). One more closes the
	// address's oldest anonymous connection, or, when it has none, is
	// closed at once.
	MaxConnsPerIP int
	// AnonTimeout bounds every read of an anonymous connection, while it
	// waits for a request or reads one (default 5s); a token lifts it to
	// the timeouts above.
	AnonTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	l.ReadHeaderTimeout = orDefault(l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	l.ReadTimeout = orDefault(l.ReadTimeout, DefaultReadTimeout)
	l.WriteTimeout = orDefault(l.WriteTimeout, DefaultHTTPWriteTimeout)
	l.IdleTimeout = orDefault(l.IdleTimeout, DefaultIdleTimeout)
	l.MaxHeaderBytes = orDefault(l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	l.MaxConns = orDefault(l.MaxConns, DefaultMaxConns)
	share := func(v, div int) int {
		if v != 0 {
			return v
		}
		if l.MaxConns < 0 {
			return -1
		}
		return max(l.MaxConns/div, 1)
	}
	l.MaxAnonConns = share(l.MaxAnonConns, 4)
	l.MaxConnsPerIP = share(l.MaxConnsPerIP, 2)
	l.AnonTimeout = orDefault(l.AnonTimeout, DefaultAnonTimeout)
	return l
}

// HTTPServer serves a handler (a Server) over HTTP within Limits, so that
// slow or idle clients cannot hold connections open. Create it with
// NewHTTPServer.
type HTTPServer struct {
	hs     *http.Server
	limits Limits
	// shares: the handler tells authenticated connections (a Server), so
	// anonymous ones get MaxAnonConns and AnonTimeout.
	shares bool
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
	_, shares := h.(*Server)
	return &HTTPServer{
		hs: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: l.ReadHeaderTimeout,
			ReadTimeout:       l.ReadTimeout,
			WriteTimeout:      l.WriteTimeout,
			IdleTimeout:       l.IdleTimeout,
			MaxHeaderBytes:    l.MaxHeaderBytes,
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				if gc, ok := c.(*capConn); ok {
					return context.WithValue(ctx, connKey{}, gc)
				}
				return ctx
			},
		},
		limits: l,
		shares: shares,
	}
}

// Serve accepts connections on ln within Limits, until Shutdown or
// Close; it then returns http.ErrServerClosed.
func (s *HTTPServer) Serve(ln net.Listener) error {
	return s.hs.Serve(s.guard(ln))
}

// guard wraps ln in the capListener of s's limits.
func (s *HTTPServer) guard(ln net.Listener) *capListener {
	g := limitListener(ln, s.limits.MaxConns).(*capListener)
	g.perIP = s.limits.MaxConnsPerIP
	if s.shares {
		g.maxAnon, g.anonTimeout = s.limits.MaxAnonConns, s.limits.AnonTimeout
	}
	return g
}

// Shutdown stops taking connections and waits for the requests in
// progress to end, or for ctx (see http.Server.Shutdown).
func (s *HTTPServer) Shutdown(ctx context.Context) error { return s.hs.Shutdown(ctx) }

// Close closes the listener and every connection at once.
func (s *HTTPServer) Close() error { return s.hs.Close() }
