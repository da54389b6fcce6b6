package llm

import (
	"fmt"
	"regexp"
	"strings"
)

// Price is what a model's tokens cost, in US dollars per million tokens.
type Price struct {
	// Input is the price of an input token not read from the cache.
	Input float64 `json:"input" yaml:"input"`
	// CachedInput is the price of an input token read from the provider's
	// prompt cache.
	CachedInput float64 `json:"cached_input" yaml:"cached_input"`
	// CacheWrite is the price of an input token written to the cache
	// (Anthropic); 0 means Input.
	CacheWrite float64 `json:"cache_write,omitempty" yaml:"cache_write"`
	// Output is the price of an output token, reasoning included.
	Output float64 `json:"output" yaml:"output"`
}

// Cost returns what u cost at p, in US dollars.
func (p Price) Cost(u TokenUsage) float64 {
	write := p.CacheWrite
	if write == 0 {
		write = p.Input
	}
	fresh := max(u.PromptTokens-u.CachedTokens-u.CacheWriteTokens, 0)
	return (float64(fresh)*p.Input + float64(u.CachedTokens)*p.CachedInput +
		float64(u.CacheWriteTokens)*write + float64(u.CompletionTokens)*p.Output) / 1e6
}

// Validate reports a negative price.
func (p Price) Validate() error {
	if p.Input < 0 || p.CachedInput < 0 || p.CacheWrite < 0 || p.Output < 0 {
		return fmt.Errorf("llm: price %+v: a price cannot be negative", p)
	}
	return nil
}

// knownPrices are the list prices of common models, standard tier, in US
// dollars per million tokens, as the providers published them. A model is
// matched by its exact id (LookupPrice); a dated snapshot
// ("gpt-4o-mini-2024-07-18", "claude-sonnet-4-5-20250929") takes the
// price of the model it pins unless it is listed itself
// ("gpt-4o-2024-05-13" costs twice gpt-4o). Never by prefix: "o3-pro"
// costs ten times "o3", "gpt-5-pro" twelve times "gpt-5". Prices change:
// a file overrides them with models.TIER.price. Where a provider charges
// more above a prompt size (Gemini 2.5 Pro over 200k tokens, Qwen over
// 128k) the lower tier is kept. A model without prompt caching, and Qwen
// (whose discount depends on the cache mode), lists its cached input at
// the full input price.
var knownPrices = map[string]Price{
	// OpenAI: cached input is what the API bills for prompt-cache hits.
	"gpt-4o":            {Input: 2.50, CachedInput: 1.25, Output: 10.00},
	"gpt-4o-2024-05-13": {Input: 5.00, CachedInput: 5.00, Output: 15.00},
	"gpt-4o-mini":       {Input: 0.15, CachedInput: 0.075, Output: 0.60},
	"gpt-4.1":           {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"gpt-4.1-mini":      {Input: 0.40, CachedInput: 0.10, Output: 1.60},
	"gpt-4.1-nano":      {Input: 0.10, CachedInput: 0.025, Output: 0.40},
	"gpt-5":             {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5-mini":        {Input: 0.25, CachedInput: 0.025, Output: 2.00},
	"gpt-5-nano":        {Input: 0.05, CachedInput: 0.005, Output: 0.40},
	"gpt-5-pro":         {Input: 15.00, CachedInput: 15.00, Output: 120.00},
	"o1":                {Input: 15.00, CachedInput: 7.50, Output: 60.00},
	"o1-pro":            {Input: 150.00, CachedInput: 150.00, Output: 600.00},
	"o3":                {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"o3-pro":            {Input: 20.00, CachedInput: 20.00, Output: 80.00},
	"o3-mini":           {Input: 1.10, CachedInput: 0.55, Output: 4.40},
	"o4-mini":           {Input: 1.10, CachedInput: 0.275, Output: 4.40},
	// Anthropic: cache reads at a tenth of the input price, writes (5
	// minute cache) at 1.25 times.
	"claude-opus-4":     {Input: 15.00, CachedInput: 1.50, CacheWrite: 18.75, Output: 75.00},
	"claude-opus-4-1":   {Input: 15.00, CachedInput: 1.50, CacheWrite: 18.75, Output: 75.00},
	"claude-opus-4-5":   {Input: 5.00, CachedInput: 0.50, CacheWrite: 6.25, Output: 25.00},
	"claude-sonnet-4":   {Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00},
	"claude-sonnet-4-5": {Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00},
	"claude-haiku-4-5":  {Input: 1.00, CachedInput: 0.10, CacheWrite: 1.25, Output: 5.00},
	"claude-3-5-haiku":  {Input: 0.80, CachedInput: 0.08, CacheWrite: 1.00, Output: 4.00},
	"claude-3-7-sonnet": {Input: 3.00, CachedInput: 0.30, CacheWrite: 3.75, Output: 15.00},
	// Google Gemini.
	"gemini-2.5-pro":        {Input: 1.25, CachedInput: 0.31, Output: 10.00},
	"gemini-2.5-flash":      {Input: 0.30, CachedInput: 0.075, Output: 2.50},
	"gemini-2.5-flash-lite": {Input: 0.10, CachedInput: 0.025, Output: 0.40},
	"gemini-2.0-flash":      {Input: 0.10, CachedInput: 0.025, Output: 0.40},
	"gemini-2.0-flash-lite": {Input: 0.075, CachedInput: 0.075, Output: 0.30},
	// DeepSeek (standard hours): cached input is a cache hit.
	"deepseek-chat":     {Input: 0.27, CachedInput: 0.07, Output: 1.10},
	"deepseek-reasoner": {Input: 0.55, CachedInput: 0.14, Output: 2.19},
	// Qwen (Alibaba Cloud Model Studio, international).
	"qwen-plus": {Input: 0.40, CachedInput: 0.40, Output: 1.20},
	"qwen-max":  {Input: 1.60, CachedInput: 1.60, Output: 6.40},
	// Models that run here and cost nothing: the scripted models of
	// tests and demos.
	"scripted": {},
	"demo":     {},
}

// priceAliases are the providers' other names for a listed model that a
// date suffix does not explain.
var priceAliases = map[string]string{
	"claude-opus-4-0":           "claude-opus-4",
	"claude-sonnet-4-0":         "claude-sonnet-4",
	"gemini-2.0-flash-001":      "gemini-2.0-flash",
	"gemini-2.0-flash-lite-001": "gemini-2.0-flash-lite",
}

// datedSuffix matches the snapshot date providers append to a model id:
// "-2024-07-18" (OpenAI, Qwen), "-20250929" (Anthropic), "@20250929"
// (Anthropic on Vertex AI), or "-latest".
var datedSuffix = regexp.MustCompile(`([-@](\d{4}-\d{2}-\d{2}|\d{8})|-latest)$`)

// LookupPrice returns the built-in price of a model: nothing for a model
// served by Ollama (it runs locally) or a scripted model, the list price
// of a known model, and false for any other model, whose cost is then
// unknown — not zero. The model is matched by its exact id, lower-cased,
// after any "vendor/" part, then by the same id without a snapshot date
// or "-latest" suffix; never by a prefix, so a model this table does not
// list is reported unknown rather than priced as a cheaper relative.
func LookupPrice(provider Provider, model string) (Price, bool) {
	if ps, _ := specOf(provider); ps.free {
		return Price{}, true
	}
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	for _, id := range []string{name, datedSuffix.ReplaceAllString(name, "")} {
		if a, ok := priceAliases[id]; ok {
			id = a
		}
		if p, ok := knownPrices[id]; ok {
			return p, true
		}
	}
	return Price{}, false
}
