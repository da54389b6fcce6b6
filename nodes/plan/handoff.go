package plan

// Handoff is what a step receives from a step it depends on.
type Handoff struct {
	From    string // step id
	Agent   string
	Title   string
	Summary string
	// Text is the result itself, or an excerpt with a reference.
	Text string
	// Ref is where the full result lives (a board reference), if anywhere.
	Ref string
}

// Handoffs returns what step receives from the steps it depends on that
// are done, in the order of its DependsOn.
func (p *Plan) Handoffs(step Step) []Handoff {
	var hs []Handoff
	for _, d := range step.DependsOn {
		ds := p.Step(d)
		if ds == nil || ds.Result == nil || ds.Result.Status != StepDone {
			continue
		}
		text := ds.Result.Output
		if text == "" {
			text = ds.Result.Summary
		}
		hs = append(hs, Handoff{From: ds.ID, Agent: ds.AgentName, Title: ds.Title, Summary: ds.Result.Summary, Text: text})
	}
	return hs
}
