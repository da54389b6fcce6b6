package llm

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEveryListedModelHasAPriceTest: each model in the price table is
// checked, at its exact price, by TestLookupPriceExact in prices_test.go;
// a model added without a test fails here.
func TestEveryListedModelHasAPriceTest(t *testing.T) {
	tested := map[string]bool{}
	for _, c := range exactPriceCases {
		tested[c.model] = true
	}
	for _, id := range slices.Sorted(maps.Keys(knownPrices)) {
		assert.True(t, tested[id], "model %s is listed in knownPrices but has no case in exactPriceCases", id)
	}
	for alias := range priceAliases {
		assert.True(t, tested[alias], "alias %s has no case in exactPriceCases", alias)
	}
}

// TestLookupPriceExact: every listed model and alias at its own price.
func TestLookupPriceExact(t *testing.T) {
	for _, c := range exactPriceCases {
		t.Run(c.model, func(t *testing.T) {
			p, ok := LookupPrice(ProviderOpenAI, c.model)
			assert.True(t, ok)
			assert.Equal(t, c.want, p)
		})
	}
}

// exactPriceCases lists every model id of knownPrices and priceAliases
// with the price it must get, written out so that a change of the table
// is a change of this list too.
var exactPriceCases = []struct {
	model string
	want  Price
}{
	{"gpt-4o", Price{Input: 2.50, CachedInput: 1.25, Output: 10}},
	{"gpt-4o-2024-05-13", Price{Input: 5, CachedInput: 5, Output: 15}},
	{"gpt-4o-mini", Price{Input: 0.15, CachedInput: 0.075, Output: 0.60}},
	{"gpt-4.1", Price{Input: 2, CachedInput: 0.50, Output: 8}},
	{"gpt-4.1-mini", Price{Input: 0.40, CachedInput: 0.10, Output: 1.60}},
	{"gpt-4.1-nano", Price{Input: 0.10, CachedInput: 0.025, Output: 0.40}},
	{"gpt-5", Price{Input: 1.25, CachedInput: 0.125, Output: 10}},
	{"gpt-5-mini", Price{Input: 0.25, CachedInput: 0.025, Output: 2}},
	{"gpt-5-nano", Price{Input: 0.05, CachedInput: 0.005, Output: 0.40}},
	{"gpt-5-pro", Price{Input: 15, CachedInput: 15, Output: 120}},
	{"o1", Price{Input: 15, CachedInput: 7.50, Output: 60}},
	{"o1-pro", Price{Input: 150, CachedInput: 150, Output: 600}},
	{"o3", Price{Input: 2, CachedInput: 0.50, Output: 8}},
	{"o3-pro", Price{Input: 20, CachedInput: 20, Output: 80}},
	{"o3-mini", Price{Input: 1.10, CachedInput: 0.55, Output: 4.40}},
	{"o4-mini", Price{Input: 1.10, CachedInput: 0.275, Output: 4.40}},
	{"claude-opus-4", Price{Input: 15, CachedInput: 1.50, CacheWrite: 18.75, Output: 75}},
	{"claude-opus-4-0", Price{Input: 15, CachedInput: 1.50, CacheWrite: 18.75, Output: 75}},
	{"claude-opus-4-1", Price{Input: 15, CachedInput: 1.50, CacheWrite: 18.75, Output: 75}},
	{"claude-opus-4-5", Price{Input: 5, CachedInput: 0.50, CacheWrite: 6.25, Output: 25}},
	{"claude-sonnet-4", Price{Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15}},
	{"claude-sonnet-4-0", Price{Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15}},
	{"claude-sonnet-4-5", Price{Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15}},
	{"claude-haiku-4-5", Price{Input: 1, CachedInput: 0.10, CacheWrite: 1.25, Output: 5}},
	{"claude-3-5-haiku", Price{Input: 0.80, CachedInput: 0.08, CacheWrite: 1, Output: 4}},
	{"claude-3-7-sonnet", Price{Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15}},
	{"gemini-2.5-pro", Price{Input: 1.25, CachedInput: 0.31, Output: 10}},
	{"gemini-2.5-flash", Price{Input: 0.30, CachedInput: 0.075, Output: 2.50}},
	{"gemini-2.5-flash-lite", Price{Input: 0.10, CachedInput: 0.025, Output: 0.40}},
	{"gemini-2.0-flash", Price{Input: 0.10, CachedInput: 0.025, Output: 0.40}},
	{"gemini-2.0-flash-001", Price{Input: 0.10, CachedInput: 0.025, Output: 0.40}},
	{"gemini-2.0-flash-lite", Price{Input: 0.075, CachedInput: 0.075, Output: 0.30}},
	{"gemini-2.0-flash-lite-001", Price{Input: 0.075, CachedInput: 0.075, Output: 0.30}},
	{"deepseek-chat", Price{Input: 0.27, CachedInput: 0.07, Output: 1.10}},
	{"deepseek-reasoner", Price{Input: 0.55, CachedInput: 0.14, Output: 2.19}},
	{"qwen-plus", Price{Input: 0.40, CachedInput: 0.40, Output: 1.20}},
	{"qwen-max", Price{Input: 1.60, CachedInput: 1.60, Output: 6.40}},
	{"scripted", Price{}},
	{"demo", Price{}},
}
