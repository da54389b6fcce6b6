package plan

import (
	"fmt"
	"strings"
)

// Finding is the result of one step, kept across plans for the reporter.
type Finding struct {
	StepID     string   `json:"step_id"`
	Title      string   `json:"title"`
	Agent      string   `json:"agent"`
	Status     string   `json:"status"`
	Summary    string   `json:"summary"`
	Output     string   `json:"output,omitempty"`
	Ref        string   `json:"ref,omitempty"`
	Confidence float64  `json:"confidence"`
	Sources    []string `json:"sources,omitempty"`
	Error      string   `json:"error,omitempty"`
	// Turn is the turn of the conversation whose plan the step belongs
	// to (0 when the workflow counts no turns).
	Turn int `json:"turn,omitempty"`
}

// Finding returns the finding of a step that has a result.
func (s Step) Finding() Finding {
	r := s.Result
	return Finding{StepID: s.ID, Title: s.Title, Agent: s.AgentName, Status: r.Status, Summary: r.Summary,
		Output: r.Output, Ref: r.Ref, Confidence: r.Confidence, Sources: r.Sources, Error: r.Error}
}

// ResultsView renders findings the way the planner sees them: status and
// a one-line summary per step, with the reference of the full result when
// a board holds it — results, not process.
func ResultsView(fs []Finding) string {
	if len(fs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, f := range fs {
		line := f.Summary
		if f.Status != StepDone {
			line = f.Error
		}
		fmt.Fprintf(&b, "- [%s] %s %s (agent %s, confidence %.2f): %s", f.Status, f.StepID, f.Title, f.Agent, f.Confidence, oneLine(line))
		if f.Ref != "" {
			fmt.Fprintf(&b, " (ref: %s)", f.Ref)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// oneLine puts s on one line of at most 240 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 240 {
		s = string(r[:239]) + "…"
	}
	return s
}

// SkipDependents marks as skipped every step without a result that
// depends, directly or not, on a step that did not succeed, and returns
// their findings.
func (p *Plan) SkipDependents() []Finding {
	var out []Finding
	for changed := true; changed; {
		changed = false
		for i := range p.Steps {
			st := &p.Steps[i]
			if st.Result != nil {
				continue
			}
			for _, d := range st.DependsOn {
				ds := p.Step(d)
				if ds != nil && ds.Result != nil && ds.Result.Status != StepDone {
					st.Result = &StepResult{Status: StepSkipped, Error: fmt.Sprintf("step %s, which it needs, did not complete", d)}
					out = append(out, st.Finding())
					changed = true
					break
				}
			}
		}
	}
	return out
}
