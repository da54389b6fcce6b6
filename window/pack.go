package window

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// pack fits the window into the limit: required parts first, cut if they
// must be, then the others by priority (and order given), each included
// whole if it fits and left out otherwise.
func (a *assembly) pack(context.Context) error {
	if a.limit <= 0 {
		return nil
	}
	var order []*work
	for _, w := range a.works {
		if w.tokens() > 0 {
			order = append(order, w)
		}
	}
	slices.SortStableFunc(order, func(x, y *work) int {
		rx, ix := rankOf(x)
		ry, iy := rankOf(y)
		return cmp.Or(cmp.Compare(rx, ry), cmp.Compare(ix, iy))
	})
	avail := a.limit - llm.TokensPerReply
	if err := a.packRequired(order, &avail); err != nil {
		return err
	}
	for _, w := range order {
		if w.Required {
			continue
		}
		t := w.tokens()
		if t <= avail {
			avail -= t
			continue
		}
		w.omitted = true
		a.apply(w, PolicyOmit, t, "", fmt.Sprintf("%s priority part left out: needs %s tokens, %s left", w.rep.Priority, thousands(t), thousands(max(avail, 0))))
		w.rep.Reason = fmt.Sprintf("over budget: needs %s tokens, %s left after higher-priority parts", thousands(t), thousands(max(avail, 0)))
	}
	return nil
}

// packRequired gives each required part, by priority, what it needs, or
// what is left once the later required parts have their minimum.
func (a *assembly) packRequired(order []*work, avail *int) error {
	var req []*work
	mins := map[*work]int{}
	rest := 0
	for _, w := range order {
		if w.Required {
			req = append(req, w)
			mins[w] = partTokens(a.cut(w, 0))
			rest += mins[w]
		}
	}
	if rest > *avail {
		return fmt.Errorf("%w: %d required parts need at least %s tokens, the limit leaves %s",
			ErrBudgetTooSmall, len(req), thousands(rest), thousands(*avail))
	}
	for _, w := range req {
		rest -= mins[w]
		allow := *avail - rest
		if t := w.tokens(); t > allow {
			a.truncate(w, allow)
		}
		*avail -= w.tokens()
	}
	return nil
}

// truncate cuts w to at most allow tokens and records it.
func (a *assembly) truncate(w *work, allow int) {
	before := w.tokens()
	n := len(w.msgs)
	if w.compacted {
		w.durable = w.msgs
	}
	if w.isMsgs {
		w.msgs = a.cut(w, allow)
	} else {
		w.text = cutText(w.text, allow, w.Ref)
	}
	after := w.tokens()
	reason := fmt.Sprintf("over budget: cut from %s to %s tokens", thousands(before), thousands(after))
	if dropped := n - len(w.msgs); w.isMsgs && dropped > 0 {
		reason += fmt.Sprintf(", leaving out the %d oldest of %d messages", dropped, n)
	}
	w.rep.Truncated, w.rep.Reason = true, reason
	a.apply(w, PolicyTruncate, before, "", "required part "+reason)
}

// cut returns w's messages cut to at most allow tokens where they can be.
func (a *assembly) cut(w *work, allow int) []llms.MessageContent {
	if !w.isMsgs {
		return []llms.MessageContent{llms.TextParts(w.role, cutText(w.text, allow, w.Ref))}
	}
	return cutMessages(w.msgs, allow)
}

// cutMarker ends a cut text.
func cutMarker(ref string) string {
	if ref == "" {
		return "[… cut to fit the context window]"
	}
	return "[… cut to fit the context window; full text: " + ref + " (read it with read_context)]"
}

// cutText cuts text so that its message takes at most allow tokens,
// keeping its head and ending with a marker.
func cutText(text string, allow int, ref string) string {
	marker := cutMarker(ref)
	if _, cut := headTokens(text, allow-llm.TokensPerMessage); !cut {
		return text
	}
	head, _ := headTokens(text, allow-llm.TokensPerMessage-llm.EstimateTokens(marker)-1)
	if head == "" {
		return marker
	}
	return head + "\n" + marker
}

// cutMessages leaves out the oldest message groups until msgs fit in
// allow tokens; when the newest group alone does not fit, its texts are
// cut to the longest equal length that fits, or as short as they go.
func cutMessages(msgs []llms.MessageContent, allow int) []llms.MessageContent {
	us := units(msgs)
	total := partTokens(msgs)
	for len(us) > 1 && total > allow {
		total -= partTokens(msgs[us[0].start:us[0].end])
		us = us[1:]
	}
	kept := msgs[us[0].start:]
	if total <= allow {
		return kept
	}
	longest := 0
	for _, m := range kept {
		for _, p := range m.Parts {
			longest = max(longest, llm.EstimateTokens(textOf(p)))
		}
	}
	// The largest per-text cap whose result fits.
	c := 0
	for lo, hi := 0, longest; lo <= hi; {
		mid := (lo + hi) / 2
		if partTokens(capTexts(kept, mid)) <= allow {
			c, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return capTexts(kept, c)
}

func textOf(p llms.ContentPart) string {
	switch p := p.(type) {
	case llms.TextContent:
		return p.Text
	case llms.ToolCallResponse:
		return p.Content
	}
	return ""
}

// capTexts returns msgs with every text and tool result cut to at most
// limit tokens plus a marker.
func capTexts(msgs []llms.MessageContent, limit int) []llms.MessageContent {
	out := cloneMessages(msgs)
	capped := func(s string) string {
		head, cut := headTokens(s, limit)
		if !cut {
			return s
		}
		if head == "" {
			return cutMarker("")
		}
		return head + "\n" + cutMarker("")
	}
	for _, m := range out {
		for j, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				m.Parts[j] = llms.TextContent{Text: capped(p.Text)}
			case llms.ToolCallResponse:
				p.Content = capped(p.Content)
				m.Parts[j] = p
			}
		}
	}
	return out
}
