// Command embed is a service that embeds coorflow: it loads a workflow
// file, registers the Go function and the Go tool the file names, and
// serves it with the engine's HTTP API (runs, event streams, resumes),
// keeping threads in SQLite.
//
//	COORFLOW_TOKEN=dev go run ./examples/embed -addr :8080
//	curl -H 'Authorization: Bearer dev' -d '{"workflow":"triage","thread_id":"t1"}' localhost:8080/v1/threads
//	curl -H 'Authorization: Bearer dev' -d '{"input":{"ticket":"Where is my order 42?"}}' localhost:8080/v1/threads/t1/runs/wait
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"

	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/workflows"
)

// escalate is the go node: bugs become incidents.
func escalate(ctx context.Context, s graph.State) (graph.Command, error) {
	ticket, _ := s.Value("ticket")
	id := fmt.Sprintf("INC-%d", len(fmt.Sprint(ticket)))
	return graph.Update(workflows.Write("reply", "We opened incident "+id+"; an engineer will contact you today.")), nil
}

// lookupOrder is the Go tool the file declares.
var lookupOrder = tools.Typed("lookup_order", "Looks an order up by its number.",
	json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`),
	func(ctx context.Context, a struct{ Order string }) (string, error) {
		return "Order " + a.Order + ": shipped yesterday, arrives Friday.", nil
	})

// newService loads the workflow and returns the HTTP API over it.
func newService(ctx context.Context, file string, saver graph.Saver, tokens map[string]string) (*server.Server, error) {
	reg, err := tools.NewRegistry(lookupOrder)
	if err != nil {
		return nil, err
	}
	f, err := workflows.Load(file, workflows.WithTools(reg), workflows.WithFuncs(map[string]graph.NodeFunc{"escalate": escalate}))
	if err != nil {
		return nil, err
	}
	models, err := f.Resolve(ctx, workflows.ModelOptions{})
	if err != nil {
		return nil, err
	}
	if models.Demo {
		log.Printf("no model provider (%s): the scripted demo model answers", models.Reason)
	}
	r, err := f.Compile(ctx, workflows.Env{Models: models.Models})
	if err != nil {
		return nil, err
	}
	return server.New(server.Config{Workflows: map[string]*graph.Runnable{f.Name(): r}, Saver: saver, Tokens: tokens})
}

// dir is the example's directory, where workflow.yaml is.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

func main() {
	addr := flag.String("addr", ":8080", "listen address")
	db := flag.String("db", filepath.Join(os.TempDir(), "coorflow-embed.db"), "SQLite file for threads")
	flag.Parse()
	token := os.Getenv("COORFLOW_TOKEN")
	if token == "" {
		log.Fatal("set COORFLOW_TOKEN: clients send it as Authorization: Bearer <token>")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	saver, err := sqlite.Open(ctx, *db)
	if err != nil {
		log.Fatal(err)
	}
	defer saver.Close()
	srv, err := newService(ctx, filepath.Join(dir(), "workflow.yaml"), saver, map[string]string{token: "default"})
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Addr: *addr, Handler: srv}
	go func() {
		<-ctx.Done()
		_ = hs.Shutdown(context.Background())
		_ = srv.Shutdown(context.Background())
	}()
	log.Printf("serving triage on %s", *addr)
	if err := hs.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
