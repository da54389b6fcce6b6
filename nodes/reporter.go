package nodes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/window"
)

// ReporterConfig configures the reporter node.
type ReporterConfig struct {
	Model llms.Model
	Info  llm.ModelInfo
	// Read returns the full text behind a finding's reference (the mission
	// board); nil uses each finding's summary and inline output only.
	Read func(ctx context.Context, ref string) (string, error)
}

// Reporter returns the node that writes the final report from the current
// turn's findings (never from agents' transcripts) and the earlier turns of
// the conversation in summary, with citations listed last and <think>
// blocks removed. When the planner stopped at its round limit with steps
// unfinished, the report ends with a note that says so. It writes Answer,
// appends the report to Messages and ends the turn (CurrentTurn, Turns).
func Reporter(cfg ReporterConfig) (graph.NodeFunc, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("%w: the reporter needs a model", ErrNoModel)
	}
	model := window.Observe(llm.Observe(cfg.Model, cfg.Info))
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		locale := Locale.Get(s)
		if locale == "" {
			locale = "en-US"
		}
		body, sources, err := reportInput(ctx, cfg, s)
		if err != nil {
			return graph.Command{}, err
		}
		msgs := []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, prompt("reporter", map[string]string{"locale": locale})),
			llms.TextParts(llms.ChatMessageTypeHuman, body),
		}
		resp, err := model.GenerateContent(llm.WithAgent(ctx, "reporter"), msgs)
		if err != nil {
			return graph.Command{}, fmt.Errorf("nodes: reporter: %w", err)
		}
		report := withReferences(llm.StripThink(resp.Choices[0].Content), sources)
		if note := CurrentTurn.Get(s).Note; note != "" {
			report += "\n\n_Note: " + note + "._"
		}
		ws := append(endTurn(s, report), Answer.Set(report), Messages.Set([]ChatMessage{{Role: "assistant", Content: report}}))
		return graph.Update(ws...), nil
	}, nil
}

func reportInput(ctx context.Context, cfg ReporterConfig, s graph.State) (string, []string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Request\n%s\n", Request.Get(s))
	if p := PlanKey.Get(s); p != nil {
		fmt.Fprintf(&b, "\n# Plan\n%s\n", p.Title)
	}
	if r := earlierTurns(s); r != "" {
		fmt.Fprintf(&b, "\n# Earlier in this conversation\n%s", r)
	}
	var sources []string
	for _, f := range turnFindings(s) {
		fmt.Fprintf(&b, "\n## Step %s: %s (%s, confidence %.2f)\n", f.StepID, f.Title, f.Status, f.Confidence)
		text := f.Output
		if f.Ref != "" && cfg.Read != nil {
			full, err := cfg.Read(ctx, f.Ref)
			if err != nil {
				return "", nil, fmt.Errorf("nodes: reporter: read %s: %w", f.Ref, err)
			}
			text = full
		}
		switch {
		case f.Status != plan.StepDone:
			fmt.Fprintf(&b, "This step did not complete: %s\n", f.Error)
		case text != "":
			b.WriteString(text + "\n")
		default:
			b.WriteString(f.Summary + "\n")
		}
		for _, src := range f.Sources {
			if !slices.Contains(sources, src) {
				sources = append(sources, src)
			}
		}
	}
	if len(sources) > 0 {
		b.WriteString("\n# Sources\n")
		for i, src := range sources {
			fmt.Fprintf(&b, "[%d] %s\n", i+1, src)
		}
	}
	return b.String(), sources, nil
}

// withReferences makes sure the sources are cited at the end: a report
// without a References section gets one listing them.
func withReferences(report string, sources []string) string {
	if len(sources) == 0 || strings.Contains(strings.ToLower(report), "references") {
		return report
	}
	var b strings.Builder
	b.WriteString(report)
	b.WriteString("\n\n## References\n")
	for i, src := range sources {
		fmt.Fprintf(&b, "[%d] %s\n", i+1, src)
	}
	return strings.TrimRight(b.String(), "\n")
}
