package window

import (
	"reflect"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// PrefixReuse measures how much of a call's prompt a provider could serve
// from its prompt cache after the previous call: shared is the estimated
// tokens of cur's leading messages identical to prev's (role and every
// part), total the estimate of cur. A message that changed ends the shared
// prefix even if later ones match, as it does for every provider's cache.
// Tools are not counted; they are the same on every call of an agent.
func PrefixReuse(prev, cur []llms.MessageContent) (shared, total int) {
	total = llm.EstimateMessages(cur)
	n := 0
	for n < len(prev) && n < len(cur) && sameMessage(prev[n], cur[n]) {
		n++
	}
	if n == 0 {
		return 0, total
	}
	return llm.EstimateMessages(cur[:n]) - llm.TokensPerReply, total
}

func sameMessage(a, b llms.MessageContent) bool {
	return a.Role == b.Role && reflect.DeepEqual(a.Parts, b.Parts)
}

// PrefixMeter adds up the prefix reuse of consecutive calls, per agent:
// the share of prompt tokens identical to the beginning of the same
// agent's previous prompt. The zero value is ready to use; it is not safe
// for concurrent use.
type PrefixMeter struct {
	last map[string][]llms.MessageContent
	// Shared and Total add up PrefixReuse over every call but each
	// agent's first; Previous adds up the tokens of the previous prompts
	// they are compared with (without reply priming), so Shared/Previous
	// is the share of a prompt the next call repeats: 1 when the history
	// is append-only.
	Shared, Total, Previous int
	// Calls counts the calls measured, first calls included.
	Calls int
}

// Observe records the prompt of one call of agent.
func (m *PrefixMeter) Observe(agent string, msgs []llms.MessageContent) {
	if m.last == nil {
		m.last = make(map[string][]llms.MessageContent)
	}
	m.Calls++
	if prev, ok := m.last[agent]; ok {
		s, t := PrefixReuse(prev, msgs)
		m.Shared += s
		m.Total += t
		m.Previous += llm.EstimateMessages(prev) - llm.TokensPerReply
	}
	m.last[agent] = msgs
}

// Kept returns Shared/Previous, 0 before two calls of one agent.
func (m *PrefixMeter) Kept() float64 {
	if m.Previous <= 0 {
		return 0
	}
	return float64(m.Shared) / float64(m.Previous)
}

// Share returns Shared/Total, 0 before two calls of one agent.
func (m *PrefixMeter) Share() float64 {
	if m.Total == 0 {
		return 0
	}
	return float64(m.Shared) / float64(m.Total)
}
