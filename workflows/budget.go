package workflows

import "github.com/coorflow/coorflow/llm"

// Budget returns what one run of the file may spend on model calls
// (settings.budget); the zero Budget when the file sets none.
func (f *File) Budget() llm.Budget {
	b := f.spec.Settings.Budget
	if b == nil {
		return llm.Budget{}
	}
	return llm.Budget{Tokens: b.Tokens, USD: b.USD, Ask: b.OnExceed == "ask"}
}

// price returns the price a models entry gives, nil when it gives none;
// cached input defaults to the input price.
func (p *priceSpec) price() *llm.Price {
	if p == nil {
		return nil
	}
	out := &llm.Price{Input: p.Input, CacheWrite: p.CacheWrite, Output: p.Output, CachedInput: p.Input}
	if p.CachedInput != nil {
		out.CachedInput = *p.CachedInput
	}
	return out
}
