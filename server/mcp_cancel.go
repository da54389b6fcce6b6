package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP spec says a request the client cancelled (notifications/cancelled)
// gets no response; the go-sdk's JSON-RPC layer answers every call, a
// cancelled one with {"code":0,"message":"context canceled"}. coorflow keeps
// that answer from the client: over HTTP by the calls in flight of each
// session (mcpCalls, mcpQuiet), over stdio by the connection (quietTransport).

// mcpCallKey names a call in flight: its session and its JSON-RPC id.
type mcpCallKey struct{ session, id string }

// mcpCalls are the calls in flight over /mcp, each with whether the
// client cancelled it. It holds only calls whose request is being served,
// so it is bounded by them.
type mcpCalls struct {
	mu sync.Mutex
	m  map[mcpCallKey]*atomic.Bool
}

// begin records a call in flight; the func forgets it.
func (c *mcpCalls) begin(k mcpCallKey) (*atomic.Bool, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[mcpCallKey]*atomic.Bool)
	}
	b := new(atomic.Bool)
	c.m[k] = b
	return b, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.m[k] == b {
			delete(c.m, k)
		}
	}
}

// cancel marks the call k cancelled, if it is in flight.
func (c *mcpCalls) cancel(k mcpCallKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.m[k]; b != nil {
		b.Store(true)
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

// mcpQuiet serves a request to /mcp with h so that the response to a
// call the client cancels while it runs is not sent: it marks the calls a
// POST cancels before h reads them, and drops, from the stream of the POST
// that made a call, the response to it once it is cancelled. It reads at
// most limit bytes of the body itself; h sees the whole body.
func (m *mcpState) mcpQuiet(w http.ResponseWriter, r *http.Request, limit int64, h http.Handler) {
	session := r.Header.Get(mcpSessionHeader)
	if r.Method != http.MethodPost || session == "" {
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
	calls := map[string]*atomic.Bool{}
	for _, msg := range rpcMessages(head) {
		switch {
		case msg.Method == "notifications/cancelled" && len(msg.Params.RequestID) > 0:
			m.calls.cancel(mcpCallKey{session, rpcID(msg.Params.RequestID)})
		case msg.Method != "" && len(msg.ID) > 0:
			id := rpcID(msg.ID)
			b, end := m.calls.begin(mcpCallKey{session, id})
			defer end()
			calls[id] = b
		}
	}
	if len(calls) == 0 {
		h.ServeHTTP(w, r)
		return
	}
	h.ServeHTTP(&quietWriter{ResponseWriter: w, calls: calls}, r)
}

// quietWriter drops the server-sent event that answers a cancelled call
// (the go-sdk writes each event with one Write).
type quietWriter struct {
	http.ResponseWriter
	calls map[string]*atomic.Bool
}

func (q *quietWriter) Write(p []byte) (int, error) {
	if id, ok := eventResponseID(p); ok {
		if b := q.calls[id]; b != nil && b.Load() {
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
