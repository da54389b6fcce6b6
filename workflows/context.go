package workflows

import "github.com/coorflow/coorflow/window"

// Context returns the context budgets of the file's settings.context as a
// window configuration (policies only: no offloader, no summarizer), with
// the window's defaults where the file says nothing.
func (f *File) Context() window.Config {
	var c window.Config
	cs := f.spec.Settings.Context
	if cs == nil {
		return c
	}
	c.Steps = window.StepsPolicy{Disabled: cs.Steps.Disabled, Threshold: cs.Steps.Threshold, Full: cs.Steps.Full, Summarized: cs.Steps.Summarized}
	c.Offload = window.OffloadPolicy{Disabled: cs.Offload.Disabled, Tokens: cs.Offload.Tokens, PreviewLines: cs.Offload.PreviewLines,
		OutputBytes: cs.Offload.OutputBytes, SummaryBytes: cs.Offload.SummaryBytes}
	c.History = window.HistoryPolicy{Disabled: cs.History.Disabled, Threshold: cs.History.Threshold, Keep: cs.History.Keep}
	return c
}
