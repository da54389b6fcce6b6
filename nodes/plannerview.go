package nodes

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes/plan"
)

// DefaultMaxAgents is how many agents the planner is shown when
// PlannerConfig.MaxAgents is 0.
const DefaultMaxAgents = 12

// The planner's earlier turns are user/assistant pairs, oldest first: at
// most maxTurnPairs of them, dropped turnChunk at a time from the front so
// that the prompt's beginning changes only every turnChunk turns; the
// turns before them are one line each (at most listedTurns).
const (
	maxTurnPairs = 10
	turnChunk    = 5
)

// pickAgents returns the at most k agents of cards the planner sees for
// request: those whose name and description share the most of the
// request's words, then those the conversation's steps used, then the
// most recently built; in name order, so that the list reads the same
// whatever the scores.
func pickAgents(cards []AgentCard, request string, used map[string]bool, k int) []AgentCard {
	if len(cards) <= k {
		return cards
	}
	words := wordsOf(request)
	type scored struct {
		c     AgentCard
		score int
	}
	all := make([]scored, len(cards))
	for i, c := range cards {
		n := 0
		for w := range wordsOf(strings.ReplaceAll(c.Name, "_", " ") + " " + c.Description) {
			if words[w] {
				n += 2
			}
		}
		if used[c.Name] {
			n++
		}
		all[i] = scored{c, n}
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), b.c.Created.Compare(a.c.Created), strings.Compare(a.c.Name, b.c.Name))
	})
	out := make([]AgentCard, 0, k)
	for _, s := range all[:k] {
		out = append(out, s.c)
	}
	slices.SortFunc(out, func(a, b AgentCard) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// wordsOf returns the distinct lower-case words of s of four letters or
// more, with a trailing "s" dropped ("agents" is "agent"): enough to tell
// what a request and an agent's description share.
func wordsOf(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) < 4 {
			continue
		}
		out[strings.TrimSuffix(w, "s")] = true
	}
	return out
}

// usedAgents returns the agents the conversation's steps ran.
func usedAgents(s graph.State) map[string]bool {
	out := map[string]bool{}
	for _, f := range Findings.Get(s) {
		out[f.Agent] = true
	}
	return out
}

// agentList renders the agents the planner sees, saying how many it does
// not.
func agentList(shown []AgentCard, total int) string {
	var b strings.Builder
	if total > len(shown) {
		fmt.Fprintf(&b, "# Available agents\nThe %d of the team's %d agents that fit this request best (by its words and the agents this conversation used). "+
			"Declare a new agent only for an expertise none of them has.\n", len(shown), total)
	} else {
		b.WriteString("# Available agents\n")
	}
	for _, c := range shown {
		fmt.Fprintf(&b, "- %s: %s\n", c.Name, c.Description)
	}
	return b.String()
}

// turnMessages renders the finished turns before the current one as the
// planner's conversation so far: a user message (what was asked, the task)
// and an assistant message (the plan, one line per result with its
// reference, the answer) per turn. A turn renders the same on every later
// turn, and turns leave the front of the list turnChunk at a time, so the
// messages a call shares with the previous turn's call stay the same and a
// provider's prompt cache serves them.
func turnMessages(s graph.State) []llms.MessageContent {
	cur := CurrentTurn.Get(s).N
	var done []Turn
	for _, t := range Turns.Get(s) {
		if t.N != cur {
			done = append(done, t)
		}
	}
	if len(done) == 0 {
		return nil
	}
	start := 0
	if len(done) > maxTurnPairs {
		start = ((len(done)-maxTurnPairs-1)/turnChunk + 1) * turnChunk
	}
	var msgs []llms.MessageContent
	if older := done[:start]; len(older) > 0 {
		var b strings.Builder
		b.WriteString("Earlier turns of this conversation, one line each:\n")
		if len(older) > listedTurns {
			fmt.Fprintf(&b, "(%d earlier turns not shown)\n", len(older)-listedTurns)
			older = older[len(older)-listedTurns:]
		}
		for _, t := range older {
			fmt.Fprintf(&b, "- Turn %d: %s → %s\n", t.N, oneLine(t.Input), oneLine(t.Answer))
		}
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, b.String()),
			llms.TextParts(llms.ChatMessageTypeAI, "Noted."))
	}
	byTurn := map[int][]plan.Finding{}
	for _, f := range Findings.Get(s) {
		byTurn[f.Turn] = append(byTurn[f.Turn], f)
	}
	for _, t := range done[start:] {
		var u, a strings.Builder
		fmt.Fprintf(&u, "Turn %d. User: %s\n", t.N, oneLine(t.Input))
		if t.Request != "" {
			fmt.Fprintf(&u, "Task: %s\n", oneLine(t.Request))
		}
		if t.Plan != "" {
			fmt.Fprintf(&a, "Plan: %s\n", oneLine(t.Plan))
		}
		if fs := byTurn[t.N]; len(fs) > 0 {
			a.WriteString("Results (one line each; a step's agent reads a full result with read_context and its ref):\n")
			a.WriteString(plan.ResultsView(fs))
		}
		fmt.Fprintf(&a, "Answer: %s\n", oneLine(t.Answer))
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, u.String()), llms.TextParts(llms.ChatMessageTypeAI, a.String()))
	}
	return msgs
}
