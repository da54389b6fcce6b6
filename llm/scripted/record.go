package scripted

import (
	"maps"
	"slices"
)

// Usage sums the estimated tokens of the calls that returned a response;
// Calls counts every call, failed ones included.
type Usage struct {
	Calls            int // calls received
	PromptTokens     int // estimated input tokens
	CompletionTokens int // estimated output tokens
	TotalTokens      int // PromptTokens + CompletionTokens
}

// Calls returns every call received so far, in the order they arrived. A
// call still in progress has no Response or Err yet.
func (m *Model) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// CallsFor returns the calls of one agent, by turn.
func (m *Model) CallsFor(agent string) []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Call
	for _, c := range m.calls {
		if c.Agent == agent {
			out = append(out, c)
		}
	}
	return out
}

// Agents returns the labels of the agents that called, sorted.
func (m *Model) Agents() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.turns))
}

// Usage returns the token usage of every call so far.
func (m *Model) Usage() Usage { return m.usage(func(Call) bool { return true }) }

// UsageFor returns the token usage of one agent's calls.
func (m *Model) UsageFor(agent string) Usage {
	return m.usage(func(c Call) bool { return c.Agent == agent })
}

func (m *Model) usage(keep func(Call) bool) Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	var u Usage
	for _, c := range m.calls {
		if !keep(c) {
			continue
		}
		u.Calls++
		if c.Response != nil {
			u.PromptTokens += c.PromptTokens
			u.CompletionTokens += c.CompletionTokens
		}
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// MaxInFlight returns the largest number of calls that were in progress at
// the same time.
func (m *Model) MaxInFlight() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxInFlight
}

// Remaining returns, for each agent in Script.Agents with replies not yet
// used, how many are left; an empty map means the script was played out.
func (m *Model) Remaining() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	left := map[string]int{}
	for name, replies := range m.script.Agents {
		if n := len(replies) - m.used[name]; n > 0 {
			left[name] = n
		}
	}
	return left
}
