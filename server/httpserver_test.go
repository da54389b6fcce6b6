package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

// clientPatience bounds how long a test client waits for the server to
// close a connection: far longer than the timeouts the tests configure.
const clientPatience = time.Minute

// serveLimited serves h through server.NewHTTPServer on loopback and
// returns its address.
func serveLimited(t *testing.T, h http.Handler, limits server.Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := server.NewHTTPServer(h, limits)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, hs.Close())
		assert.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return ln.Addr().String()
}

// closedByServer reads from c until the server closes it, and fails if
// the client gives up first.
func closedByServer(c net.Conn) error {
	if err := c.SetReadDeadline(time.Now().Add(clientPatience)); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("the server kept the connection open for %v", clientPatience)
	}
	return nil // EOF or reset: closed
}

func TestIdleAndSlowBodyConnectionsAreClosed(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t))})
	// The idle client's request must arrive within the read timeouts,
	// from a goroutine among 200 on a machine that may be busy: they are
	// long enough for that; the slow body's connection is closed by
	// ReadTimeout, the idle one by IdleTimeout.
	addr := serveLimited(t, e.srv, server.Limits{
		ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, IdleTimeout: 200 * time.Millisecond,
	})

	const n = 100
	idle := func() error { // one request, then nothing
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: coorflow\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			return fmt.Errorf("healthz: %s (close %v)", resp.Status, resp.Close)
		}
		return closedByServer(c)
	}
	slowBody := func() error { // headers, then one byte of a 1000-byte body
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := io.WriteString(c, "POST /v1/threads HTTP/1.1\r\nHost: coorflow\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
			return err
		}
		return closedByServer(c)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for range n {
		wg.Go(func() { errs <- idle() })
		wg.Go(func() { errs <- slowBody() })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestStreamsAndWaitsOutliveTheHTTPTimeouts(t *testing.T) {
	b := newBlocker(t)
	e := newEnv(t, server.Config{Workflows: workflows(b.r), Heartbeat: 5 * time.Millisecond})
	addr := serveLimited(t, e.srv, server.Limits{ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond})
	base := "http://" + addr
	e.thread(alice, "block", "t")

	waited := make(chan server.Run, 1)
	go func() {
		var ru server.Run
		defer func() { waited <- ru }()
		req, _ := http.NewRequest("POST", base+"/v1/threads/t/runs/wait", strings.NewReader(`{"input": {}}`))
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := e.client.Do(req)
		if err != nil {
			ru.Status = err.Error()
			return
		}
		defer resp.Body.Close()
		ru.Status = resp.Status
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&ru); err != nil {
				ru.Status = err.Error()
			}
		}
	}()
	b.waitEntered(t)
	var th server.Thread
	e.call("GET", "/v1/threads/t", alice, nil, http.StatusOK, &th)

	req, err := http.NewRequestWithContext(t.Context(), "GET", base+"/v1/threads/t/runs/"+th.ActiveRun+"/stream?kinds=run_end", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := e.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	// 40 heartbeats 5ms apart: the stream is older than both timeouts.
	for pings := 0; pings < 40 && sc.Scan(); {
		if sc.Text() == ": ping" {
			pings++
		}
	}
	b.open()
	rest := readEvents(t, resp.Body, nil)
	assert.Equal(t, []string{"run_end", "end"}, names(rest), "the stream went on to the end")
	assert.Equal(t, "done", (<-waited).Status, "runs/wait answered after the timeouts")
}

func TestAStreamClientThatStopsReadingIsDroppedAndTheRunGoesOn(t *testing.T) {
	dropped := make(chan struct{})
	g := graph.New("flood", logKey)
	g.AddNode("flood", func(ctx context.Context, s graph.State) (graph.Command, error) {
		chunk := strings.Repeat("x", 256<<10)
		for {
			select {
			case <-dropped:
				return graph.Update(graph.AppendTo(logKey, "flooded")), nil
			case <-ctx.Done():
				return graph.Command{}, ctx.Err()
			default:
				graph.Emit(ctx, chunk)
			}
		}
	})
	g.AddEdge(graph.Start, "flood")
	g.AddEdge("flood", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	e := newEnv(t, server.Config{Workflows: workflows(r), WriteTimeout: 100 * time.Millisecond})
	e.onServed(func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/runs/stream") {
			close(dropped)
		}
	})
	e.thread(alice, "flood", "t")

	c, err := net.Dial("tcp", strings.TrimPrefix(e.hs.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "POST /v1/threads/t/runs/stream HTTP/1.1\r\nHost: coorflow\r\nAuthorization: Bearer %s\r\nContent-Length: 13\r\n\r\n{\"input\": {}}", alice)
	require.NoError(t, err)
	// The client reads nothing more.
	timer := time.NewTimer(clientPatience)
	defer timer.Stop()
	select {
	case <-dropped:
	case <-timer.C:
		t.Fatalf("the server still writes to a client that stopped reading %v ago", clientPatience)
	}

	var runs server.RunList
	e.call("GET", "/v1/threads/t/runs", alice, nil, http.StatusOK, &runs)
	require.Len(t, runs.Runs, 1)
	evs := e.stream("GET", "/v1/threads/t/runs/"+runs.Runs[0].ID+"/stream?kinds=run_end", alice, nil)
	ru := evs[len(evs)-1].run(t)
	assert.Equal(t, "done", ru.Status, "the run went on without its client")
	assert.JSONEq(t, `{"log": ["flooded"]}`, string(ru.Values))
}
