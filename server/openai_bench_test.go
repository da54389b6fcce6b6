package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/server"
)

// BenchmarkChatCompletion measures one chat completion of the echo
// workflow, at once or streamed, each a new conversation (a new thread),
// against the same run through /v1: a thread made, then runs/wait.
func BenchmarkChatCompletion(b *testing.B) {
	for _, mode := range []string{"openai", "openai-stream", "v1-wait"} {
		b.Run(mode, func(b *testing.B) {
			srv, err := server.New(server.Config{Workflows: workflows(echoGraph(b)), MCPTools: mcpTools, Saver: memory.New(),
				Tokens: tokens, Logger: slog.New(slog.DiscardHandler), MaxActiveRuns: -1})
			if err != nil {
				b.Fatal(err)
			}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			defer func() { _ = srv.Shutdown(context.Background()) }()
			post := func(path string, body any, want int) {
				data, _ := json.Marshal(body)
				req, _ := http.NewRequest("POST", hs.URL+path, bytes.NewReader(data))
				req.Header.Set("Authorization", "Bearer "+alice)
				resp, err := hs.Client().Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					b.Fatalf("%s: status %d", path, resp.StatusCode)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				switch mode {
				case "v1-wait":
					id := fmt.Sprintf("t%d", i)
					post("/v1/threads", map[string]any{"workflow": "echo", "thread_id": id}, http.StatusCreated)
					post("/v1/threads/"+id+"/runs/wait", map[string]any{"input": map[string]any{"text": "hi"}}, http.StatusOK)
				default:
					post(chatPath, map[string]any{"model": "echo", "stream": mode == "openai-stream",
						"messages": msgs(fmt.Sprintf("hello %d", i))}, http.StatusOK)
				}
			}
		})
	}
}
