package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/structured"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/window"
)

// DefaultConfidenceThreshold is the confidence under which a step is sent
// back once with an instruction to go deeper.
const DefaultConfidenceThreshold = 0.8

// StepRun is one step to carry out.
type StepRun struct {
	Agent    *react.Agent
	Plan     *plan.Plan
	Step     plan.Step
	Handoffs []plan.Handoff
	// Extra is more context for the task (board items it may see), as
	// text.
	Extra string
	// Threshold is the confidence under which the step runs once more,
	// deeper (DefaultConfidenceThreshold when 0; negative: never).
	Threshold float64
}

// stepAnswer is the JSON a step's agent ends with.
type stepAnswer struct {
	Reasoning  string   `json:"reasoning" jsonschema:"required,description=What was tried, kept or dropped, and why"`
	Result     string   `json:"result" jsonschema:"required,description=The complete result, in markdown"`
	Summary    string   `json:"summary" jsonschema:"required,description=One or two sentences with the key finding"`
	Confidence float64  `json:"confidence" jsonschema:"required,minimum=0,maximum=1"`
	Sources    []string `json:"sources,omitempty"`
}

// RunStep carries out a step with its agent and returns its result: the
// agent sees only the task rendered from the step and its handoffs, never
// another agent's transcript. A result under the confidence threshold is
// sent back once with a deeper instruction, and the second one counts. A
// failure is a result with status failed, not an error; the error return
// is for a run that must stop (its context ended, an interrupt). The whole
// step goes through the journal, so a finished step is never run again.
func RunStep(ctx context.Context, r StepRun) (plan.StepResult, error) {
	id := r.Step.ID
	return graph.Do(ctx, "step "+id, func(ctx context.Context) (plan.StepResult, error) {
		return CarryOut(graph.WithScope(ctx, "step:"+id), r)
	})
}

// CarryOut is RunStep without a journal entry or a scope of its own: it
// carries out the step in ctx as it is, for a caller that runs the step as
// a task of its node (graph.Schedule journals the task's value and scopes
// its events under the task's path, "step:<id>" for the team's steps).
// The calls inside are journaled, each under ctx's scope.
func CarryOut(ctx context.Context, r StepRun) (plan.StepResult, error) {
	threshold := r.Threshold
	if threshold == 0 {
		threshold = DefaultConfidenceThreshold
	}
	task := RenderTask(r)
	ans, err := r.attempt(ctx, task, "")
	if err != nil {
		return failed(ctx, err, 1)
	}
	if ans.Confidence >= threshold || threshold < 0 {
		return done(ans, 1), nil
	}
	deeper := fmt.Sprintf("%s\n# Go deeper\nA first attempt reached confidence %.2f with this summary: %s\nIts reasoning: %s\n"+
		"Check the key claims, fill what is missing, correct what is wrong, and only then answer in the same JSON form.",
		task, ans.Confidence, oneLine(ans.Summary), oneLine(ans.Reasoning))
	ans2, err := r.attempt(ctx, deeper, "#2")
	if err != nil {
		return failed(ctx, err, 2)
	}
	return done(ans2, 2), nil
}

func done(a stepAnswer, attempts int) plan.StepResult {
	return plan.StepResult{Status: plan.StepDone, Summary: oneLine(a.Summary), Output: a.Result, Confidence: a.Confidence,
		Reasoning: a.Reasoning, Sources: a.Sources, Attempts: attempts}
}

// failed turns an agent's failure into a failed result; a cancelled run,
// an interrupt or a budget that stops the run stays an error.
func failed(ctx context.Context, err error, attempts int) (plan.StepResult, error) {
	var ie *graph.InterruptError
	if ctx.Err() != nil || errors.As(err, &ie) || errors.Is(err, llm.ErrBudgetExceeded) || errors.Is(err, llm.ErrUnpriced) {
		return plan.StepResult{}, err
	}
	return plan.StepResult{Status: plan.StepFailed, Error: err.Error(), Attempts: attempts}, nil
}

// attempt runs the agent once and reads its JSON answer, asking once more
// for the JSON when the agent answered in another form.
func (r StepRun) attempt(ctx context.Context, task, suffix string) (stepAnswer, error) {
	res, err := r.Agent.Run(ctx, react.Task{Input: task, Parts: r.contextParts(), Scope: "agent:" + r.Agent.Name() + suffix, Run: r.Step.ID + suffix})
	if err != nil {
		return stepAnswer{}, err
	}
	if ans, ok := parseAnswer(res.Output); ok {
		return ans, nil
	}
	ctx = llm.WithAgent(graph.WithScope(ctx, "format"+suffix), r.Agent.Name())
	msgs := append(res.Messages, llms.TextParts(llms.ChatMessageTypeHuman,
		"Restate your final answer as the JSON object described in the task."))
	ans, err := structured.Generate[stepAnswer](ctx, r.Agent.Model(), msgs)
	if err != nil {
		return stepAnswer{}, fmt.Errorf("nodes: step %s: the agent's answer is not in the required form: %w", r.Step.ID, err)
	}
	return ans, nil
}

// parseAnswer reads a step's answer from the agent's last reply: the JSON
// value in it that matches stepAnswer's schema, wherever it is — a chatty
// model's "[1]" citation or example object before it does not hide it.
func parseAnswer(out string) (stepAnswer, bool) {
	a, err := structured.Decode[stepAnswer](out, structured.WithSchema(answerSchema()))
	if err != nil || strings.TrimSpace(a.Result) == "" {
		return stepAnswer{}, false
	}
	if a.Summary == "" {
		a.Summary = a.Result
	}
	return a, true
}

// answerSchema is stepAnswer's schema with other properties allowed: a
// model that adds a field of its own still answered.
var answerSchema = sync.OnceValue(func() []byte {
	raw, err := structured.SchemaFor[stepAnswer]()
	if err != nil {
		panic(err) // a fixed Go type: fails every test if wrong
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		panic(err)
	}
	delete(s, "additionalProperties")
	out, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return out
})

// contextParts returns the handoffs and notes as window parts, for an
// agent with a window; without one they are in the task text.
func (r StepRun) contextParts() []window.Part {
	if !r.Agent.HasWindow() {
		return nil
	}
	var ps []window.Part
	for _, h := range r.Handoffs {
		ps = append(ps, window.Part{Name: "handoff:" + h.From, Kind: window.KindHandoff, Text: handoffText(h), Ref: h.Ref})
	}
	if r.Extra != "" {
		ps = append(ps, window.Part{Name: "notes", Kind: window.KindMemory, Text: "## Shared notes\n" + r.Extra})
	}
	return ps
}

func handoffText(h plan.Handoff) string {
	return fmt.Sprintf("### Result of step %s, %q (agent %s), which your task builds on\n%s\n", h.From, h.Title, h.Agent, h.Text)
}

// RenderTask renders the task an agent receives for a step: the step
// itself, the plan's title and locale, and — for an agent without a window,
// which gets them as parts of their own — the handoffs of the steps it
// depends on and the notes it may see. Nothing else.
func RenderTask(r StepRun) string {
	note := ""
	if r.Step.Note != "" {
		note = "\nNote: " + r.Step.Note + "\n"
	}
	var hs strings.Builder
	if len(r.Handoffs) > 0 && !r.Agent.HasWindow() {
		hs.WriteString("\n## Results you build on\n")
		for _, h := range r.Handoffs {
			hs.WriteString(handoffText(h))
		}
	}
	if r.Extra != "" && !r.Agent.HasWindow() {
		hs.WriteString("\n## Shared notes\n" + r.Extra + "\n")
	}
	title, locale := "", "en-US"
	if r.Plan != nil {
		title = r.Plan.Title
		if r.Plan.Locale != "" {
			locale = r.Plan.Locale
		}
	}
	if r.Step.NeedSearch {
		note += "\nThis step needs current information: search before you answer, and cite what you use.\n"
	}
	return prompt("step", map[string]string{
		"title": r.Step.Title, "description": r.Step.Description, "note": note,
		"id": r.Step.ID, "plan": title, "locale": locale, "handoffs": hs.String(),
	})
}

// oneLine puts s on one line of at most 240 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 240 {
		s = string(r[:239]) + "…"
	}
	return s
}
