package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
)

// Bounds of what a view keeps of a recording (AgentDetail, Timeline).
const (
	// maxViewText caps one text or JSON value of a view.
	maxViewText = 256 << 10
	// maxDetailText caps the texts and JSON values of one AgentDetail
	// together.
	maxDetailText = 16 << 20
)

// cutText returns s if it has at most limit bytes, else its start, cut at
// a character's boundary within limit bytes, with a note of the cut:
// "[cut: the first N of M bytes are shown]". The start is a copy, so that
// it does not keep s.
func cutText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := max(limit, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	note := fmt.Sprintf("[cut: the first %d of %d bytes are shown]", n, len(s))
	if n == 0 {
		return note
	}
	return s[:n] + "\n" + note
}

// cutJSON returns raw, copied, if it has at most limit bytes, else a JSON
// string of its start and the note of cutText.
func cutJSON(raw json.RawMessage, limit int) json.RawMessage {
	if len(raw) <= limit {
		return bytes.Clone(raw)
	}
	out, err := json.Marshal(cutText(string(raw), limit))
	if err != nil { // a string always marshals
		return nil
	}
	return out
}

// detailBuilder builds the AgentDetail of one agent from its events as
// they come, keeping only what the detail shows, cut: each text and JSON
// value to maxViewText, and all of them together to maxDetailText.
type detailBuilder struct {
	d     AgentDetail
	calls map[string]int // tool call id -> index in d.ToolCalls
	model map[int64]int  // model call Seq -> index in d.ModelCalls
	left  int            // bytes of maxDetailText left
}

func newDetailBuilder() *detailBuilder {
	return &detailBuilder{
		d:     AgentDetail{Snapshots: []SnapshotEntry{}, ModelCalls: []ModelCallEntry{}, ToolCalls: []ToolCallEntry{}},
		calls: map[string]int{}, model: map[int64]int{}, left: maxDetailText,
	}
}

// text returns s cut to what the detail may still hold, and counts it.
func (b *detailBuilder) text(s string) string {
	s = cutText(s, min(maxViewText, b.left))
	b.left = max(b.left-len(s), 0)
	return s
}

// json returns raw cut to what the detail may still hold, and counts it.
func (b *detailBuilder) json(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	raw = cutJSON(raw, min(maxViewText, b.left))
	b.left = max(b.left-len(raw), 0)
	return raw
}

// add adds an event of the agent (without bodies).
func (b *detailBuilder) add(e Event) {
	d := &b.d
	switch e.Kind {
	case agentevent.EventStart:
		var ae agentevent.Info
		_ = json.Unmarshal(e.Payload, &ae)
		d.Role, d.Tier, d.Tools, d.Task = b.text(ae.Role), ae.Tier, ae.Tools, b.text(ae.Task)
	case agentevent.EventEnd:
		var ae agentevent.Info
		_ = json.Unmarshal(e.Payload, &ae)
		d.Output, d.Error = b.text(ae.Output), b.text(ae.Err)
	case agentevent.EventSnapshot:
		d.Snapshots = append(d.Snapshots, SnapshotEntry{Seq: e.Seq, Time: e.Time, Snapshot: b.json(e.Payload)})
	case llm.EventModelCall:
		b.model[e.Seq] = len(d.ModelCalls)
		d.ModelCalls = append(d.ModelCalls, b.modelCall(e))
	case tools.EventToolCall:
		var tc tools.CallEvent
		_ = json.Unmarshal(e.Payload, &tc)
		b.calls[tc.ID] = len(d.ToolCalls)
		d.ToolCalls = append(d.ToolCalls, ToolCallEntry{ID: tc.ID, Name: tc.Name, Args: b.json(tc.Args), Seq: e.Seq})
	case tools.EventToolResult:
		var tr tools.ResultEvent
		_ = json.Unmarshal(e.Payload, &tr)
		i, ok := b.calls[tr.ID]
		if !ok {
			i = len(d.ToolCalls)
			d.ToolCalls = append(d.ToolCalls, ToolCallEntry{ID: tr.ID, Name: tr.Name, Seq: e.Seq})
		}
		tc := &d.ToolCalls[i]
		tc.Status, tc.Output, tc.ResultSeq = tr.Status, b.text(tr.Output), e.Seq
		tc.DurationMS = float64(tr.Duration) / float64(time.Millisecond)
	case agentevent.EventWarning:
		var s string
		if json.Unmarshal(e.Payload, &s) != nil {
			s = string(e.Payload)
		}
		d.Warnings = append(d.Warnings, b.text(s))
	}
}

func (b *detailBuilder) modelCall(e Event) ModelCallEntry {
	var mc llm.ModelCall
	_ = json.Unmarshal(e.Payload, &mc)
	return ModelCallEntry{
		Seq: e.Seq, Time: e.Time, Path: e.Path, Model: mc.Model, Tier: mc.Tier, PromptTokens: mc.PromptTokens,
		CachedTokens: mc.CachedTokens, ReasoningTokens: mc.ReasoningTokens, Estimated: mc.Estimated, CostUSD: mc.CostUSD,
		CompletionTokens: mc.CompletionTokens, DurationMS: float64(mc.Duration) / float64(time.Millisecond),
		Hash: e.Hash, Replayed: mc.Replayed, Error: b.text(mc.Err),
	}
}

// recordedResponse is the part of a recorded model response (llm's
// journal record of the choices) that the viewer shows.
type recordedResponse []struct {
	Content   string `json:"content"`
	Reasoning string `json:"reasoning"`
	ToolCalls []struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"tool_calls"`
}

// body adds what the model answered to the agent's model call e, read
// with its bodies; a model call not the agent's is ignored.
func (b *detailBuilder) body(e Event) {
	i, ok := b.model[e.Seq]
	if !ok || len(e.Response) == 0 {
		return
	}
	var resp recordedResponse
	if json.Unmarshal(e.Response, &resp) != nil || len(resp) == 0 {
		return
	}
	m := &b.d.ModelCalls[i]
	m.Content, m.Reasoning, m.ToolCalls = b.text(resp[0].Content), b.text(resp[0].Reasoning), nil
	for _, tc := range resp[0].ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ToolCallRef{ID: tc.ID, Name: tc.Name, Arguments: b.text(tc.Arguments)})
	}
}

// result returns the detail of agent a, whose summary is final.
func (b *detailBuilder) result(a *agentEntry) AgentDetail {
	d := b.d
	d.AgentSummary = a.sum
	if n := len(d.ModelCalls); n > 0 {
		last := d.ModelCalls[n-1]
		d.Reasoning = last.Reasoning
		if !a.started && d.Output == "" {
			d.Output = last.Content
		}
	}
	return d
}
