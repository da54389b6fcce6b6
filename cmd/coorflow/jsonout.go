package main

import (
	"encoding/json"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/server"
)

// jsonPrinter prints each event as a JSON line, in the shape of the HTTP
// API's events (server.Event), then a result line.
type jsonPrinter struct {
	r   *runner
	enc *json.Encoder
	id  int64
}

// runResult is the last line of coorflow run --json.
type runResult struct {
	// Kind is "result".
	Kind     string `json:"kind"`
	Workflow string `json:"workflow"`
	Thread   string `json:"thread"`
	// RunID is the recorded run (its last one, when answers on a terminal
	// continued it); empty when the run was not recorded.
	RunID string `json:"run_id,omitempty"`
	// Status is done, interrupted, error or cancelled.
	Status     string                `json:"status"`
	Output     any                   `json:"output,omitempty"`
	Interrupts []graph.InterruptInfo `json:"interrupts,omitempty"`
	// Resume is the command that answers the questions.
	Resume string `json:"resume,omitempty"`
	Error  string `json:"error,omitempty"`
	// Usage is what the model calls of the invocation spent.
	Usage llm.Spend `json:"usage"`
	// Demo is true when a demo model answered (a script or the reactive demo).
	Demo bool   `json:"demo,omitempty"`
	DB   string `json:"db"`
}

func newJSONPrinter(r *runner) *jsonPrinter {
	return &jsonPrinter{r: r, enc: json.NewEncoder(r.app.stdout)}
}

// shows: every event, the tokens only with --stream.
func (p *jsonPrinter) shows(name string) bool { return name != llm.EventToken || p.r.flags.stream }

func (p *jsonPrinter) begin() {}

func (p *jsonPrinter) event(ev graph.Event) {
	p.id++
	out := server.Event{ID: p.id, RunID: p.r.runID, Kind: ev.Name(), Path: ev.Path, Node: ev.Node, Step: ev.Step,
		Attempt: ev.Attempt, Time: ev.Time, Data: ev.Data}
	for _, w := range ev.Writes {
		out.Writes = append(out.Writes, server.Write{Channel: w.Channel(), Value: w.Value()})
	}
	if ev.Duration > 0 {
		out.DurationMS = float64(ev.Duration) / float64(time.Millisecond)
	}
	switch ev.Kind {
	case graph.EventValues, graph.EventRunEnd, graph.EventInterrupt:
		if b, err := json.Marshal(ev.State); err == nil {
			out.State = b
		}
	}
	if ev.Err != nil {
		out.Error = ev.Err.Error()
	}
	if err := p.enc.Encode(out); err != nil {
		out.Data, out.DataError = nil, err.Error()
		_ = p.enc.Encode(out)
	}
}

func (p *jsonPrinter) result(status string) runResult {
	return runResult{Kind: "result", Workflow: p.r.wf.file.Name(), Thread: p.r.thread, RunID: p.r.runID, Status: status,
		Usage: p.r.used.Spent(), Demo: p.r.demo, DB: p.r.db.where}
}

func (p *jsonPrinter) question(graph.InterruptInfo) {}

func (p *jsonPrinter) waiting(ins []graph.InterruptInfo, _ bool) {
	res := p.result("interrupted")
	res.Interrupts, res.Resume = ins, p.r.resumeCommand(ins)
	_ = p.enc.Encode(res)
}

func (p *jsonPrinter) done(s graph.State) {
	res := p.result("done")
	res.Output, _ = s.Value(p.r.wf.file.OutputChannel())
	_ = p.enc.Encode(res)
}

func (p *jsonPrinter) failed(err error, cancelled bool) {
	res := p.result("error")
	if cancelled {
		res.Status = "cancelled"
	}
	res.Error = err.Error()
	_ = p.enc.Encode(res)
}
