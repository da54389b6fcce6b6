package workflows

import (
	"context"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
)

// DemoModel is a scripted model that plays its script once per thread: a
// run of a new thread starts the script from its beginning, so a server
// can run the demo for many clients, and a thread resumed later goes on
// where it stopped. Calls made outside a run share one script.
type DemoModel struct {
	script scripted.Script
	mu     sync.Mutex
	models map[string]*scripted.Model
}

// NewDemoModel returns a DemoModel playing script.
func NewDemoModel(script scripted.Script) *DemoModel {
	return &DemoModel{script: script, models: map[string]*scripted.Model{}}
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

func (d *DemoModel) model(ctx context.Context) *scripted.Model {
	info, _ := graph.TaskOf(ctx)
	return d.Thread(info.Thread)
}

// GenerateContent answers from the script of the calling run's thread.
func (d *DemoModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	return d.model(ctx).GenerateContent(ctx, msgs, opts...)
}

// Call answers a single prompt from the script of the calling run's
// thread.
func (d *DemoModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return d.model(ctx).Call(ctx, prompt, opts...)
}
