package window

import (
	"context"
	"slices"
	"time"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/store/board"
)

// Policy names a context policy in a snapshot.
type Policy string

// The policies a snapshot reports.
const (
	PolicyCompressSteps    Policy = "compress_steps"     // completed steps tiered
	PolicyOffload          Policy = "offload"            // a tool result moved to the store
	PolicyCompactOutput    Policy = "compact_output"     // an agent output replaced by a summary
	PolicyClearToolResults Policy = "clear_tool_results" // old tool results replaced by stubs
	PolicySummarizeHistory Policy = "summarize_history"  // older history replaced by a summary
	PolicyTruncate         Policy = "truncate"           // a required part cut to fit
	PolicyOmit             Policy = "omit"               // a part left out to fit
	PolicySkipped          Policy = "skipped"            // a policy that should have run could not
)

// Snapshot is what one model call saw: each part with its tokens, what
// was left out or cut and why, and the policies applied. It encodes to
// JSON for the run viewer and is published as the payload of a snapshot
// event (agentevent.EventSnapshot).
type Snapshot struct {
	// Agent is the caller's label (Request.Agent, or llm.AgentFrom).
	Agent string    `json:"agent,omitempty"`
	Time  time.Time `json:"time"`
	// Budget is the budget asked for; Limit the tokens the messages could
	// take (0: unknown).
	Budget Budget `json:"budget"`
	Limit  int    `json:"limit"`
	// FullTokens is the estimated size of every part as given, before any
	// policy; TotalTokens the estimated size of the messages sent.
	FullTokens  int `json:"full_tokens"`
	TotalTokens int `json:"total_tokens"`
	// Messages is how many messages were sent.
	Messages int `json:"messages"`
	// Forced is true when the window was rebuilt after a context overflow.
	Forced bool `json:"forced,omitempty"`
	// Parts reports every part, in the order given.
	Parts []PartReport `json:"parts"`
	// Policies lists what was done to the parts, in order.
	Policies []Applied `json:"policies,omitempty"`
}

// PartReport is one part in a snapshot.
type PartReport struct {
	Name     string         `json:"name"`
	Kind     Kind           `json:"kind"`
	Priority board.Priority `json:"priority"`
	Required bool           `json:"required,omitempty"`
	// Tokens is what the part took in the messages sent (0 when omitted);
	// FullTokens what it would have taken as given.
	Tokens     int `json:"tokens"`
	FullTokens int `json:"full_tokens"`
	// Included, Truncated and Omitted say what became of the part; Reason
	// says why it was truncated or omitted.
	Included  bool   `json:"included"`
	Truncated bool   `json:"truncated,omitempty"`
	Omitted   bool   `json:"omitted,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Refs are where full texts behind the part live: the part's own Ref,
	// offloaded results and outputs, archived history.
	Refs []string `json:"refs,omitempty"`
}

// Applied is one policy applied to one part.
type Applied struct {
	Policy Policy `json:"policy"`
	Part   string `json:"part,omitempty"`
	// Detail says what was done, in words ("summarized 40 messages of
	// history at 86% of 100,000 tokens").
	Detail string `json:"detail"`
	// Ref is where the removed text went, if anywhere.
	Ref string `json:"ref,omitempty"`
	// TokensBefore and TokensAfter measure the part.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
}

// Part returns the report of the part named name.
func (s Snapshot) Part(name string) (PartReport, bool) {
	for _, p := range s.Parts {
		if p.Name == name {
			return p, true
		}
	}
	return PartReport{}, false
}

// PoliciesOf returns the applications of policy p, in order.
func (s Snapshot) PoliciesOf(p Policy) []Applied {
	var out []Applied
	for _, a := range s.Policies {
		if a.Policy == p {
			out = append(out, a)
		}
	}
	return out
}

// EventName names the event of a snapshot: "snapshot".
func (Snapshot) EventName() string { return agentevent.EventSnapshot }

// clone returns a copy that shares nothing mutable with s.
func (s Snapshot) clone() Snapshot {
	s.Parts = slices.Clone(s.Parts)
	for i := range s.Parts {
		s.Parts[i].Refs = slices.Clone(s.Parts[i].Refs)
	}
	s.Policies = slices.Clone(s.Policies)
	return s
}

// publish sends a copy of s to the run's stream, if anyone listens.
func publish(ctx context.Context, s Snapshot) {
	if graph.Wants(ctx, agentevent.EventSnapshot) {
		graph.Emit(ctx, s.clone())
	}
}
