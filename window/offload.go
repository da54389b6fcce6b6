package window

import (
	"context"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/llm"
)

// Output is a tool result or an agent output as later prompts see it:
// the text itself, or a preview or summary with a reference to the full
// text.
type Output struct {
	// Text is what goes into prompts.
	Text string `json:"text"`
	// Summary is the summary of a compacted agent output.
	Summary string `json:"summary,omitempty"`
	// Ref is where the full text lives, when it was moved out.
	Ref string `json:"ref,omitempty"`
	// Offloaded is true when the full text was moved out and Text stands
	// for it.
	Offloaded bool `json:"offloaded,omitempty"`
	// Note says why a text over the threshold was kept as it is, or how a
	// summary was made when the summarizer could not make it.
	Note string `json:"note,omitempty"`
}

// previewLineRunes caps each line of a preview.
const previewLineRunes = 240

// OffloadToolResult moves a tool result above Config.Offload.Tokens to the
// Offloader and returns a reference with a preview of its first and last
// lines in its place; a smaller result is returned as it is. Agents call
// it as each result arrives, so their history stays small; Assemble also
// applies it to the parts it is given.
func (b *Builder) OffloadToolResult(ctx context.Context, agent, tool, text string) (Output, error) {
	p := b.cfg.Offload
	tokens := llm.EstimateTokens(text)
	switch {
	case p.Disabled || tokens <= p.Tokens:
		return Output{Text: text}, nil
	case tool == ReadContextName:
		return Output{Text: text, Note: "a page read back with " + ReadContextName + " is kept: it is stored already, and offloading it again would hide what the agent asked to read"}, nil
	case b.cfg.Offloader == nil:
		return Output{Text: text, Note: "no offloader configured"}, nil
	}
	ref, err := b.cfg.Offloader.Offload(ctx, offloadName(toolResultsDir, agent, tool, text), text)
	if err != nil {
		return Output{Text: text}, fmt.Errorf("window: offload result of tool %q: %w", tool, err)
	}
	return Output{Text: offloadNotice(tool, text, ref, tokens, p.PreviewLines), Ref: ref, Offloaded: true}, nil
}

// offloadNotice is what replaces an offloaded tool result: its size, its
// reference, its first and last n lines, and the headings of the lines
// between with their offsets.
func offloadNotice(tool, text, ref string, tokens, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var b strings.Builder
	what := "Tool result"
	if tool != "" {
		what += " of " + tool
	}
	fmt.Fprintf(&b, "[%s offloaded: %s tokens, %s lines, %s bytes. Full text: %s — read it page by page with read_context (ref, offset, limit).]\n",
		what, thousands(tokens), thousands(len(lines)), thousands(len(text)), ref)
	if len(lines) <= 2*n {
		fmt.Fprintf(&b, "Preview (all %d lines):\n", len(lines))
		writeLines(&b, lines)
		return strings.TrimRight(b.String(), "\n")
	}
	fmt.Fprintf(&b, "Preview (first %d and last %d of %s lines):\n", n, n, thousands(len(lines)))
	writeLines(&b, lines[:n])
	fmt.Fprintf(&b, "[… %s lines not shown …]\n", thousands(len(lines)-2*n))
	writeOutline(&b, lines, n)
	writeLines(&b, lines[len(lines)-n:])
	return strings.TrimRight(b.String(), "\n")
}

// maxOutline bounds the headings an offload preview lists.
const maxOutline = 30

// writeOutline lists the Markdown headings ("#" to "######" and a space)
// among the lines a preview does not show, each with the byte offset
// read_context reads it from, so that the agent can go straight to the
// section it needs.
func writeOutline(b *strings.Builder, lines []string, n int) {
	offset, listed, more := 0, 0, 0
	for i, l := range lines[:len(lines)-n] {
		at := offset
		offset += len(l) + 1
		if i < n || !isHeading(l) {
			continue
		}
		if listed == maxOutline {
			more++
			continue
		}
		if listed == 0 {
			b.WriteString("Headings of the lines not shown (read_context from the offset given):\n")
		}
		listed++
		if r := []rune(l); len(r) > previewLineRunes {
			l = string(r[:previewLineRunes-1]) + "…"
		}
		fmt.Fprintf(b, "%s (offset %d)\n", l, at)
	}
	if more > 0 {
		fmt.Fprintf(b, "[… and %s more headings]\n", thousands(more))
	}
	if listed > 0 {
		b.WriteString("Last lines:\n")
	}
}

// isHeading reports whether l is a Markdown ATX heading.
func isHeading(l string) bool {
	h := strings.TrimLeft(l, "#")
	d := len(l) - len(h)
	return d >= 1 && d <= 6 && strings.HasPrefix(h, " ") && strings.TrimSpace(h) != ""
}

func writeLines(b *strings.Builder, lines []string) {
	for _, l := range lines {
		if r := []rune(l); len(r) > previewLineRunes {
			l = string(r[:previewLineRunes-1]) + "…"
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
}

// CompactOutput replaces an agent output above Config.Offload.OutputBytes
// with a summary of at most Config.Offload.SummaryBytes (from the
// summarizer) and a reference to the full output, which it moves to the
// Offloader; a smaller output is returned as it is. name says which output
// it is (a step id, a handoff), agent who wrote it.
func (b *Builder) CompactOutput(ctx context.Context, agent, name, text string) (Output, error) {
	p := b.cfg.Offload
	if p.Disabled || len(text) <= p.OutputBytes {
		return Output{Text: text}, nil
	}
	if b.cfg.Offloader == nil {
		return Output{Text: text, Note: "no offloader configured"}, nil
	}
	ref, err := b.cfg.Offloader.Offload(ctx, offloadName(agentOutputsDir, agent, name, text), text)
	if err != nil {
		return Output{Text: text}, fmt.Errorf("window: offload output %q of %q: %w", name, agent, err)
	}
	label := strings.TrimSpace(agent + " " + name)
	// The reference line takes some of the bound.
	footer := fmt.Sprintf("\n\n[Summary of a %s-byte output; the full output is at %s — read it with read_context.]",
		thousands(len(text)), ref)
	lim := summaryLimits{MaxBytes: max(p.SummaryBytes-len(footer), p.SummaryBytes/2)}
	summary, note, err := b.summarize(ctx, summaryOutput, label, text, lim)
	if err != nil {
		return Output{Text: text}, err
	}
	return Output{Text: summary + footer, Summary: summary, Ref: ref, Offloaded: true, Note: note}, nil
}
