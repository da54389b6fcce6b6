package server

import (
	"container/list"
	"context"
	"net"
	"sync"
	"time"
)

// limitListener accepts at most n connections open at a time (n <= 0: no
// cap): Accept waits while n are open, unless it can close an anonymous
// one (see Limits).
func limitListener(ln net.Listener, n int) net.Listener {
	l := &capListener{Listener: ln, closed: make(chan struct{}), byIP: make(map[string]int)}
	if n > 0 {
		l.slots = make(chan struct{}, n)
	}
	l.changed = sync.NewCond(&l.mu)
	return l
}

// capListener enforces Limits.MaxConns, MaxAnonConns, MaxConnsPerIP and
// AnonTimeout on the connections it accepts (capConn).
type capListener struct {
	net.Listener
	slots     chan struct{} // one value per open connection; nil: no cap
	closed    chan struct{}
	closeOnce sync.Once
	// maxAnon caps the anonymous connections (<= 0: no share: every
	// connection is treated as authenticated); perIP the connections of
	// one IP (<= 0: no cap); anonTimeout bounds an anonymous
	// connection's reads.
	maxAnon, perIP int
	anonTimeout    time.Duration

	mu      sync.Mutex
	anon    list.List      // of *capConn, the anonymous ones, oldest first
	byIP    map[string]int // open connections by remote IP
	changed *sync.Cond     // broadcast when a connection opens, closes or authenticates
}

// Accept waits for a free slot, closing the oldest anonymous connection
// when none is, then for a connection within its IP's share.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		if err := l.takeSlot(); err != nil {
			return nil, err
		}
		c, err := l.Listener.Accept()
		if err != nil {
			l.freeSlot()
			return nil, err
		}
		if gc := l.admit(c); gc != nil {
			return gc, nil
		}
	}
}

// takeSlot takes a slot of MaxConns, closing the oldest anonymous
// connection when all are taken.
func (l *capListener) takeSlot() error {
	if l.slots == nil {
		return nil
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	if old := l.oldestAnon(""); old != nil {
		_ = old.Close() // frees its slot
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-l.closed:
		return net.ErrClosed
	}
}

func (l *capListener) freeSlot() {
	if l.slots != nil {
		<-l.slots
	}
}

// admit registers c, anonymous, within MaxConnsPerIP and MaxAnonConns,
// closing older anonymous connections to make room; it returns nil, c
// closed, when c's IP has no room left.
func (l *capListener) admit(c net.Conn) *capConn {
	gc := &capConn{Conn: c, l: l, ip: remoteIP(c), authed: l.maxAnon <= 0}
	var evict []*capConn
	l.mu.Lock()
	if l.perIP > 0 && gc.ip != "" && l.byIP[gc.ip] >= l.perIP {
		old := l.oldestAnonLocked(gc.ip)
		if old == nil {
			l.mu.Unlock()
			_ = c.Close()
			l.freeSlot()
			return nil
		}
		evict = append(evict, old)
		l.forgetLocked(old)
	}
	if !gc.authed {
		for l.anon.Len() >= l.maxAnon {
			old := l.anon.Front().Value.(*capConn)
			evict = append(evict, old)
			l.forgetLocked(old)
		}
		gc.elem = l.anon.PushBack(gc)
	}
	if gc.ip != "" {
		l.byIP[gc.ip]++
	}
	gc.counted = true
	l.changed.Broadcast()
	l.mu.Unlock()
	for _, old := range evict {
		_ = old.Close()
	}
	return gc
}

// oldestAnon is the oldest anonymous connection (of ip, unless empty).
func (l *capListener) oldestAnon(ip string) *capConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.oldestAnonLocked(ip)
}

func (l *capListener) oldestAnonLocked(ip string) *capConn {
	for e := l.anon.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*capConn); ip == "" || c.ip == ip {
			return c
		}
	}
	return nil
}

// forgetLocked takes c out of the counts, once. l.mu is held.
func (l *capListener) forgetLocked(c *capConn) {
	if !c.counted {
		return
	}
	c.counted = false
	if c.elem != nil {
		l.anon.Remove(c.elem)
		c.elem = nil
	}
	if c.ip != "" {
		if l.byIP[c.ip]--; l.byIP[c.ip] <= 0 {
			delete(l.byIP, c.ip)
		}
	}
	l.changed.Broadcast()
}

// waitFor waits until cond, called with l.mu held, is true.
func (l *capListener) waitFor(cond func() bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !cond() {
		l.changed.Wait()
	}
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (l *capListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// remoteIP is the IP address of c's peer, or "" when it has none (a
// pipe).
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

// capConn is a connection of a capListener: it frees its slot when
// closed, once, and bounds its reads by AnonTimeout while anonymous.
type capConn struct {
	net.Conn
	l  *capListener
	ip string

	// Guarded by l.mu.
	elem    *list.Element // in l.anon while anonymous
	counted bool          // in l's counts
	authed  bool
	asked   time.Time // the read deadline last asked for

	once sync.Once
}

// connKey is the request context's key of its capConn.
type connKey struct{}

// markAuthenticated records that the connection of ctx's request carried
// a token: it leaves the anonymous share and its reads get the server's
// timeouts again.
func markAuthenticated(ctx context.Context) {
	c, _ := ctx.Value(connKey{}).(*capConn)
	if c == nil {
		return
	}
	c.l.mu.Lock()
	if c.authed {
		c.l.mu.Unlock()
		return
	}
	c.authed = true
	if c.elem != nil {
		c.l.anon.Remove(c.elem)
		c.elem = nil
	}
	asked := c.asked
	c.l.changed.Broadcast()
	c.l.mu.Unlock()
	_ = c.Conn.SetReadDeadline(asked)
}

// SetReadDeadline sets t, or AnonTimeout from now if sooner while the
// connection is anonymous.
func (c *capConn) SetReadDeadline(t time.Time) error {
	c.l.mu.Lock()
	c.asked = t
	if !c.authed && c.l.anonTimeout > 0 {
		if limit := time.Now().Add(c.l.anonTimeout); t.IsZero() || t.After(limit) {
			t = limit
		}
	}
	c.l.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets both deadlines, the read one as SetReadDeadline does.
func (c *capConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// Close closes the connection and frees its slot and share.
func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.forgetLocked(c)
		c.l.mu.Unlock()
		c.l.freeSlot()
	})
	return err
}
