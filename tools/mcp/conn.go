package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxListRounds bounds how often a tool list is taken again because the
// server said, while it was being taken, that its tools changed.
const maxListRounds = 3

// conn is one server of a Toolset: its current session, started on first
// use and again after it dropped, and the calls in flight on it.
type conn struct {
	srv    Server
	getenv func(string) string
	client *sdk.Client

	dial sync.Mutex // one connect at a time

	mu     sync.Mutex
	cur    *session
	closed bool
	calls  map[string]*call // in flight, by progress token
	seq    int64
	// pending counts, by token, the progress notifications read from the
	// server and not yet handled; settled is signalled as they are.
	pending map[string]int
	settled *sync.Cond
	// listGen counts the server's notices that its tools changed.
	listGen atomic.Int64
}

// session is one MCP session with the server, and its tools as listed
// after initialization.
type session struct {
	cs    *sdk.ClientSession
	link  *link
	tools []*sdk.Tool
	// listed is the listGen the tools were listed at.
	listed int64
	done   chan struct{} // closed when the session's connection ended
	wg     sync.WaitGroup
	once   sync.Once
}

func newConn(srv Server, getenv func(string) string) *conn {
	c := &conn{srv: srv, getenv: getenv, calls: map[string]*call{}, pending: map[string]int{}}
	c.settled = sync.NewCond(&c.mu)
	c.client = sdk.NewClient(&sdk.Implementation{Name: "coorflow", Version: "v1"}, &sdk.ClientOptions{
		// No roots and no sampling: only elicitation is offered, in both
		// modes (a URL question becomes an interrupt as a form does).
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{
			Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{},
		}},
		ElicitationHandler:          c.onElicit,
		ProgressNotificationHandler: c.onProgress,
		ToolListChangedHandler:      func(context.Context, *sdk.ToolListChangedRequest) { c.listGen.Add(1) },
	})
	return c
}

// dead reports whether the session can no longer carry calls.
func (s *session) dead() bool {
	select {
	case <-s.done:
		return true
	default:
	}
	return s.link.ended() || s.link.stale.Load()
}

// close ends the session and what it started.
func (s *session) close() {
	s.once.Do(func() {
		_ = s.cs.Close()
		s.link.stop()
		s.wg.Wait()
	})
}

// current returns the live session, if any.
func (c *conn) current() *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && !c.cur.dead() {
		return c.cur
	}
	return nil
}

// session returns the live session, connecting first when there is none:
// on first use, and after the connection dropped or the server restarted.
func (c *conn) session(ctx context.Context) (*session, error) {
	if s := c.current(); s != nil {
		return s, nil
	}
	c.dial.Lock()
	defer c.dial.Unlock()
	c.mu.Lock()
	old, closed := c.cur, c.closed
	if old != nil && !old.dead() {
		c.mu.Unlock()
		return old, nil
	}
	c.cur = nil
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: server %q", ErrClosed, c.srv.Name)
	}
	if old != nil {
		old.close()
	}
	s, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	closed = c.closed
	if !closed {
		c.cur = s
	}
	c.mu.Unlock()
	if closed { // Close is waiting for dial: it cannot see this session
		s.close()
		return nil, fmt.Errorf("%w: server %q", ErrClosed, c.srv.Name)
	}
	return s, nil
}

// connect starts a session: the process or HTTP connection, the MCP
// handshake, then the tool list. It runs under a context of its own, so
// that the session keeps nothing of the caller's (the caller's
// cancellation still stops the connect).
func (c *conn) connect(ctx context.Context) (*session, error) {
	cctx, cancel := context.WithTimeout(context.Background(), c.srv.ConnectTimeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	l, err := connectLink(&c.srv, c.getenv, c.noteProgress)
	if err != nil {
		return nil, &ConnectError{Server: c.srv.Name, Transport: c.srv.transportName(), Err: err}
	}
	cs, err := c.client.Connect(cctx, l.transport, nil)
	if err != nil {
		l.stop()
		return nil, c.connectError(ctx, err, l)
	}
	s := &session{cs: cs, link: l, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = cs.Wait()
		close(s.done)
		c.signal() // calls waiting for notifications stop waiting
	}()
	if err := c.list(cctx, s); err != nil {
		s.close()
		return nil, c.connectError(ctx, err, l)
	}
	return s, nil
}

func (c *conn) connectError(ctx context.Context, err error, l *link) error {
	if ctx.Err() != nil {
		return fmt.Errorf("mcp: server %q: connect: %w", c.srv.Name, ctx.Err())
	}
	if why := l.why(); why != "" {
		err = fmt.Errorf("%w (%s)", err, why)
	}
	return &ConnectError{Server: c.srv.Name, Transport: c.srv.transportName(), Err: err}
}

// list takes the server's tool list, again if the server says its tools
// changed while it was being taken (a notice sent early can be lost, so
// the list is always taken after initialization).
func (c *conn) list(ctx context.Context, s *session) error {
	for range maxListRounds {
		gen := c.listGen.Load()
		var got []*sdk.Tool
		for t, err := range s.cs.Tools(ctx, nil) {
			if err != nil {
				return fmt.Errorf("list tools: %w", err)
			}
			if len(c.srv.Tools) > 0 && !slices.Contains(c.srv.Tools, t.Name) {
				continue
			}
			if len(got) == c.srv.MaxTools {
				break
			}
			got = append(got, t)
		}
		s.tools, s.listed = got, gen
		if c.listGen.Load() == gen {
			return nil
		}
	}
	return nil
}

// toolsOf returns the tools of the live session, listing them again when
// the server said they changed.
func (c *conn) toolsOf(ctx context.Context) ([]*sdk.Tool, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	c.dial.Lock()
	defer c.dial.Unlock()
	if s.listed != c.listGen.Load() {
		if err := c.list(ctx, s); err != nil {
			return nil, &ConnectError{Server: c.srv.Name, Transport: c.srv.transportName(), Err: err}
		}
	}
	return s.tools, nil
}

// call is one tool call in flight.
type call struct {
	c      *conn
	s      *session
	ctx    context.Context // the caller's: events and interrupts go through it
	cancel context.CancelFunc
	tool   string // the registry name
	remote string // the name on the server
	token  string
	stop   func() bool // stops signalling when ctx ends

	mu        sync.Mutex
	finished  bool
	interrupt error
}

type callKey struct{}

// start registers a call on session s, with a progress token of its own.
func (c *conn) start(ctx context.Context, s *session, tool, remote string) (*call, context.Context) {
	cctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.seq++
	cl := &call{c: c, s: s, ctx: ctx, cancel: cancel, tool: tool, remote: remote, token: "coorflow-" + strconv.FormatInt(c.seq, 10)}
	c.calls[cl.token] = cl
	c.mu.Unlock()
	cl.stop = context.AfterFunc(cctx, c.signal)
	return cl, context.WithValue(cctx, callKey{}, cl)
}

// finish ends the call, once the progress notifications the server sent
// before its result have been published (unless the session or the call
// ended first): no event or question reaches the caller after it.
func (cl *call) finish() {
	c := cl.c
	c.mu.Lock()
	for c.pending[cl.token] > 0 && !cl.s.dead() && cl.ctx.Err() == nil {
		c.settled.Wait()
	}
	delete(c.calls, cl.token)
	delete(c.pending, cl.token)
	c.mu.Unlock()
	cl.mu.Lock()
	cl.finished = true
	cl.mu.Unlock()
	cl.stop()
	cl.cancel()
}

// noteProgress counts a progress notification read from the server for a
// call in flight.
func (c *conn) noteProgress(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.calls[token]; ok {
		c.pending[token]++
	}
}

// handled counts a progress notification as handled.
func (c *conn) handled(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[token] > 0 {
		c.pending[token]--
		c.settled.Broadcast()
	}
}

// signal wakes the calls waiting for notifications, to look again.
func (c *conn) signal() {
	c.mu.Lock()
	c.settled.Broadcast()
	c.mu.Unlock()
}

// interrupted returns the interrupt an elicitation raised, if any.
func (cl *call) interrupted() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.interrupt
}

// byToken returns the call in flight with a progress token.
func (c *conn) byToken(token string) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[token]
}

// soleCall returns the only call in flight, or nil: a server's question
// that names no call is taken to be about it.
func (c *conn) soleCall() *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) != 1 {
		return nil
	}
	for _, cl := range c.calls {
		return cl
	}
	return nil
}

// callTool calls a tool on the live session. A request the server refused
// because it no longer knew the session (it restarted) is sent once more on
// a new session; it had not run. A connection that drops during the call
// fails it: it may or may not have run, and the next call reconnects.
func (c *conn) callTool(ctx context.Context, tool, remote string, args json.RawMessage) (*sdk.CallToolResult, error) {
	for attempt := 0; ; attempt++ {
		s, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		cl, cctx := c.start(ctx, s, tool, remote)
		p := &sdk.CallToolParams{Name: remote, Arguments: args}
		p.SetProgressToken(cl.token)
		res, err := s.cs.CallTool(cctx, p)
		cl.finish()
		if ie := cl.interrupted(); ie != nil {
			return nil, ie
		}
		switch {
		case err == nil:
			return res, nil
		case ctx.Err() != nil:
			return nil, fmt.Errorf("mcp: server %q: tool %q: %w", c.srv.Name, remote, ctx.Err())
		case s.link.stale.Load() && attempt == 0:
			continue // the server did not know the session: the call did not run
		case s.dead() || errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) || errors.Is(err, io.EOF):
			s.link.awaitExit()
			if why := s.link.why(); why != "" {
				err = fmt.Errorf("%w (%s)", err, why)
			}
			return nil, &DroppedError{Server: c.srv.Name, Tool: remote, Err: err}
		}
		return nil, fmt.Errorf("mcp: server %q: tool %q: %w", c.srv.Name, remote, err)
	}
}

// close ends the session and refuses new ones.
func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.dial.Lock()
	defer c.dial.Unlock()
	c.mu.Lock()
	s := c.cur
	c.cur = nil
	c.mu.Unlock()
	if s != nil {
		s.close()
	}
}
