// Package scriptsrv is the part the protocol test servers (openaitest,
// anthropictest, ollamatest, geminitest) share: an httptest server that
// hands out scripted responses in order, one per request, records the
// requests, and holds a response back without outliving the test.
package scriptsrv

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Server serves a script of responses of type Resp and records requests
// of type Req; the protocol's handler does the rest. It is safe for
// concurrent use.
type Server[Req, Resp any] struct {
	srv  *httptest.Server
	done chan struct{}
	once sync.Once

	mu        sync.Mutex
	responses []Resp
	served    int
	requests  []Req
}

// Start starts a Server whose requests are handled by h, with responses
// as its script.
func Start[Req, Resp any](h http.Handler, responses []Resp) *Server[Req, Resp] {
	s := &Server[Req, Resp]{done: make(chan struct{}), responses: responses}
	s.srv = httptest.NewServer(h)
	return s
}

// URL returns the server's root URL.
func (s *Server[Req, Resp]) URL() string { return s.srv.URL }

// Close cuts any held-back response short and shuts the server down.
func (s *Server[Req, Resp]) Close() {
	s.once.Do(func() { close(s.done) })
	s.srv.Close()
}

// Enqueue appends responses to the script.
func (s *Server[Req, Resp]) Enqueue(responses ...Resp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responses = append(s.responses, responses...)
}

// Requests returns the requests recorded so far, in order.
func (s *Server[Req, Resp]) Requests() []Req {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Req(nil), s.requests...)
}

// Remaining returns how many scripted responses have not been served.
func (s *Server[Req, Resp]) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.responses) - s.served
}

// Record stores a request that gets no scripted response.
func (s *Server[Req, Resp]) Record(req Req) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
}

// Next records req and returns its number (from 1) and its response; ok
// is false when the script is exhausted.
func (s *Server[Req, Resp]) Next(req Req) (n int, resp Resp, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if s.served >= len(s.responses) {
		return s.served + 1, resp, false
	}
	s.served++
	return s.served, s.responses[s.served-1], true
}

// Wait holds a response to r back for d; it reports false when the client
// or the server went away first.
func (s *Server[Req, Resp]) Wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

// Flush sends what w holds so far, when it can.
func Flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// Split cuts s into pieces of at most n bytes, keeping UTF-8 sequences
// whole: how a tool call's arguments arrive in a stream.
func Split(s string, n int) []string {
	var pieces []string
	for len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		pieces = append(pieces, s[:cut])
		s = s[cut:]
	}
	return append(pieces, s)
}
