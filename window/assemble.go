package window

import (
	"context"
	"fmt"
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/store/board"
)

// assembly is one run of Assemble.
type assembly struct {
	b     *Builder
	req   Request
	agent string
	limit int
	works []*work
	snap  Snapshot
}

// work is a part being assembled: its current content and its report.
type work struct {
	Part
	idx    int
	role   llms.ChatMessageType
	isMsgs bool
	text   string                // a text part's current text (steps: rendered)
	msgs   []llms.MessageContent // a conversation part's current messages
	steps  []Step                // a steps part's current steps
	// compacted marks messages changed for good; omitted a part left out.
	compacted bool
	omitted   bool
	// durable are the compacted messages before a cut for this call only.
	durable []llms.MessageContent
	rep     PartReport
}

// messages returns the part's current messages, standing alone.
func (w *work) messages() []llms.MessageContent {
	if w.isMsgs {
		return w.msgs
	}
	if w.text == "" {
		return nil
	}
	return []llms.MessageContent{llms.TextParts(w.role, w.text)}
}

// tokens estimates the part's current messages, without the reply
// priming that a whole conversation pays once.
func (w *work) tokens() int { return partTokens(w.messages()) }

func partTokens(msgs []llms.MessageContent) int {
	if len(msgs) == 0 {
		return 0
	}
	return llm.EstimateMessages(msgs) - llm.TokensPerReply
}

func (b *Builder) newAssembly(ctx context.Context, req Request) *assembly {
	agent := req.Agent
	if agent == "" {
		agent = llm.AgentFrom(ctx)
	}
	a := &assembly{b: b, req: req, agent: agent, limit: req.Budget.Limit()}
	a.snap = Snapshot{Agent: agent, Time: b.cfg.Now().UTC(), Budget: req.Budget, Limit: a.limit, Forced: req.Force}
	for i, p := range req.Parts {
		w := &work{Part: p, idx: i, role: p.Role, isMsgs: p.Messages != nil}
		if w.role == "" {
			w.role = defaultRole(p.Kind)
		}
		prio := p.Priority
		if prio == "" {
			prio = DefaultPriority(p.Kind)
		}
		switch {
		case w.isMsgs:
			w.msgs = cloneMessages(p.Messages)
		case p.Kind == KindSteps && len(p.Steps) > 0:
			w.steps = slices.Clone(p.Steps)
			w.text = renderSteps(w.steps, tiersFor(len(w.steps), b.cfg.Steps, false))
		default:
			w.text = p.Text
		}
		w.rep = PartReport{Name: p.Name, Kind: p.Kind, Priority: prio, Required: p.Required, FullTokens: w.tokens()}
		if p.Ref != "" {
			w.rep.Refs = []string{p.Ref}
		}
		a.works = append(a.works, w)
	}
	a.snap.FullTokens = a.measure()
	return a
}

// cloneMessages copies msgs and their part lists, so that parts can be
// replaced without touching the caller's messages.
func cloneMessages(msgs []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, len(msgs))
	for i, m := range msgs {
		out[i] = llms.MessageContent{Role: m.Role, Parts: slices.Clone(m.Parts)}
	}
	return out
}

// layout lays out the parts that are not omitted, in order, joining
// consecutive text parts of one role into one message.
func layout(works []*work) []llms.MessageContent {
	var out []llms.MessageContent
	joinable := false // the last message came from text parts
	for _, w := range works {
		if w.omitted {
			continue
		}
		if w.isMsgs {
			out = append(out, w.msgs...)
			joinable = len(w.msgs) == 0 && joinable
			continue
		}
		if w.text == "" {
			continue
		}
		if last := len(out) - 1; joinable && out[last].Role == w.role {
			prev := out[last].Parts[0].(llms.TextContent).Text
			out[last] = llms.TextParts(w.role, prev+"\n\n"+w.text)
			continue
		}
		out = append(out, llms.TextParts(w.role, w.text))
		joinable = true
	}
	return out
}

// measure estimates the window as it stands.
func (a *assembly) measure() int { return llm.EstimateMessages(layout(a.works)) }

// measureFor estimates the window that the thresholds of w's policies
// compare: w and the parts of its priority or higher. A part is never
// compressed to make room for parts that matter less, which packing can
// leave out instead.
func (a *assembly) measureFor(w *work) int {
	rank, _ := rankOf(w)
	var ws []*work
	for _, o := range a.works {
		if r, _ := rankOf(o); r <= rank {
			ws = append(ws, o)
		}
	}
	return llm.EstimateMessages(layout(ws))
}

// apply records a policy applied to w.
func (a *assembly) apply(w *work, p Policy, before int, ref, detail string) {
	name := ""
	if w != nil {
		name = w.Name
		if ref != "" && !slices.Contains(w.rep.Refs, ref) {
			w.rep.Refs = append(w.rep.Refs, ref)
		}
	}
	after := 0
	if w != nil && !w.omitted {
		after = w.tokens()
	}
	a.snap.Policies = append(a.snap.Policies, Applied{Policy: p, Part: name, Detail: detail, Ref: ref,
		TokensBefore: before, TokensAfter: after})
}

// skip records a policy that could not run on w.
func (a *assembly) skip(w *work, p Policy, why string) {
	a.snap.Policies = append(a.snap.Policies, Applied{Policy: PolicySkipped, Part: w.Name,
		Detail: string(p) + ": " + why, TokensBefore: w.tokens(), TokensAfter: w.tokens()})
}

// share says how full the window is: "86% of 100,000 tokens", or the
// token count against the fallback threshold when the limit is unknown.
func (a *assembly) share(total, fallback int) string {
	if a.limit <= 0 {
		return fmt.Sprintf("%s tokens (threshold %s tokens, no known limit)", thousands(total), thousands(fallback))
	}
	return fmt.Sprintf("%d%% of %s tokens", total*100/a.limit, thousands(a.limit))
}

// offload moves large tool results out of the window.
func (a *assembly) offload(ctx context.Context) error {
	p := a.b.cfg.Offload
	if p.Disabled {
		return nil
	}
	for _, w := range a.works {
		var err error
		switch {
		case w.isMsgs:
			err = a.offloadMessages(ctx, w)
		case w.Kind == KindToolResult && llm.EstimateTokens(w.text) > p.Tokens:
			err = a.offloadText(ctx, w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *assembly) offloadText(ctx context.Context, w *work) error {
	before := w.tokens()
	o, err := a.b.OffloadToolResult(ctx, a.agent, w.Name, w.text)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("window: offload part %q: %w", w.Name, ctx.Err())
	case err != nil:
		a.skip(w, PolicyOffload, err.Error())
		return nil
	case !o.Offloaded:
		a.skip(w, PolicyOffload, o.Note)
		return nil
	}
	w.text = o.Text
	a.apply(w, PolicyOffload, before, o.Ref, fmt.Sprintf("offloaded tool result of %s tokens (over %s)",
		thousands(llm.EstimateTokens(w.Part.Text)), thousands(a.b.cfg.Offload.Tokens)))
	return nil
}

func (a *assembly) offloadMessages(ctx context.Context, w *work) error {
	limit := a.b.cfg.Offload.Tokens
	for i, m := range w.msgs {
		for j, part := range m.Parts {
			resp, ok := part.(llms.ToolCallResponse)
			if !ok || resp.Name == ReadContextName || llm.EstimateTokens(resp.Content) <= limit {
				continue
			}
			before := w.tokens()
			o, err := a.b.OffloadToolResult(ctx, a.agent, resp.Name, resp.Content)
			switch {
			case ctx.Err() != nil:
				return fmt.Errorf("window: offload part %q: %w", w.Name, ctx.Err())
			case err != nil:
				a.skip(w, PolicyOffload, err.Error())
				continue
			case !o.Offloaded:
				a.skip(w, PolicyOffload, o.Note)
				continue
			}
			resp.Content = o.Text
			w.msgs[i].Parts[j] = resp
			w.compacted = true
			a.apply(w, PolicyOffload, before, o.Ref, fmt.Sprintf("offloaded result of tool %s (call %s): %s tokens (over %s)",
				resp.Name, resp.ToolCallID, thousands(llm.EstimateTokens(part.(llms.ToolCallResponse).Content)), thousands(limit)))
		}
	}
	return nil
}

// compactOutputs replaces large agent outputs — handoffs, results of
// completed steps — by their summaries.
func (a *assembly) compactOutputs(ctx context.Context) error {
	p := a.b.cfg.Offload
	if p.Disabled {
		return nil
	}
	for _, w := range a.works {
		var err error
		switch {
		case w.Kind == KindHandoff && !w.isMsgs && len(w.text) > p.OutputBytes:
			err = a.compactHandoff(ctx, w)
		case w.Kind == KindSteps && len(w.steps) > 0:
			err = a.compactSteps(ctx, w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *assembly) compactHandoff(ctx context.Context, w *work) error {
	before := w.tokens()
	o, err := a.b.CompactOutput(ctx, "", w.Name, w.text)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("window: compact part %q: %w", w.Name, ctx.Err())
	case err != nil:
		a.skip(w, PolicyCompactOutput, err.Error())
		return nil
	case !o.Offloaded:
		a.skip(w, PolicyCompactOutput, o.Note)
		return nil
	}
	w.text = o.Text
	a.apply(w, PolicyCompactOutput, before, o.Ref, compactDetail("handoff", len(w.Part.Text), o))
	return nil
}

func (a *assembly) compactSteps(ctx context.Context, w *work) error {
	p := a.b.cfg.Offload
	changed := false
	before := w.tokens()
	for i, s := range w.steps {
		if len(s.Result) <= p.OutputBytes {
			continue
		}
		size := len(s.Result)
		if s.Ref != "" && s.Summary != "" && len(s.Summary) <= p.SummaryBytes {
			w.steps[i].Result = s.Summary + fmt.Sprintf("\n\n[Summary of a %s-byte result; the full result is at %s — read it with read_context.]", thousands(size), s.Ref)
			a.apply(w, PolicyCompactOutput, before, s.Ref, fmt.Sprintf("step %s: result of %s bytes shown as its summary", s.ID, thousands(size)))
			changed = true
			continue
		}
		o, err := a.b.CompactOutput(ctx, s.Agent, s.ID, s.Result)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("window: compact step %q: %w", s.ID, ctx.Err())
		case err != nil:
			a.skip(w, PolicyCompactOutput, "step "+s.ID+": "+err.Error())
			continue
		case !o.Offloaded:
			a.skip(w, PolicyCompactOutput, "step "+s.ID+": "+o.Note)
			continue
		}
		w.steps[i].Result = o.Text
		if s.Ref == "" {
			w.steps[i].Ref = o.Ref
		}
		if s.Summary == "" {
			w.steps[i].Summary = o.Summary
		}
		a.apply(w, PolicyCompactOutput, before, o.Ref, compactDetail("step "+s.ID, size, o))
		changed = true
	}
	if changed {
		w.text = renderSteps(w.steps, tiersFor(len(w.steps), a.b.cfg.Steps, false))
	}
	return nil
}

func compactDetail(what string, size int, o Output) string {
	d := fmt.Sprintf("%s: output of %s bytes replaced by a summary of %s bytes", what, thousands(size), thousands(len(o.Summary)))
	if o.Note != "" {
		d += " (" + o.Note + ")"
	}
	return d
}

// compressSteps tiers the completed steps once the window reaches the
// steps threshold.
func (a *assembly) compressSteps(context.Context) error {
	p := a.b.cfg.Steps
	if p.Disabled {
		return nil
	}
	at := trigger(p.Threshold, a.limit, p.FallbackTokens)
	for _, w := range a.works {
		if w.Kind != KindSteps || len(w.steps) <= p.Full {
			continue
		}
		total := a.measureFor(w)
		sticky := a.b.wasTiered(a.agent, w.Name)
		if total < at && !a.req.Force && !sticky {
			continue
		}
		a.b.markTiered(a.agent, w.Name)
		before := w.tokens()
		ts := tiersFor(len(w.steps), p, true)
		w.text = renderSteps(w.steps, ts)
		var n [3]int
		for _, t := range ts {
			n[t]++
		}
		why := "at " + a.share(total, at)
		switch {
		case a.req.Force:
			why = "after a context overflow"
		case total < at:
			why = "as on an earlier call (" + a.share(total, at) + "), so that the prompt's beginning stays the same"
		}
		a.apply(w, PolicyCompressSteps, before, "", fmt.Sprintf("tiered %d steps %s: %d in full, %d as summaries, %d as metadata",
			len(w.steps), why, n[tierFull], n[tierSummary], n[tierMeta]))
	}
	return nil
}

// maxTiered bounds the steps parts a Builder remembers as tiered.
const maxTiered = 4096

func (b *Builder) wasTiered(agent, part string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tiered[agent+"\x00"+part]
}

func (b *Builder) markTiered(agent, part string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.tiered) >= maxTiered {
		clear(b.tiered)
	}
	b.tiered[agent+"\x00"+part] = true
}

// result finishes the reports and the snapshot.
func (a *assembly) result() Result {
	msgs := layout(a.works)
	res := Result{Messages: msgs}
	for _, w := range a.works {
		t := w.tokens()
		switch {
		case w.omitted:
			w.rep.Omitted = true
		case t == 0:
			w.rep.Reason = "empty"
		default:
			w.rep.Included, w.rep.Tokens = true, t
		}
		if w.compacted {
			if res.Compacted == nil {
				res.Compacted = make(map[string][]llms.MessageContent)
			}
			res.Compacted[w.Name] = w.msgs
			if w.durable != nil {
				res.Compacted[w.Name] = w.durable
			}
		}
		a.snap.Parts = append(a.snap.Parts, w.rep)
	}
	a.snap.TotalTokens = llm.EstimateMessages(msgs)
	a.snap.Messages = len(msgs)
	return Result{Messages: msgs, Snapshot: a.snap, Compacted: res.Compacted}
}

// rankOf orders works for packing: priority, then the order given.
func rankOf(w *work) (int, int) {
	r := w.rep.Priority.Rank()
	if r > board.PriorityLow.Rank() {
		r = board.PriorityNormal.Rank()
	}
	return r, w.idx
}
