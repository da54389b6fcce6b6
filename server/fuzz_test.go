package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
)

// jsonRoutes are the routes whose handlers decode a JSON body.
var jsonRoutes = []string{
	"/v1/threads",
	"/v1/threads/t/runs",
	"/v1/threads/t/runs/wait",
	"/v1/threads/t/runs/stream",
	// The Platform API's.
	"/threads",
	"/threads/t/runs",
	"/threads/t/runs/wait",
	"/threads/t/state",
	"/threads/t/history",
	"/threads/search",
	"/assistants/search",
	"/store/items/search",
	"/store/namespaces",
}

// FuzzJSONBodies sends arbitrary bodies to every route that decodes JSON:
// the answer is never a 5xx, a refusal is a JSON error with a code and a
// message, and an acceptance is the JSON (or the event stream) the route
// promises.
//
//	go test -run '^$' -fuzz=FuzzJSONBodies -fuzztime=5s ./server
func FuzzJSONBodies(f *testing.F) {
	srv, err := server.New(server.Config{
		Workflows: workflows(echoGraph(f)), Saver: memory.New(), Tokens: tokens, Logger: slog.New(slog.DiscardHandler), MaxBodyBytes: 64 << 10,
		Store: storemem.New(store.Config{}),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			f.Error(err)
		}
	})
	do := func(path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+alice)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		return w
	}
	if w := do("/v1/threads", `{"workflow": "echo", "thread_id": "t"}`); w.Code != http.StatusCreated {
		f.Fatalf("create the thread: %d %s", w.Code, w.Body)
	}

	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `1e999`, `{"workflow": "echo"}`, `{"workflow": "echo", "thread_id": "../x"}`,
		`{"workflow": "echo", "metadata": {"a": [1, {"b": null}]}}`, `{"input": {"text": "hi"}}`, `{"input": null}`,
		`{"input": {"count": 1.5}}`, `{"input": {"nope": 1}}`, `{"resume": true}`, `{"resume_each": {}}`,
		`{"resume_each": {"x": null}}`, `{"input": {}, "resume": 1}`, `{"input": {"text": "x"}} {}`, `{"input": {"text": "\ud800"}}`,
		`{"assistant_id": "echo", "input": {"text": "hi"}}`, `{"assistant_id": "echo", "command": {"resume": 1}}`,
		`{"assistant_id": "echo", "input": null, "checkpoint_id": "x", "stream_mode": ["values", 1]}`,
		`{"values": {"text": "x"}, "as_node": "upper"}`, `{"limit": -1}`, `{"namespace_prefix": ["a.b"]}`,
		strings.Repeat("[", 20000), `{"workflow": "` + strings.Repeat("é", 100) + `"}`, "\xff\xfe{}",
	} {
		for route := range jsonRoutes {
			f.Add(uint8(route), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := jsonRoutes[int(route)%len(jsonRoutes)]
		w := do(path, string(body))
		if w.Code >= 500 {
			t.Fatalf("POST %s %q: %d %s", path, body, w.Code, w.Body)
		}
		if w.Code < 300 && strings.HasSuffix(path, "/stream") {
			if !bytes.Contains(w.Body.Bytes(), []byte("\nevent: end\n")) {
				t.Fatalf("POST %s %q: a stream without its end event: %s", path, body, w.Body)
			}
			return
		}
		if w.Code >= 400 {
			var e server.ErrorBody
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("POST %s %q: %d without a JSON error: %s", path, body, w.Code, w.Body)
			}
			return
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("POST %s %q: %d answered with invalid JSON: %s", path, body, w.Code, w.Body)
		}
	})
}
