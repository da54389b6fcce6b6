package workflows

import (
	"context"
	"fmt"
	"slices"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memories"
	"github.com/coorflow/coorflow/window"
)

// checkContexts checks what the file's context sections name:
// context.clear.exclude lists tools whose results are never cleared, so
// each must be a tool an agent of this file can call (a misspelt name
// would silently clear the results the author meant to keep).
func (f *File) checkContexts(ps *problems) {
	f.checkContextTools(ps, "/settings/context", f.spec.Settings.Context)
	for _, n := range f.spec.nodes {
		f.checkContextTools(ps, n.Ptr+"/context", n.Spec.Context)
	}
}

func (f *File) checkContextTools(ps *problems, ptr string, cs *contextSpec) {
	if cs == nil {
		return
	}
	// The tools the window and memory give agents beside the file's own.
	given := []string{window.ReadContextName, memories.RememberTool, memories.RecallTool}
	for i, name := range cs.Clear.Exclude {
		if f.knowsTool(name) || slices.Contains(given, name) {
			continue
		}
		l := f.doc.loc(fmt.Sprintf("%s/clear/exclude/%d", ptr, i))
		ps.at(l.val, l.path, "context.clear.exclude names unknown tool %q%s", name,
			suggest(name, append(f.toolChoices(), given...), "the tools agents of this file can call"))
	}
}

// Context returns the context budgets of the file's settings.context as a
// window configuration (policies only: no offloader, no summarizer), with
// the window's defaults where the file says nothing.
func (f *File) Context() window.Config {
	c, _ := f.nodeContext(nil)
	return c
}

// nodeContext returns the window configuration of node n (nil: the file's
// own): settings.context, then what the node's context section sets on
// top of it — a value the node gives replaces the file's, a policy either
// disables stays disabled. on is false when either turns the window off
// (context: {disabled: true}): the node's agents then get their whole
// context as it is.
func (f *File) nodeContext(n *fileNode) (c window.Config, on bool) {
	on = true
	specs := []*contextSpec{f.spec.Settings.Context}
	if n != nil {
		specs = append(specs, n.Spec.Context)
	}
	for _, cs := range specs {
		if cs == nil {
			continue
		}
		on = on && !cs.Disabled
		applyContext(&c, cs)
	}
	return c, on
}

// applyContext sets on c what cs gives.
func applyContext(c *window.Config, cs *contextSpec) {
	setF := func(dst *float64, v float64) {
		if v > 0 {
			*dst = v
		}
	}
	setI := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	c.Steps.Disabled = c.Steps.Disabled || cs.Steps.Disabled
	setF(&c.Steps.Threshold, cs.Steps.Threshold)
	setI(&c.Steps.Full, cs.Steps.Full)
	setI(&c.Steps.Summarized, cs.Steps.Summarized)
	c.Offload.Disabled = c.Offload.Disabled || cs.Offload.Disabled
	setI(&c.Offload.Tokens, cs.Offload.Tokens)
	setI(&c.Offload.PreviewLines, cs.Offload.PreviewLines)
	setI(&c.Offload.OutputBytes, cs.Offload.OutputBytes)
	setI(&c.Offload.SummaryBytes, cs.Offload.SummaryBytes)
	c.Clear.Disabled = c.Clear.Disabled || cs.Clear.Disabled
	setF(&c.Clear.Threshold, cs.Clear.Threshold)
	setI(&c.Clear.KeepTurns, cs.Clear.KeepTurns)
	setI(&c.Clear.MinTokens, cs.Clear.MinTokens)
	if cs.Clear.Exclude != nil {
		c.Clear.Exclude = append([]string(nil), cs.Clear.Exclude...)
	}
	c.History.Disabled = c.History.Disabled || cs.History.Disabled
	setF(&c.History.Threshold, cs.History.Threshold)
	setF(&c.History.Keep, cs.History.Keep)
}

// reactWindow gives a react node's agent its window, unless the node's
// context (or settings.context) says disabled: large tool results are
// offloaded to the thread's mission board and old ones cleared, both
// readable back with read_context, and the history is summarized near
// the model's input window by the basic tier (the node's model when the
// file has no basic tier). The agent's tools are
// copied first, so that each run's read_context reads its own thread.
func (b *build) reactWindow(ctx context.Context, n *fileNode, cfg *react.Config) error {
	wc, on := b.f.nodeContext(n)
	if !on {
		return nil
	}
	board, err := factory.MissionBoard(ctx, b.env.Store, b.reg.OwnerOf(ctx))
	if err != nil {
		return fmt.Errorf("workflows: node %q: %w", n.Name, err)
	}
	summarizer, err := b.env.Models.Model(llm.TierBasic)
	if err != nil {
		summarizer = cfg.Model // no basic tier: the node's own model summarizes
	}
	tier := llm.Tier(b.f.tierOf(n))
	bs := window.NewBoardStore(board, store.Viewer{Task: n.Name, Agent: n.Name})
	cfg.Tools, _ = cfg.Tools.Subset(cfg.Tools.Names()...)
	if err := factory.GiveWindow(cfg, wc, bs, summarizer, b.env.Models.Profile(tier).MaxInputTokens); err != nil {
		return fmt.Errorf("workflows: node %q: %w", n.Name, err)
	}
	return nil
}
