package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

func Example() {
	greeting := graph.NewKey[string]("greeting")
	g := graph.New("hello", greeting)
	g.AddNode("greet", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(greeting.Set("hello, " + greeting.Get(s))), nil
	})
	g.AddEdge(graph.Start, "greet")
	g.AddEdge("greet", graph.End)
	wf, err := g.Compile()
	if err != nil {
		panic(err)
	}
	srv, err := server.New(server.Config{
		Workflows: map[string]*graph.Runnable{"hello": wf},
		Saver:     memory.New(),
		Tokens:    map[string]string{"secret": "alice"},
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	post := func(path, body string) (int, string) {
		req, _ := http.NewRequest("POST", hs.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	code, _ := post("/v1/threads", `{"workflow": "hello", "thread_id": "t1"}`)
	fmt.Println(code)
	code, run := post("/v1/threads/t1/runs/wait", `{"input": {"greeting": "world"}}`)
	fmt.Println(code, strings.Contains(run, `"status":"done"`), strings.Contains(run, `"values":{"greeting":"hello, world"}`))
	// Output:
	// 201
	// 200 true true
}
