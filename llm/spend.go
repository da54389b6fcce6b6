package llm

import (
	"fmt"
	"slices"
	"strings"
)

// Spend sums model calls: their tokens and what they cost. Replayed calls
// (answered from the journal) and failed calls cost nothing and are not
// counted.
type Spend struct {
	Calls            int `json:"calls"`
	PromptTokens     int `json:"prompt_tokens"`
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
	// EstimatedCalls counts the calls whose usage was estimated.
	EstimatedCalls int `json:"estimated_calls,omitempty"`
	// CostUSD is what the priced calls cost, in US dollars.
	CostUSD float64 `json:"cost_usd"`
	// UnpricedCalls counts the calls of models without a price: CostUSD
	// leaves them out, so the cost is unknown when it is not 0.
	UnpricedCalls int `json:"unpriced_calls,omitempty"`
	// UnpricedModels names those models.
	UnpricedModels []string `json:"unpriced_models,omitempty"`
}

// Add counts a model call.
func (s *Spend) Add(c ModelCall) {
	if c.Replayed || c.Err != "" {
		return
	}
	s.Calls++
	s.PromptTokens += c.PromptTokens
	s.CachedTokens += c.CachedTokens
	s.CacheWriteTokens += c.CacheWriteTokens
	s.CompletionTokens += c.CompletionTokens
	s.ReasoningTokens += c.ReasoningTokens
	if c.Estimated {
		s.EstimatedCalls++
	}
	if c.CostUSD != nil {
		s.CostUSD += *c.CostUSD
		return
	}
	s.UnpricedCalls++
	s.addUnpriced(c.Model)
}

func (s *Spend) addUnpriced(models ...string) {
	for _, m := range models {
		if m == "" {
			m = "(unnamed model)"
		}
		if len(s.UnpricedModels) < 10 && !slices.Contains(s.UnpricedModels, m) {
			s.UnpricedModels = append(s.UnpricedModels, m)
		}
	}
}

// Merge adds the calls counted in o.
func (s *Spend) Merge(o Spend) {
	s.Calls += o.Calls
	s.PromptTokens += o.PromptTokens
	s.CachedTokens += o.CachedTokens
	s.CacheWriteTokens += o.CacheWriteTokens
	s.CompletionTokens += o.CompletionTokens
	s.ReasoningTokens += o.ReasoningTokens
	s.EstimatedCalls += o.EstimatedCalls
	s.CostUSD += o.CostUSD
	s.UnpricedCalls += o.UnpricedCalls
	s.addUnpriced(o.UnpricedModels...)
}

// Tokens is PromptTokens plus CompletionTokens.
func (s Spend) Tokens() int { return s.PromptTokens + s.CompletionTokens }

// String says it in one line: "3 calls, 1234 tokens (in 1000 of which
// 200 cached, out 234 of which 50 reasoning), $0.0123", saying which
// calls were estimated and which models have no price.
func (s Spend) String() string {
	if s.Calls == 0 {
		return "no model calls"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d tokens (in %d", calls(s.Calls), s.Tokens(), s.PromptTokens)
	if s.CachedTokens > 0 {
		fmt.Fprintf(&b, " of which %d cached", s.CachedTokens)
	}
	fmt.Fprintf(&b, ", out %d", s.CompletionTokens)
	if s.ReasoningTokens > 0 {
		fmt.Fprintf(&b, " of which %d reasoning", s.ReasoningTokens)
	}
	b.WriteString(")")
	if s.EstimatedCalls > 0 {
		fmt.Fprintf(&b, ", %d estimated", s.EstimatedCalls)
	}
	switch {
	case s.UnpricedCalls == s.Calls:
		fmt.Fprintf(&b, ", cost unknown (no price for %s)", strings.Join(s.UnpricedModels, ", "))
	case s.UnpricedCalls > 0:
		fmt.Fprintf(&b, ", %s + unknown (%s of %s without a price)", USD(s.CostUSD), calls(s.UnpricedCalls), strings.Join(s.UnpricedModels, ", "))
	default:
		fmt.Fprintf(&b, ", %s", USD(s.CostUSD))
	}
	return b.String()
}

// calls says "1 call" or "n calls".
func calls(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// USD formats dollars with four decimals: "$0.0123".
func USD(v float64) string { return fmt.Sprintf("$%.4f", v) }
