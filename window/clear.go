package window

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// clearToolResults replaces the old tool results of conversation parts by
// a stub with a reference, once the window reaches the clear threshold
// (context editing, as Anthropic's clear_tool_uses does). When it runs it
// clears every result older than the last KeepTurns tool-calling turns,
// not just one, so that the prompt changes rarely and a provider's prompt
// cache keeps hitting between clearings.
func (a *assembly) clearToolResults(ctx context.Context) error {
	p := a.b.cfg.Clear
	if p.Disabled {
		return nil
	}
	return a.eachHistoryOver(p.Threshold, p.FallbackTokens, func(w *work, why string) error {
		return a.clearPart(ctx, w, why)
	})
}

func (a *assembly) clearPart(ctx context.Context, w *work, why string) error {
	p := a.b.cfg.Clear
	end := clearableEnd(w.msgs, p.KeepTurns)
	cleared, freed := 0, 0
	before := w.tokens()
	var refs []string
	for i := range w.msgs[:end] {
		for j, part := range w.msgs[i].Parts {
			resp, ok := part.(llms.ToolCallResponse)
			if !ok || !a.clearable(resp) {
				continue
			}
			if a.b.cfg.Offloader == nil {
				a.skip(w, PolicyClearToolResults, "no offloader configured to keep the cleared results")
				return nil
			}
			ref, err := a.b.cfg.Offloader.Offload(ctx, offloadName(toolResultsDir, a.agent, resp.Name, resp.Content), resp.Content)
			switch {
			case ctx.Err() != nil:
				return fmt.Errorf("window: clear tool results of %q: %w", w.Name, ctx.Err())
			case err != nil:
				a.skip(w, PolicyClearToolResults, fmt.Sprintf("result of %s (call %s) kept: %v", resp.Name, resp.ToolCallID, err))
				continue
			}
			tokens := llm.EstimateTokens(resp.Content)
			resp.Content = clearedStub(resp.Name, resp.ToolCallID, ref, tokens)
			w.msgs[i].Parts[j] = resp
			cleared++
			freed += tokens - llm.EstimateTokens(resp.Content)
			refs = append(refs, ref)
		}
	}
	if cleared == 0 {
		return nil
	}
	w.compacted = true
	turns := fmt.Sprintf("the last %d turns", p.KeepTurns)
	if p.KeepTurns == 1 {
		turns = "the latest turn"
	}
	a.apply(w, PolicyClearToolResults, before, "", fmt.Sprintf("cleared %d tool results older than %s %s, freeing %s tokens",
		cleared, turns, why, thousands(freed)))
	for _, r := range refs {
		if !slices.Contains(w.rep.Refs, r) {
			w.rep.Refs = append(w.rep.Refs, r)
		}
	}
	return nil
}

// clearable reports whether a tool result may be cleared: big enough to
// be worth a stub, of a tool not excluded, not already a stub or an
// offload notice.
func (a *assembly) clearable(resp llms.ToolCallResponse) bool {
	p := a.b.cfg.Clear
	switch {
	case slices.Contains(p.Exclude, resp.Name):
		return false
	case strings.HasPrefix(resp.Content, clearedPrefix), strings.HasPrefix(resp.Content, offloadedPrefix):
		return false
	}
	return llm.EstimateTokens(resp.Content) >= p.MinTokens
}

// clearableEnd returns the index of the first message whose tool results
// are kept: the assistant message of the keep-th last tool-calling turn,
// or 0 when there are no more turns than that.
func clearableEnd(msgs []llms.MessageContent, keep int) int {
	seen := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if !hasToolCalls(msgs[i]) {
			continue
		}
		seen++
		if seen == keep {
			return i
		}
	}
	return 0
}

// Markers at the start of what stands for a result moved out of the
// window.
const (
	clearedPrefix   = "[Result of tool "
	offloadedPrefix = "[Tool result"
)

// clearedStub is what replaces a cleared tool result.
func clearedStub(tool, callID, ref string, tokens int) string {
	return fmt.Sprintf("%s%s (call %s) cleared from the context: %s tokens. Full text: %s — read it with read_context if you need it again.]",
		clearedPrefix, tool, callID, thousands(tokens), ref)
}
