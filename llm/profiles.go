package llm

import "strings"

// Profile describes the model serving a tier.
type Profile struct {
	Provider Provider // provider serving the model
	Model    string   // provider's model name
	// MaxInputTokens is the model's input window in tokens; 0 when unknown
	// (callers then fall back to their own default budget).
	MaxInputTokens int
	// Price overrides the built-in price of the model (LookupPrice).
	Price *Price
}

// Info names the model serving tier t in events and traces, with what
// Observe needs to price its calls.
func (p Profile) Info(t Tier) ModelInfo {
	return ModelInfo{Tier: string(t), Model: p.Model, Provider: p.Provider, Price: p.Price}
}

// knownWindows maps model-name prefixes to input windows in tokens, as the
// providers publish them. MaxInputTokens picks the longest matching prefix,
// so "gpt-4o-mini-2024-07-18" finds "gpt-4o-mini" and "llama3.1:8b" finds
// "llama3.1" before "llama3". Where a provider has raised a window over
// time, the smaller published figure is kept: underestimating a window
// costs an early summary, overestimating it costs a failed call.
var knownWindows = map[string]int{
	// OpenAI
	"gpt-3.5-turbo": 16_385,
	"gpt-4":         8_192,
	"gpt-4-32k":     32_768,
	"gpt-4-turbo":   128_000,
	"gpt-4o":        128_000,
	"gpt-4o-mini":   128_000,
	"gpt-4.1":       1_047_576,
	"gpt-5":         272_000,
	"o1":            200_000,
	"o1-mini":       128_000,
	"o3":            200_000,
	"o3-mini":       200_000,
	"o4-mini":       200_000,
	// Anthropic
	"claude-3":        200_000,
	"claude-3-5":      200_000,
	"claude-3.5":      200_000,
	"claude-3-7":      200_000,
	"claude-3.7":      200_000,
	"claude-sonnet-4": 200_000,
	"claude-opus-4":   200_000,
	// Google
	"gemini-1.5-pro":   2_097_152,
	"gemini-1.5-flash": 1_048_576,
	"gemini-2":         1_048_576,
	// DeepSeek
	"deepseek-chat":     65_536,
	"deepseek-reasoner": 65_536,
	// Qwen (DashScope)
	"qwen-max":  30_720,
	"qwen-plus": 129_024,
	// Meta Llama (Ollama and Hugging Face names)
	"llama3":    8_192,
	"llama-3":   8_192,
	"llama3.1":  131_072,
	"llama-3.1": 131_072,
	"llama3.2":  131_072,
	"llama-3.2": 131_072,
	"llama3.3":  131_072,
	"llama-3.3": 131_072,
}

// MaxInputTokens returns the input window of a known model, matching the
// longest known prefix of its lower-cased name after any "vendor/" part
// (so "openai/gpt-4o" and "meta-llama/Llama-3.1-8B" are found), or 0 when
// the model is unknown. ModelConfig.MaxInputTokens overrides it.
func MaxInputTokens(model string) int {
	w, _ := longestPrefix(knownWindows, model)
	return w
}

// longestPrefix returns the entry of table whose key is the longest prefix
// of model's lower-cased name after any "vendor/" part, ending at a word
// boundary.
func longestPrefix[T any](table map[string]T, model string) (T, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	best, found := -1, *new(T)
	for prefix, v := range table {
		if len(prefix) > best && strings.HasPrefix(name, prefix) && boundary(name, len(prefix)) {
			best, found = len(prefix), v
		}
	}
	return found, best >= 0
}

// boundary reports whether a prefix of length n of name ends at a word
// boundary, so that "o1" matches "o1-preview" but not "o10".
func boundary(name string, n int) bool {
	if n == len(name) {
		return true
	}
	prev, next := name[n-1], name[n]
	if isAlnum(prev) && isAlnum(next) && isDigit(prev) == isDigit(next) {
		return false
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'z' }
