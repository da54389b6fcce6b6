// Command quickstart runs a small coorflow graph and prints its events: a
// planner fans out one task per question with Send, the answers are
// appended concurrently, and a writer joins them.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/coorflow/coorflow/graph"
)

var (
	question = graph.NewKey[string]("question")
	answers  = graph.NewKey("answers", graph.Append[string]())
	report   = graph.NewKey[string]("report")
)

func build() (*graph.Runnable, error) {
	g := graph.New("quickstart", question, answers, report)
	g.AddNode("plan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		var ps []graph.Packet
		for _, part := range strings.Split(question.Get(s), " and ") {
			ps = append(ps, graph.To("answer", question.Set(part)))
		}
		return graph.Send(ps...), nil
	}, graph.Destinations("answer"))
	g.AddNode("answer", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(answers, "notes on "+question.Get(s))), nil
	})
	g.AddNode("write", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(report.Set(strings.Join(answers.Get(s), "; "))), nil
	})
	g.AddEdge(graph.Start, "plan")
	g.AddEdge("answer", "write")
	g.AddEdge("write", graph.End)
	return g.Compile()
}

func run(ctx context.Context, w io.Writer, q string) error {
	r, err := build()
	if err != nil {
		return err
	}
	for ev, err := range r.Stream(ctx, graph.Input(question.Set(q)), graph.Events(graph.EventNodeEnd, graph.EventRunEnd)) {
		if err != nil {
			return err
		}
		switch ev.Kind {
		case graph.EventNodeEnd:
			fmt.Fprintf(w, "step %d  %-12s %v\n", ev.Step, ev.Path, ev.Duration.Round(time.Microsecond))
		case graph.EventRunEnd:
			fmt.Fprintf(w, "report: %s\n", report.Get(ev.State))
		}
	}
	return nil
}

func main() {
	q := "graph engines and multi-agent planning"
	if len(os.Args) > 1 {
		q = strings.Join(os.Args[1:], " ")
	}
	if err := run(context.Background(), os.Stdout, q); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}
