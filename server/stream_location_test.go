package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/server"
)

// TestEveryStreamSaysWhereToReattachOnAnyReplica: each way to stream a
// run — /v1 and Platform, creating the run or joining it, and the
// Platform's stateless POST /runs/stream — answers with a Location. A client whose stream on replica A breaks after an event
// GETs that Location on replica B (with the query it sent, as the
// LangGraph SDK does) with that event's id as Last-Event-ID and gets the
// rest of the run's events: with what it had, the whole
// stream, each event once.
func TestEveryStreamSaysWhereToReattachOnAnyReplica(t *testing.T) {
	cases := []struct {
		name string
		// open starts a run of gate on a and opens a stream of it; it
		// returns the stream's response and the run's thread.
		open func(t *testing.T, a *env) (*http.Response, string)
		// location is where the stream of run id on thread th is.
		location string
	}{
		{"v1 create", func(t *testing.T, a *env) (*http.Response, string) {
			th := v1Thread(t, a)
			return a.request("POST", "/v1/threads/"+th+"/runs/stream", alice, map[string]any{"input": map[string]any{"text": "hi"}}), th
		}, "/v1/threads/%s/runs/%s/stream"},
		{"v1 join", func(t *testing.T, a *env) (*http.Response, string) {
			th := v1Thread(t, a)
			var run server.Run
			a.call("POST", "/v1/threads/"+th+"/runs", alice, map[string]any{"input": map[string]any{"text": "hi"}}, http.StatusAccepted, &run)
			return a.request("GET", "/v1/threads/"+th+"/runs/"+run.ID+"/stream", alice, nil), th
		}, "/v1/threads/%s/runs/%s/stream"},
		{"platform create", func(t *testing.T, a *env) (*http.Response, string) {
			th := a.platformThread(alice, nil)
			body := map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "hi"}, "stream_mode": []string{"values", "updates", "debug"}}
			return a.request("POST", "/threads/"+th+"/runs/stream", alice, body), th
		}, "/threads/%s/runs/%s/stream"},
		{"platform join", func(t *testing.T, a *env) (*http.Response, string) {
			th := a.platformThread(alice, nil)
			var run struct {
				RunID string `json:"run_id"`
			}
			a.call("POST", "/threads/"+th+"/runs", alice, map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "hi"}}, http.StatusOK, &run)
			return a.request("GET", "/threads/"+th+"/runs/"+run.RunID+"/stream?stream_mode=values&stream_mode=debug", alice, nil), th
		}, "/threads/%s/runs/%s/stream"},
		{"platform stateless", func(t *testing.T, a *env) (*http.Response, string) {
			body := map[string]any{"assistant_id": "gate", "input": map[string]any{"text": "hi"}, "stream_mode": []string{"values", "updates", "debug"}}
			resp := a.request("POST", "/runs/stream", alice, body)
			// Its thread is made for it: the stream's Content-Location
			// names it.
			th, _, _ := strings.Cut(strings.TrimPrefix(resp.Header.Get("Content-Location"), "/threads/"), "/")
			require.NotEmpty(t, th, "Content-Location %q", resp.Header.Get("Content-Location"))
			return resp, th
		}, "/threads/%s/runs/%s/stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			open := make(chan struct{})
			rs := newReplicaSet(t, 2, time.Minute, server.Config{Workflows: workflows(gate(t, open))})
			a, b := rs.envs[0], rs.envs[1]
			resp, th := tc.open(t, a)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			onA := &eventReader{t: t, sc: bufio.NewScanner(resp.Body)}
			// The first of the run's events, before the gate; a Platform
			// stream begins with its metadata.
			var before []sse
			for len(before) == 0 || before[len(before)-1].ID == "" {
				ev, ok := onA.next()
				require.True(t, ok)
				before = append(before, ev)
			}
			resp.Body.Close() // the stream breaks
			loc := resp.Header.Get("Location")
			require.NotEmpty(t, loc, "the stream says where to re-attach")
			assert.Equal(t, fmt.Sprintf(tc.location, th, runOf(t, before)), loc)

			// As the SDK does: the same query, the Location's path.
			if q := resp.Request.URL.RawQuery; q != "" {
				loc += "?" + q
			}
			again := b.request("GET", loc, alice, nil, "Last-Event-ID", before[len(before)-1].ID)
			require.Equal(t, http.StatusOK, again.StatusCode)
			defer again.Body.Close()
			assert.Equal(t, resp.Header.Get("Location"), again.Header.Get("Location"), "a joined stream is its own location")
			// The whole stream, joined while the run goes on (a stateless
			// run's thread is gone once it ends).
			joined := b.openStream("GET", loc, nil)
			close(open)
			rest := (&eventReader{t: t, sc: bufio.NewScanner(again.Body)}).rest()
			whole := joined.rest()
			if before[0].Event == "metadata" {
				require.Equal(t, "metadata", rest[0].Event)
				rest = rest[1:]
			}
			assert.Equal(t, whole, append(before, rest...), "what A sent before the break and B after it is the run's stream, each event once")
		})
	}
}

// v1Thread creates a /v1 thread of gate on e.
func v1Thread(t *testing.T, e *env) string {
	t.Helper()
	var th server.Thread
	e.call("POST", "/v1/threads", alice, map[string]any{"workflow": "gate"}, http.StatusCreated, &th)
	return th.ID
}

// runOf reads the run's id from a stream's first events: a Platform
// stream's metadata, or a /v1 event.
func runOf(t *testing.T, evs []sse) string {
	t.Helper()
	for _, ev := range evs {
		var d struct {
			RunID string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &d))
		if d.RunID != "" {
			return d.RunID
		}
	}
	t.Fatal("no event names the run")
	return ""
}
