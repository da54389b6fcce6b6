package workflows

import (
	"context"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

// DemoModel is a scripted model that plays its script once per thread: a
// run of a new thread starts the script from its beginning, so a server
// can run the demo for many clients, and a thread resumed later goes on
// where it stopped. Calls made outside a run share one script.
//
// A script written for some requests only (scripted.Script.InputContains)
// plays for a thread whose request, read from the first call that shows
// it (the coordinator's, or one with a "Request" section), holds its
// words; any other thread is answered by the fallback model (the file's
// reactive demo), so a request is never answered with a report about
// another one.
type DemoModel struct {
	script   scripted.Script
	fallback llms.Model
	mu       sync.Mutex
	models   map[string]*scripted.Model
	other    map[string]bool // threads the fallback answers
}

// NewDemoModel returns a DemoModel playing script.
func NewDemoModel(script scripted.Script) *DemoModel {
	return &DemoModel{script: script, models: map[string]*scripted.Model{}, other: map[string]bool{}}
}

// WithFallback sets the model that answers the threads whose request the
// script was not written for, and returns d. Without one the script
// answers every thread.
func (d *DemoModel) WithFallback(m llms.Model) *DemoModel {
	d.fallback = m
	return d
}

// Thread returns the scripted model of a thread, for inspection.
func (d *DemoModel) Thread(thread string) *scripted.Model {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := d.models[thread]
	if !ok {
		m = scripted.New(d.script)
		d.models[thread] = m
	}
	return m
}

// model returns the model answering the calling run's thread: the script
// or the fallback, decided for the thread by the first call that shows
// its request.
func (d *DemoModel) model(ctx context.Context, msgs []llms.MessageContent) llms.Model {
	info, _ := graph.TaskOf(ctx)
	d.mu.Lock()
	other, decided := d.other[info.Thread]
	if !decided && d.fallback != nil {
		agent := llm.AgentFrom(ctx)
		user := lastUser(msgs)
		switch {
		case agent == "coordinator" || section(user, isRequestHeading) != "":
			// The call holds the thread's request: decide for the thread.
			other, decided = !d.script.For(requestOf(user)), true
		default:
			// A call that does not show the request (a thread continued in
			// another process at a builder, say): the script answers the
			// agents it has replies for, the fallback the others.
			_, scripted := d.script.Agents[agent]
			other = !scripted && d.script.Default == nil
		}
		if decided {
			d.other[info.Thread] = other
		}
	}
	d.mu.Unlock()
	if other {
		return d.fallback
	}
	return d.Thread(info.Thread)
}

// GenerateContent answers from the script of the calling run's thread,
// or from the fallback when the script is not for the thread's request.
func (d *DemoModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	return d.model(ctx, msgs).GenerateContent(ctx, msgs, opts...)
}

// Call answers a single prompt as GenerateContent does.
func (d *DemoModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, d, prompt, opts...)
}
