package window

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// unit is a run of messages the window never splits: one message, or an
// assistant message with tool calls and the tool messages after it.
type unit struct{ start, end int }

// units groups msgs into units.
func units(msgs []llms.MessageContent) []unit {
	var us []unit
	for i := 0; i < len(msgs); {
		j := i + 1
		if hasToolCalls(msgs[i]) {
			for j < len(msgs) && isToolMessage(msgs[j]) {
				j++
			}
		}
		us = append(us, unit{i, j})
		i = j
	}
	return us
}

func hasToolCalls(m llms.MessageContent) bool {
	for _, p := range m.Parts {
		if _, ok := p.(llms.ToolCall); ok {
			return true
		}
	}
	return false
}

func isToolMessage(m llms.MessageContent) bool {
	if m.Role == llms.ChatMessageTypeTool {
		return true
	}
	for _, p := range m.Parts {
		if _, ok := p.(llms.ToolCallResponse); !ok {
			return false
		}
	}
	return len(m.Parts) > 0
}

// summarizeHistory replaces the older history by a summary once the
// window reaches the history threshold, archiving what it evicts.
func (a *assembly) summarizeHistory(ctx context.Context) error {
	p := a.b.cfg.History
	if p.Disabled {
		return nil
	}
	return a.eachHistoryOver(p.Threshold, p.FallbackTokens, func(w *work, why string) error {
		return a.summarizePart(ctx, w, why)
	})
}

// eachHistoryOver calls f with each history part whose window has
// reached the threshold fraction of the limit (fallback tokens when the
// limit is unknown), or all of them when the call is forced, and why.
func (a *assembly) eachHistoryOver(threshold float64, fallback int, f func(w *work, why string) error) error {
	at := trigger(threshold, a.limit, fallback)
	for _, w := range a.works {
		if w.Kind != KindHistory || !w.isMsgs {
			continue
		}
		total := a.measureFor(w)
		if total < at && !a.req.Force {
			continue
		}
		why := "at " + a.share(total, at)
		if a.req.Force {
			why = "after a context overflow"
		}
		if err := f(w, why); err != nil {
			return err
		}
	}
	return nil
}

func (a *assembly) summarizePart(ctx context.Context, w *work, why string) error {
	p := a.b.cfg.History
	us := units(w.msgs)
	keep := a.keepFrom(w.msgs, us)
	if keep == 0 {
		if a.req.Force {
			a.skip(w, PolicySummarizeHistory, "nothing to summarize: the history is one message group")
		}
		return nil
	}
	if a.b.cfg.Offloader == nil {
		a.skip(w, PolicySummarizeHistory, "no offloader configured to archive the evicted messages")
		return nil
	}
	split := us[keep].start
	evicted, kept := w.msgs[:split], w.msgs[split:]
	transcript := Transcript(evicted)
	ref, err := a.b.cfg.Offloader.Offload(ctx, offloadName(transcriptsDir, a.agent, w.Name, transcript), transcript)
	if ctx.Err() != nil {
		return fmt.Errorf("window: archive history %q: %w", w.Name, ctx.Err())
	}
	if err != nil {
		a.skip(w, PolicySummarizeHistory, "archive failed, nothing evicted: "+err.Error())
		return nil
	}
	lim := summaryLimits{MaxTokens: p.SummaryTokens}
	if a.limit > 0 {
		lim.MaxTokens = max(min(lim.MaxTokens, a.limit/10), 1)
	}
	label := strings.TrimSpace(a.agent)
	summary, note, err := a.b.summarize(ctx, summaryHistory, label, transcript, lim)
	if err != nil {
		return err
	}
	before := w.tokens()
	head := llms.TextParts(llms.ChatMessageTypeHuman, historySummary(len(evicted), ref, summary))
	w.msgs = append([]llms.MessageContent{head}, kept...)
	w.compacted = true
	detail := fmt.Sprintf("summarized %d of %d messages %s; kept the last %d verbatim", len(evicted), len(evicted)+len(kept), why, len(kept))
	if note != "" {
		detail += " (" + note + ")"
	}
	a.apply(w, PolicySummarizeHistory, before, ref, detail)
	return nil
}

// keepFrom returns the index of the first unit kept verbatim: the newest
// units within Keep of the history's tokens (or FallbackKeep messages when
// the limit is unknown), at least one unit. 0 means nothing is evicted.
func (a *assembly) keepFrom(msgs []llms.MessageContent, us []unit) int {
	if len(us) < 2 {
		return 0
	}
	p := a.b.cfg.History
	budget := int(p.Keep * float64(partTokens(msgs)))
	used := 0
	for k := len(us) - 1; k > 0; k-- {
		u := us[k]
		if a.limit > 0 {
			used += partTokens(msgs[u.start:u.end])
			if used > budget && k < len(us)-1 {
				return k + 1
			}
		} else {
			used += u.end - u.start
			if used > p.FallbackKeep && k < len(us)-1 {
				return k + 1
			}
		}
	}
	// Everything but the first unit fits the keep budget; evict that one.
	return 1
}

// historySummary is the message that stands for evicted history.
func historySummary(n int, ref, summary string) string {
	return fmt.Sprintf("[Summary of the %d earlier messages of this conversation. The full transcript is archived at %s; read it with read_context if you need a detail.]\n\n%s",
		n, ref, summary)
}

// Transcript renders messages as plain text, one block per message:
// "[user]", "[assistant]", "[tool name (call id)]" headers, tool calls as
// "→ name (call id): arguments". It is what evicted history is archived as
// and what the summarizer reads.
func Transcript(msgs []llms.MessageContent) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte('\n')
		}
		header := false
		for _, p := range m.Parts {
			if resp, ok := p.(llms.ToolCallResponse); ok {
				fmt.Fprintf(&b, "[tool %s (%s)]\n%s\n", resp.Name, resp.ToolCallID, strings.TrimRight(resp.Content, "\n"))
				continue
			}
			if !header {
				b.WriteString("[" + roleName(m.Role) + "]\n")
				header = true
			}
			switch p := p.(type) {
			case llms.TextContent:
				b.WriteString(strings.TrimRight(p.Text, "\n") + "\n")
			case llms.ToolCall:
				name, args := "", ""
				if p.FunctionCall != nil {
					name, args = p.FunctionCall.Name, p.FunctionCall.Arguments
				}
				fmt.Fprintf(&b, "→ %s (%s): %s\n", name, p.ID, args)
			case llms.ImageURLContent:
				b.WriteString("[image " + p.URL + "]\n")
			case llms.BinaryContent:
				fmt.Fprintf(&b, "[binary %s, %d bytes]\n", p.MIMEType, len(p.Data))
			}
		}
	}
	return b.String()
}

func roleName(r llms.ChatMessageType) string {
	switch r {
	case llms.ChatMessageTypeHuman:
		return "user"
	case llms.ChatMessageTypeAI:
		return "assistant"
	case "":
		return "message"
	}
	return string(r)
}
