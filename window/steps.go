package window

import (
	"fmt"
	"strings"
)

// StepStatus is where a plan step stands.
type StepStatus string

// The step statuses. An empty status reads as done.
const (
	StepDone    StepStatus = "done"
	StepFailed  StepStatus = "failed"
	StepSkipped StepStatus = "skipped"
	StepRunning StepStatus = "running"
	StepPending StepStatus = "pending"
)

// Step is a step of the plan as the window shows it: its result in full,
// its summary, or one line of metadata.
type Step struct {
	ID     string     `json:"id"`
	Title  string     `json:"title"`
	Agent  string     `json:"agent,omitempty"`
	Status StepStatus `json:"status,omitempty"`
	// Result is the step's full result; Summary a short form of it.
	Result  string `json:"result,omitempty"`
	Summary string `json:"summary,omitempty"`
	// Confidence is the agent's own estimate, 0 to 1; 0 means none given.
	Confidence float64 `json:"confidence,omitempty"`
	// Ref is where the full result lives in the store.
	Ref string `json:"ref,omitempty"`
}

func (s Step) status() StepStatus {
	if s.Status == "" {
		return StepDone
	}
	return s.Status
}

// tier is how one completed step is shown.
type tier uint8

const (
	tierFull    tier = iota // the full result
	tierSummary             // the summary and confidence
	tierMeta                // one line of metadata with the reference
)

// tiersFor returns how each of n steps (oldest first) is shown: all in
// full unless compress, else the last p.Full in full, the p.Summarized
// before them as summaries, older ones as metadata.
func tiersFor(n int, p StepsPolicy, compress bool) []tier {
	ts := make([]tier, n)
	if !compress {
		return ts
	}
	for i := range ts {
		switch fromEnd := n - i; {
		case fromEnd <= p.Full:
			ts[i] = tierFull
		case fromEnd <= p.Full+p.Summarized:
			ts[i] = tierSummary
		default:
			ts[i] = tierMeta
		}
	}
	return ts
}

// oneLineRunes caps the one-line summaries of steps.
const oneLineRunes = 200

// renderSteps renders completed steps, oldest first, each at its tier:
// first the metadata lines, then summaries, then full results.
func renderSteps(steps []Step, ts []tier) string {
	if len(steps) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Completed steps, oldest first.\n")
	meta := false
	for i, s := range steps {
		if ts[i] != tierMeta {
			continue
		}
		if !meta {
			b.WriteString("\nEarlier steps, one line each (read a full text with read_context and its ref):\n")
			meta = true
		}
		b.WriteString(metaLine(s))
		b.WriteByte('\n')
	}
	for i, s := range steps {
		switch ts[i] {
		case tierSummary:
			b.WriteString("\n" + stepHeading(s) + " — summary")
			if s.Confidence > 0 {
				fmt.Fprintf(&b, ", confidence %.2f", s.Confidence)
			}
			if s.Ref != "" {
				b.WriteString(", full text: " + s.Ref)
			}
			b.WriteString("\n" + strings.TrimSpace(summaryOf(s)) + "\n")
		case tierFull:
			b.WriteString("\n" + stepHeading(s) + "\n")
			if r := strings.TrimSpace(s.Result); r != "" {
				b.WriteString(r + "\n")
			} else {
				b.WriteString("(no result)\n")
			}
		}
	}
	return b.String()
}

// stepHeading is "## Step <id>: <title> (<agent>) [<status>]", the status
// only when the step did not succeed.
func stepHeading(s Step) string {
	h := "## Step " + s.ID + ": " + s.Title
	if s.Agent != "" {
		h += " (" + s.Agent + ")"
	}
	if st := s.status(); st != StepDone {
		h += " [" + string(st) + "]"
	}
	return h
}

// metaLine is one line of metadata for an old step.
func metaLine(s Step) string {
	line := fmt.Sprintf("- %s %q", s.ID, s.Title)
	if s.Agent != "" {
		line += " by " + s.Agent
	}
	line += ": " + string(s.status())
	if s.Confidence > 0 {
		line += fmt.Sprintf(", confidence %.2f", s.Confidence)
	}
	if s.Ref != "" {
		return line + "; full text: " + s.Ref
	}
	return line + "; no full text kept"
}

// summaryOf returns the step's summary, or the first line of its result.
func summaryOf(s Step) string {
	if strings.TrimSpace(s.Summary) != "" {
		return s.Summary
	}
	if l := oneLine(s.Result, oneLineRunes); l != "" {
		return l
	}
	return "(no summary)"
}

// RenderResults renders the planner's view of the plan's steps: one line
// each with its status, confidence and a one-line summary — results, not
// process, so never a step's full result or transcript.
//
//  1. [done] s1 Collect sources (confidence 0.90): Found 12 sources.
//  2. [pending] s2 Write the report
func RenderResults(steps []Step) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "%d. [%s] %s %s", i+1, s.status(), s.ID, s.Title)
		if s.Confidence > 0 {
			fmt.Fprintf(&b, " (confidence %.2f)", s.Confidence)
		}
		line := oneLine(s.Summary, oneLineRunes)
		if line == "" {
			line = oneLine(s.Result, oneLineRunes)
		}
		if line != "" {
			b.WriteString(": " + line)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// oneLine returns the first non-blank line of s with its spaces collapsed,
// cut to max runes with an ellipsis.
func oneLine(s string, max int) string {
	for line := range strings.Lines(s) {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > max {
			return string(r[:max-1]) + "…"
		}
		return line
	}
	return ""
}
