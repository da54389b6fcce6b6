package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	alice = "tok-alice"
	bob   = "tok-bob"
)

var tokens = map[string]string{alice: "alice", bob: "bob"}

var (
	textKey  = graph.NewKey[string]("text")
	logKey   = graph.NewKey("log", graph.Append[string]())
	countKey = graph.NewKey("count", graph.Sum[int]())
)

// echoGraph: upper (text -> TEXT, log "upper") -> tally (count +1, log
// "tally"); it publishes a tool call and a model call on the way.
func echoGraph(t testing.TB) *graph.Runnable {
	t.Helper()
	g := graph.New("echo", textKey, logKey, countKey)
	g.AddNode("upper", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, tools.CallEvent{ID: "c1", Name: "shout", Args: json.RawMessage(`{"loud":true}`)})
		graph.Emit(ctx, tools.ResultEvent{ID: "c1", Name: "shout", Status: "ok", Output: "done"})
		return graph.Update(textKey.Set(strings.ToUpper(textKey.Get(s))), graph.AppendTo(logKey, "upper")), nil
	})
	g.AddNode("tally", func(ctx context.Context, s graph.State) (graph.Command, error) {
		graph.Emit(ctx, llm.ModelCall{Model: "m", Tier: "basic", PromptTokens: 3, CompletionTokens: 2})
		return graph.Update(countKey.Set(1), graph.AppendTo(logKey, "tally")), nil
	})
	g.AddEdge(graph.Start, "upper")
	g.AddEdge("upper", "tally")
	g.AddEdge("tally", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

type approval struct {
	OK bool `json:"ok"`
}

// askGraph: draft asks a question, then writes the answer; after logs.
// With two set, two nodes ask in the same step.
func askGraph(t *testing.T, two bool) *graph.Runnable {
	t.Helper()
	g := graph.New("ask", textKey, logKey)
	asker := func(name string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Command, error) {
			a, err := graph.InterruptAs[approval](ctx, map[string]string{"question": "approve " + name + "?"})
			if err != nil {
				return graph.Command{}, err
			}
			return graph.Update(graph.AppendTo(logKey, fmt.Sprintf("%s ok=%v", name, a.OK))), nil
		}
	}
	g.AddNode("draft", asker("draft"))
	g.AddNode("after", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(logKey, "after")), nil
	})
	g.AddEdge(graph.Start, "draft")
	if two {
		g.AddNode("second", asker("second"))
		g.AddEdge(graph.Start, "second")
		g.AddJoin([]string{"draft", "second"}, "after")
	} else {
		g.AddEdge("draft", "after")
	}
	g.AddEdge("after", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// blocker is a workflow a -> b -> slow -> c whose slow node waits for
// release (or for its run to be cancelled), counting every node's runs.
type blocker struct {
	runs    map[string]*atomic.Int32
	entered chan struct{} // receives each time slow starts
	release chan struct{}
	once    sync.Once
	r       *graph.Runnable
}

func newBlocker(t *testing.T) *blocker {
	t.Helper()
	b := &blocker{runs: map[string]*atomic.Int32{}, entered: make(chan struct{}, 16), release: make(chan struct{})}
	g := graph.New("block", logKey)
	for _, n := range []string{"a", "b", "slow", "c"} {
		b.runs[n] = &atomic.Int32{}
	}
	plain := func(name string) graph.NodeFunc {
		return func(ctx context.Context, s graph.State) (graph.Command, error) {
			b.runs[name].Add(1)
			return graph.Update(graph.AppendTo(logKey, name)), nil
		}
	}
	g.AddNode("a", plain("a"))
	g.AddNode("b", plain("b"))
	g.AddNode("slow", func(ctx context.Context, s graph.State) (graph.Command, error) {
		b.runs["slow"].Add(1)
		b.entered <- struct{}{}
		select {
		case <-b.release:
			return graph.Update(graph.AppendTo(logKey, "slow")), nil
		case <-ctx.Done():
			return graph.Command{}, ctx.Err()
		}
	})
	g.AddNode("c", plain("c"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "slow")
	g.AddEdge("slow", "c")
	g.AddEdge("c", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	b.r = r
	t.Cleanup(b.open)
	return b
}

func (b *blocker) open() { b.once.Do(func() { close(b.release) }) }

func (b *blocker) counts() map[string]int32 {
	out := map[string]int32{}
	for n, c := range b.runs {
		out[n] = c.Load()
	}
	return out
}

// waitEntered waits until slow has started once more.
func (b *blocker) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-b.entered:
	case <-t.Context().Done():
		t.Fatal("slow never started")
	}
}

// env is a Server behind a real HTTP server on loopback.
type env struct {
	t      *testing.T
	srv    *server.Server
	hs     *httptest.Server
	client *http.Client
	saver  graph.Saver

	mu sync.Mutex
	// served, when set, is called after the server answered a request.
	served func(*http.Request)
}

// onServed sets the function called after each request is answered.
func (e *env) onServed(f func(*http.Request)) {
	e.mu.Lock()
	e.served = f
	e.mu.Unlock()
}

func newEnv(t *testing.T, cfg server.Config) *env {
	t.Helper()
	if cfg.Saver == nil {
		cfg.Saver = memory.New()
	}
	if cfg.Tokens == nil {
		cfg.Tokens = tokens
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	e := &env{t: t, srv: srv, saver: cfg.Saver}
	e.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		e.mu.Lock()
		hook := e.served
		e.mu.Unlock()
		if hook != nil {
			hook(r)
		}
	}))
	e.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		e.client.CloseIdleConnections()
		e.hs.Close()
	})
	t.Cleanup(func() { require.NoError(t, srv.Shutdown(context.Background())) })
	return e
}

func workflows(rs ...*graph.Runnable) map[string]*graph.Runnable {
	m := make(map[string]*graph.Runnable, len(rs))
	for _, r := range rs {
		m[r.Name()] = r
	}
	return m
}

// request sends a request with token (none when empty) and a body (a
// string is sent as is, anything else as JSON).
func (e *env) request(method, path, token string, body any, header ...string) *http.Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.hs.URL+path, rd)
	require.NoError(e.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.client.Do(req)
	require.NoError(e.t, err)
	return resp
}

// call sends a request, requires the status, and decodes the JSON answer
// into out (when not nil).
func (e *env) call(method, path, token string, body any, status int, out any) *http.Response {
	e.t.Helper()
	resp := e.request(method, path, token, body)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, status, resp.StatusCode, "%s %s: %s", method, path, data)
	if out != nil {
		require.NoError(e.t, json.Unmarshal(data, out), "%s", data)
	}
	return resp
}

// fails sends a request and requires an error answer with exactly this
// status and body.
func (e *env) fails(method, path, token string, body any, status int, want server.ErrorDetail) {
	e.t.Helper()
	var got server.ErrorBody
	resp := e.call(method, path, token, body, status, &got)
	assert.Equal(e.t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(e.t, want, got.Error)
}

func (e *env) thread(token, workflow, id string) server.Thread {
	e.t.Helper()
	var th server.Thread
	e.call("POST", "/v1/threads", token, map[string]any{"workflow": workflow, "thread_id": id}, http.StatusCreated, &th)
	return th
}

func (e *env) wait(token, thread string, body any) server.Run {
	e.t.Helper()
	var ru server.Run
	e.call("POST", "/v1/threads/"+thread+"/runs/wait", token, body, http.StatusOK, &ru)
	return ru
}

func (e *env) state(token, thread string) server.Snapshot {
	e.t.Helper()
	var snap server.Snapshot
	e.call("GET", "/v1/threads/"+thread+"/state", token, nil, http.StatusOK, &snap)
	return snap
}

// sse is one server-sent event as a client reads it.
type sse struct {
	ID    string
	Event string
	Data  string
}

func (s sse) event(t *testing.T) server.Event {
	t.Helper()
	var ev server.Event
	require.NoError(t, json.Unmarshal([]byte(s.Data), &ev), s.Data)
	return ev
}

func (s sse) run(t *testing.T) server.Run {
	t.Helper()
	var ru server.Run
	require.NoError(t, json.Unmarshal([]byte(s.Data), &ru), s.Data)
	return ru
}

// readEvents reads server-sent events from r until EOF or until stop
// returns true for one (which is included).
func readEvents(t *testing.T, r io.Reader, stop func(sse) bool) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event == "" && cur.Data == "" {
				continue
			}
			out = append(out, cur)
			if stop != nil && stop(cur) {
				return out
			}
			cur = sse{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected line in the event stream: %q", line)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		require.NoError(t, err)
	}
	return out
}

func names(evs []sse) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Event
	}
	return out
}

// stream sends a request and reads its whole event stream.
func (e *env) stream(method, path, token string, body any, header ...string) []sse {
	e.t.Helper()
	resp := e.request(method, path, token, body, header...)
	defer resp.Body.Close()
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	require.Equal(e.t, "text/event-stream", resp.Header.Get("Content-Type"))
	return readEvents(e.t, resp.Body, nil)
}
