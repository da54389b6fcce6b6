package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP spec says a request the client cancelled (notifications/cancelled)
// gets no response; the go-sdk's JSON-RPC layer answers every call, a
// cancelled one with {"code":0,"message":"context canceled"}. coorflow keeps
// that answer from the client: over HTTP by the calls in flight (mcpCalls,
// mcpQuiet), over stdio by the connection (quietTransport).
//
// Over HTTP without sessions (protocol 2026-07-28 on) a call lives as long
// as its POST: a client cancels it by closing the response stream, which
// the SDK turns into the tool's context ending. A notifications/cancelled
// there reaches a new, empty server session, so mcpQuiet itself ends the
// POST of the call it names: the caller's own, by its owner and id.

// maxMCPCalls bounds the calls (requests with an id) one owner has in
// flight over /mcp at once on a replica; one more is refused with 429
// quota_exceeded (quota mcp_requests).
const maxMCPCalls = 256

// mcpCallKey names a call in flight: the scope of its JSON-RPC id (a
// session, or, without sessions, the owner) and the id.
type mcpCallKey struct{ scope, id string }

// sessionScope and ownerScope are the scopes of the ids of a session's
// calls and of an owner's calls without a session.
func sessionScope(id string) string  { return "session " + id }
func ownerScope(owner string) string { return "owner " + owner }

// mcpInFlight is one call in flight: whether the client cancelled it, and
// how to end the POST that carries it (nil in a session, where the SDK
// cancels the call itself).
type mcpInFlight struct {
	cancelled atomic.Bool
	end       context.CancelFunc
}

// mcpCalls are the calls in flight over /mcp, counted by owner. It holds
// only calls whose request is being served, at most maxMCPCalls an owner,
// and, by scope without sessions, the ids of the last maxMCPDropped calls
// whose client closed their stream (dropped).
type mcpCalls struct {
	mu      sync.Mutex
	m       map[mcpCallKey][]*mcpInFlight
	owners  map[string]int
	dropped map[string][]string
}

// maxMCPDropped bounds the ids of dropped calls kept for each owner.
const maxMCPDropped = 32

// begin records the calls ids of owner, in scope, whose POST end ends;
// the func forgets them, saying whether their client dropped them (closed
// the stream). It refuses them when the owner would have more than max in
// flight.
func (c *mcpCalls) begin(owner, scope string, ids []string, end context.CancelFunc, max int) (map[string]*mcpInFlight, func(dropped bool), *apiError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m, c.owners, c.dropped = make(map[mcpCallKey][]*mcpInFlight), make(map[string]int), make(map[string][]string)
	}
	if c.owners[owner]+len(ids) > max {
		return nil, nil, quotaError(QuotaMCPRequests, int64(max),
			"owner %q has %d MCP requests in flight, the most allowed: wait for one to end, then try again", owner, c.owners[owner])
	}
	calls := make(map[string]*mcpInFlight, len(ids))
	for _, id := range ids {
		f := &mcpInFlight{end: end}
		k := mcpCallKey{scope, id}
		c.m[k] = append(c.m[k], f)
		calls[id] = f
	}
	c.owners[owner] += len(ids)
	return calls, func(dropped bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for id, f := range calls {
			k := mcpCallKey{scope, id}
			c.m[k] = slices.DeleteFunc(c.m[k], func(g *mcpInFlight) bool { return g == f })
			if len(c.m[k]) == 0 {
				delete(c.m, k)
			}
			if dropped && end != nil && !f.cancelled.Load() {
				c.dropped[scope] = append(c.dropped[scope], id)
				if n := len(c.dropped[scope]); n > maxMCPDropped {
					c.dropped[scope] = slices.Delete(c.dropped[scope], 0, n-maxMCPDropped)
				}
			}
		}
		if c.owners[owner] -= len(calls); c.owners[owner] <= 0 {
			delete(c.owners, owner)
		}
	}, nil
}

// cancel marks the call k cancelled, and ends its POST, if it is in
// flight and the only one of its scope with its id. Without sessions two
// clients of one owner may use the same id, so a cancel that could name
// either cancels neither; and a client that closes a call's stream may
// send its cancel afterwards (the Go SDK does): a cancel naming a call
// dropped so is taken to be about it, and cancels nothing.
func (c *mcpCalls) cancel(k mcpCallKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.dropped[k.scope], k.id); i >= 0 {
		if c.dropped[k.scope] = slices.Delete(c.dropped[k.scope], i, i+1); len(c.dropped[k.scope]) == 0 {
			delete(c.dropped, k.scope)
		}
		return
	}
	if len(c.m[k]) != 1 {
		return
	}
	f := c.m[k][0]
	f.cancelled.Store(true)
	if f.end != nil {
		f.end()
	}
}

// rpcMessage is what mcpQuiet reads of a JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// rpcMessages decodes a POSTed body: one message or a batch.
func rpcMessages(body []byte) []rpcMessage {
	body = bytes.TrimSpace(body)
	var msgs []rpcMessage
	if bytes.HasPrefix(body, []byte("[")) {
		_ = json.Unmarshal(body, &msgs)
		return msgs
	}
	var m rpcMessage
	if json.Unmarshal(body, &m) == nil {
		msgs = append(msgs, m)
	}
	return msgs
}

// rpcID is the canonical form of a JSON-RPC id.
func rpcID(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// mcpQuiet serves a request of owner to /mcp with h so that the response
// to a call the client cancels while it runs is not sent: it marks the
// calls a POST cancels before h reads them (and, without sessions, ends
// their POSTs), and drops, from the stream of the POST that made a call,
// the response to it once it is cancelled. It reads at most limit bytes of
// the body itself; h sees the whole body.
func (m *mcpState) mcpQuiet(w http.ResponseWriter, r *http.Request, owner string, limit int64, h http.Handler) {
	session := r.Header.Get(mcpSessionHeader)
	sessionless := mcpSessionless(r)
	if r.Method != http.MethodPost || session == "" && !sessionless {
		h.ServeHTTP(w, r)
		return
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || int64(len(head)) > limit {
		h.ServeHTTP(w, r) // the handler refuses it
		return
	}
	scope, ctx, end := sessionScope(session), r.Context(), context.CancelFunc(nil)
	if sessionless {
		scope = ownerScope(owner)
		ctx, end = context.WithCancel(ctx)
		defer end()
	}
	var ids []string
	for _, msg := range rpcMessages(head) {
		switch {
		case msg.Method == "notifications/cancelled" && len(msg.Params.RequestID) > 0:
			m.calls.cancel(mcpCallKey{scope, rpcID(msg.Params.RequestID)})
		case msg.Method != "" && len(msg.ID) > 0:
			ids = append(ids, rpcID(msg.ID))
		}
	}
	if len(ids) == 0 {
		h.ServeHTTP(w, r)
		return
	}
	calls, forget, e := m.calls.begin(owner, scope, ids, end, maxMCPCalls)
	if e != nil {
		writeError(w, e)
		return
	}
	h.ServeHTTP(&quietWriter{ResponseWriter: w, calls: calls}, r.WithContext(ctx))
	forget(r.Context().Err() != nil) // the client closed the stream (or the server stops)
}

// quietWriter drops the server-sent event that answers a cancelled call
// (the go-sdk writes each event with one Write).
type quietWriter struct {
	http.ResponseWriter
	calls map[string]*mcpInFlight
}

func (q *quietWriter) Write(p []byte) (int, error) {
	if id, ok := eventResponseID(p); ok {
		if f := q.calls[id]; f != nil && f.cancelled.Load() {
			return len(p), nil
		}
	}
	return q.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController flush the stream.
func (q *quietWriter) Unwrap() http.ResponseWriter { return q.ResponseWriter }

// eventResponseID returns the id of the JSON-RPC response an event (or a
// plain JSON body) carries.
func eventResponseID(p []byte) (string, bool) {
	data := p
	if i := bytes.Index(p, []byte("data: ")); i >= 0 && (i == 0 || p[i-1] == '\n') {
		data = p[i+len("data: "):]
		if j := bytes.Index(data, []byte("\n")); j >= 0 {
			data = data[:j]
		}
	}
	var msg rpcMessage
	if json.Unmarshal(data, &msg) != nil || msg.Method != "" || len(msg.ID) == 0 {
		return "", false
	}
	return rpcID(msg.ID), true
}

// quietTransport is a transport whose connections do not send the
// response to a call the client cancelled while it ran (stdio).
type quietTransport struct{ mcp.Transport }

func (t quietTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &quietConn{Connection: c, calls: map[string]bool{}}, nil
}

// quietConn tracks the calls it read until it writes their responses:
// false while they run, true once cancelled.
type quietConn struct {
	mcp.Connection
	mu    sync.Mutex
	calls map[string]bool
}

func (c *quietConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		c.mu.Lock()
		switch {
		case req.Method == "notifications/cancelled":
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id := rpcID(p.RequestID); id != "" {
					if _, running := c.calls[id]; running {
						c.calls[id] = true
					}
				}
			}
		case req.IsCall():
			c.calls[idKey(req.ID)] = false
		}
		c.mu.Unlock()
	}
	return msg, err
}

func (c *quietConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		cancelled := c.calls[idKey(resp.ID)]
		delete(c.calls, idKey(resp.ID))
		c.mu.Unlock()
		if cancelled {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}

// idKey is the canonical form (rpcID) of a decoded JSON-RPC id.
func idKey(id jsonrpc.ID) string {
	raw, err := json.Marshal(id.Raw())
	if err != nil {
		return ""
	}
	return rpcID(raw)
}
