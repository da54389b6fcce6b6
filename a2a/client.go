package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// Client calls one remote agent over the JSON-RPC binding.
type Client struct {
	card     AgentCard
	endpoint string
	http     *http.Client
	header   http.Header
	ids      atomic.Int64
}

// Option configures a Client.
type Option func(*Client)

// WithBearer sends Authorization: Bearer token with every request (the
// card's too).
func WithBearer(token string) Option {
	return func(c *Client) {
		if token != "" {
			c.header.Set("Authorization", "Bearer "+token)
		}
	}
}

// WithHTTPClient uses hc for every request (default http.DefaultClient).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// Dial reads the agent card at cardURL — a URL ending in .json, or a
// base URL under which CardPath is read — and returns a client of the
// card's JSON-RPC interface.
func Dial(ctx context.Context, cardURL string, opts ...Option) (*Client, error) {
	c := &Client{http: http.DefaultClient, header: http.Header{}}
	for _, opt := range opts {
		opt(c)
	}
	u, err := url.Parse(cardURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("a2a: agent card URL %q must be an http or https URL", cardURL)
	}
	if !strings.HasSuffix(u.Path, ".json") {
		u = u.JoinPath(CardPath)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("a2a: agent card: %w", err)
	}
	c.setHeaders(req)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2a: agent card %s: %w", u, err)
	}
	defer res.Body.Close()
	body, err := readBounded(res.Body, MaxBodyBytes)
	if err != nil {
		return nil, fmt.Errorf("a2a: agent card %s: %w", u, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("a2a: agent card %s: %s: %s", u, res.Status, snippet(body))
	}
	if err := json.Unmarshal(body, &c.card); err != nil {
		return nil, fmt.Errorf("a2a: agent card %s: %w", u, err)
	}
	in, ok := c.card.Interface(BindingJSONRPC)
	if !ok {
		return nil, fmt.Errorf("a2a: agent %q (%s) offers no JSON-RPC interface", c.card.Name, u)
	}
	if in.ProtocolVersion != "" && in.ProtocolVersion != ProtocolVersion {
		return nil, fmt.Errorf("a2a: agent %q speaks A2A %s, not %s", c.card.Name, in.ProtocolVersion, ProtocolVersion)
	}
	end, err := u.Parse(in.URL)
	if err != nil {
		return nil, fmt.Errorf("a2a: agent %q: interface URL %q: %w", c.card.Name, in.URL, err)
	}
	c.endpoint = end.String()
	return c, nil
}

// Card is the agent's card.
func (c *Client) Card() AgentCard { return c.card }

func (c *Client) setHeaders(req *http.Request) {
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set(VersionHeader, ProtocolVersion)
}

// SendMessage sends a message and returns the task (or message) the agent
// answers with once the task is done or waits for input.
func (c *Client) SendMessage(ctx context.Context, req SendMessageRequest) (SendMessageResponse, error) {
	var out SendMessageResponse
	err := c.call(ctx, MethodSendMessage, req, &out)
	if err == nil && out.Task == nil && out.Message == nil {
		err = errors.New("a2a: SendMessage: the answer has neither a task nor a message")
	}
	return out, err
}

// GetTask reads a task.
func (c *Client) GetTask(ctx context.Context, id string) (Task, error) {
	var t Task
	return t, c.call(ctx, MethodGetTask, TaskRequest{ID: id}, &t)
}

// CancelTask cancels a task.
func (c *Client) CancelTask(ctx context.Context, id string) (Task, error) {
	var t Task
	return t, c.call(ctx, MethodCancelTask, TaskRequest{ID: id}, &t)
}

// ListTasks lists the caller's tasks.
func (c *Client) ListTasks(ctx context.Context, req ListTasksRequest) (ListTasksResponse, error) {
	var out ListTasksResponse
	return out, c.call(ctx, MethodListTasks, req, &out)
}

// SendStreamingMessage sends a message and yields the task's events until
// the agent ends the stream (at a terminal or interrupted state).
func (c *Client) SendStreamingMessage(ctx context.Context, req SendMessageRequest) iter.Seq2[StreamResponse, error] {
	return c.stream(ctx, MethodSendStreamingMessage, req)
}

// SubscribeToTask yields the events of a task in progress.
func (c *Client) SubscribeToTask(ctx context.Context, id string) iter.Seq2[StreamResponse, error] {
	return c.stream(ctx, MethodSubscribeToTask, TaskRequest{ID: id})
}

func (c *Client) post(ctx context.Context, method string, params any, accept string) (*http.Response, int64, error) {
	id := c.ids.Add(1)
	p, err := json.Marshal(params)
	if err != nil {
		return nil, 0, fmt.Errorf("a2a: %s: %w", method, err)
	}
	body, err := json.Marshal(Request{JSONRPC: "2.0", ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: p})
	if err != nil {
		return nil, 0, fmt.Errorf("a2a: %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("a2a: %s: %w", method, err)
	}
	c.setHeaders(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("a2a: %s: %w", method, err)
	}
	return res, id, nil
}

func (c *Client) call(ctx context.Context, method string, params, out any) error {
	res, id, err := c.post(ctx, method, params, "application/json")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := readBounded(res.Body, MaxBodyBytes)
	if err != nil {
		return fmt.Errorf("a2a: %s: %w", method, err)
	}
	var rpc Response
	if err := json.Unmarshal(body, &rpc); err != nil || rpc.JSONRPC != "2.0" {
		return fmt.Errorf("a2a: %s: %s: not a JSON-RPC response: %s", method, res.Status, snippet(body))
	}
	return decodeResult(method, rpc, id, out)
}

func decodeResult(method string, rpc Response, id int64, out any) error {
	if rpc.Error != nil {
		return rpc.Error
	}
	if string(rpc.ID) != fmt.Sprint(id) {
		return fmt.Errorf("a2a: %s: the response's id %s is not the request's %d", method, rpc.ID, id)
	}
	if err := json.Unmarshal(rpc.Result, out); err != nil {
		return fmt.Errorf("a2a: %s: the result: %w", method, err)
	}
	return nil
}

func (c *Client) stream(ctx context.Context, method string, params any) iter.Seq2[StreamResponse, error] {
	return func(yield func(StreamResponse, error) bool) {
		res, id, err := c.post(ctx, method, params, "text/event-stream")
		if err != nil {
			yield(StreamResponse{}, err)
			return
		}
		defer res.Body.Close()
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			body, _ := readBounded(res.Body, MaxBodyBytes)
			var rpc Response
			if json.Unmarshal(body, &rpc) == nil && rpc.Error != nil {
				yield(StreamResponse{}, rpc.Error)
				return
			}
			yield(StreamResponse{}, fmt.Errorf("a2a: %s: %s: not an event stream: %s", method, res.Status, snippet(body)))
			return
		}
		for data, err := range sseData(res.Body) {
			if err != nil {
				yield(StreamResponse{}, fmt.Errorf("a2a: %s: %w", method, err))
				return
			}
			var rpc Response
			var ev StreamResponse
			if err := json.Unmarshal(data, &rpc); err != nil {
				yield(StreamResponse{}, fmt.Errorf("a2a: %s: an event is not JSON-RPC: %w", method, err))
				return
			}
			if err := decodeResult(method, rpc, id, &ev); err != nil {
				yield(StreamResponse{}, err)
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// sseData yields the data of each server-sent event of r, each at most
// MaxEventBytes.
func sseData(r io.Reader) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), MaxEventBytes)
		var data []byte
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case len(line) == 0:
				if len(data) > 0 && !yield(data, nil) {
					return
				}
				data = nil
			case bytes.HasPrefix(line, []byte("data:")):
				v := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
				if len(data) > 0 {
					data = append(data, '\n')
				}
				if len(data)+len(v) > MaxEventBytes {
					yield(nil, fmt.Errorf("an event is larger than %d bytes", MaxEventBytes))
					return
				}
				data = append(data, v...)
			}
		}
		if err := sc.Err(); err != nil {
			yield(nil, err)
			return
		}
		if len(data) > 0 {
			yield(data, nil)
		}
	}
}

func readBounded(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("the answer is larger than %d bytes", max)
	}
	return b, nil
}

func snippet(b []byte) string {
	if len(b) > 300 {
		b = b[:300]
	}
	return strings.ToValidUTF8(string(b), "")
}
