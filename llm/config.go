package llm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Provider names the API family a model is reached through.
type Provider string

// The providers, each backed by a langchaingo client.
const (
	// ProviderOpenAI is OpenAI's chat-completions API, or any server that
	// speaks it (vLLM, Ollama's /v1, DeepSeek, Qwen/DashScope, LiteLLM)
	// when BaseURL points at it.
	ProviderOpenAI Provider = "openai"
	// ProviderAnthropic is Anthropic's Messages API.
	ProviderAnthropic Provider = "anthropic"
	// ProviderOllama is Ollama's native API. Its langchaingo client sends
	// no tools, so a call with tools goes to the same server's
	// OpenAI-compatible API (BaseURL + "/v1") instead.
	ProviderOllama Provider = "ollama"
	// ProviderGoogleAI is the Gemini API of Google AI Studio, reached
	// through its OpenAI-compatible endpoint (BaseURL/v1beta/openai).
	ProviderGoogleAI Provider = "googleai"
)

// Providers returns every supported provider (providerSpecs).
func Providers() []Provider { return providerNames() }

// Valid reports whether p is a supported provider.
func (p Provider) Valid() bool {
	_, ok := specOf(p)
	return ok
}

// Environment variables read by ApplyEnv.
const (
	// EnvModel selects the model of the basic tier and of every tier the
	// file set, as "provider:model", e.g. "openai:gpt-4o" or
	// "ollama:llama3.1:8b" (split at the first colon); EnvModelTier names
	// the variable of one tier. See ApplyEnv for the precedence.
	EnvModel = "COORFLOW_MODEL"
	// EnvOpenAIBaseURL gives the base URL of OpenAI tiers that set none.
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
	// EnvAnthropicBaseURL gives the base URL of Anthropic tiers that set
	// none, as Anthropic's SDKs read it.
	EnvAnthropicBaseURL = "ANTHROPIC_BASE_URL"
	// EnvOllamaHost gives the server of Ollama tiers that set none, as
	// Ollama's own CLI reads it: "host:port" or a URL.
	EnvOllamaHost = "OLLAMA_HOST"
)

// Defaults for zero fields of a ModelConfig.
const (
	DefaultMaxRetries = 3
	DefaultTimeout    = 2 * time.Minute
)

// ModelConfig configures the model of one tier. The API key itself never
// appears in it: APIKeyEnv names the environment variable that holds it.
type ModelConfig struct {
	// Provider is the API family; required.
	Provider Provider `yaml:"provider"`
	// Model is the provider's model name, e.g. "gpt-4o"; required.
	Model string `yaml:"model"`
	// BaseURL overrides the provider's endpoint, e.g.
	// "http://localhost:8000/v1" for vLLM. For Ollama it is the server URL;
	// for Google AI the root of the REST API (by default
	// https://generativelanguage.googleapis.com), under which
	// /v1beta/openai is used, or that OpenAI-compatible endpoint itself.
	BaseURL string `yaml:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the API key. It
	// defaults to OPENAI_API_KEY, ANTHROPIC_API_KEY or GOOGLE_API_KEY by
	// provider. The variable must be set, except for an OpenAI tier with a
	// BaseURL and no APIKeyEnv of its own (local servers need no key).
	// Ollama takes no key.
	APIKeyEnv string `yaml:"api_key_env,omitempty"`
	// MaxRetries is how often a rate-limited or transient failure is
	// retried: 0 means DefaultMaxRetries, a negative value none.
	MaxRetries int `yaml:"max_retries,omitempty"`
	// Timeout bounds each attempt ("30s" in YAML): 0 means DefaultTimeout,
	// a negative value none.
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// MaxInputTokens overrides the model's input window from the table of
	// known models (see MaxInputTokens); 0 means use the table.
	MaxInputTokens int `yaml:"max_input_tokens,omitempty"`
	// Price overrides the model's price from the table of known models
	// (see LookupPrice); nil means use the table.
	Price *Price `yaml:"price,omitempty"`
}

// Config maps tiers to models. The basic tier is required; the other
// tiers, when absent, are served by the basic tier's model.
//
// In YAML:
//
//	models:
//	  basic:
//	    provider: openai
//	    model: gpt-4o-mini
//	  reasoning:
//	    provider: openai
//	    model: deepseek-reasoner
//	    base_url: https://api.deepseek.com/v1
//	    api_key_env: DEEPSEEK_API_KEY
//	    timeout: 5m
type Config struct {
	// Models holds the model of each configured tier.
	Models map[Tier]ModelConfig `yaml:"models"`
	// Getenv looks up API keys by the names in APIKeyEnv; nil means
	// os.Getenv. ApplyEnv sets it.
	Getenv func(string) string `yaml:"-"`
	// OnRetry, if set, is told of every retry of every tier's model before
	// its wait, e.g. to log it; it must not block.
	OnRetry func(t Tier, retry int, wait time.Duration, err error) `yaml:"-"`
	// Confined marks a configuration someone other than the operator
	// wrote, such as a workflow file from elsewhere, which chooses base
	// URLs: a tier's API key is then sent only to its provider's own
	// endpoint, to a base URL the environment set (OPENAI_BASE_URL...),
	// or to an origin of AllowEndpoints. Any other base URL gets no key:
	// an OpenAI tier without api_key_env runs keyless, as for a local
	// server, and New fails with ErrEndpointNotAllowed for the others.
	Confined bool `yaml:"-"`
	// AllowEndpoints are origins ("https://llm.example.com:443") a
	// confined configuration's keys may be sent to; ApplyEnv adds those
	// of COORFLOW_ALLOW_ENDPOINTS.
	AllowEndpoints []string `yaml:"-"`

	file  string         // where the config was loaded from
	lines map[string]int // "tier" and "tier.field" → line in file
	// origins and endpoints say which setting chose a tier's model and
	// its base URL, when not the file (see ApplyEnv).
	origins, endpoints map[Tier]string
}

// LoadConfig reads a YAML configuration. It reports syntax errors, unknown
// fields, unknown tiers and unknown providers, with their line; what the
// environment can still supply (models, keys) is checked by Validate.
func LoadConfig(r io.Reader) (Config, error) {
	return loadConfig(r, "")
}

// LoadConfigFile reads a YAML configuration from a file, like LoadConfig;
// errors name the file.
func LoadConfigFile(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("llm: load config: %w", err)
	}
	defer f.Close()
	return loadConfig(f, path)
}

func loadConfig(r io.Reader, file string) (Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Config{}, fmt.Errorf("llm: read config: %w", err)
	}
	cfg := Config{file: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, &ConfigError{File: file, Msg: err.Error(), Err: ErrInvalidConfig}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Config{}, &ConfigError{File: file, Msg: err.Error(), Err: ErrInvalidConfig}
	}
	cfg.lines = lineIndex(&root)
	for _, t := range cfg.sortedTiers() {
		if !t.Valid() {
			return Config{}, cfg.errorf(t, "", ErrUnknownTier,
				"unknown tier %q (known tiers: %v)", t, allTiers)
		}
		if p := cfg.Models[t].Provider; p != "" && !p.Valid() {
			return Config{}, cfg.errorf(t, "provider", ErrUnknownProvider,
				"unknown provider %q (known providers: %v)", p, Providers())
		}
	}
	return cfg, nil
}

// lineIndex records the lines of the tiers and fields under "models".
func lineIndex(root *yaml.Node) map[string]int {
	lines := map[string]int{}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return lines
	}
	top := root.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "models" {
			continue
		}
		models := top.Content[i+1]
		for j := 0; j+1 < len(models.Content); j += 2 {
			tier := models.Content[j].Value
			lines[tier] = models.Content[j].Line
			fields := models.Content[j+1]
			for k := 0; k+1 < len(fields.Content); k += 2 {
				lines[tier+"."+fields.Content[k].Value] = fields.Content[k].Line
			}
		}
	}
	return lines
}

// ApplyEnv applies the environment, read through getenv, and then the
// overrides (the command line's --model) over the file. The precedence, from
// strongest to weakest, is:
//
//  1. an override (--model TIER=provider:model) for its tier;
//  2. COORFLOW_MODEL_<TIER> (COORFLOW_MODEL_REASONING=…) for its tier;
//  3. COORFLOW_MODEL for the basic tier and every tier the file set: the
//     models a file names are examples, and a model chosen for this run
//     replaces all of them, so that COORFLOW_MODEL=ollama:llama3 alone
//     runs every tier on llama3;
//  4. the file.
//
// Tiers that nothing sets follow basic. A model chosen over the file keeps
// the tier's base_url and api_key_env when its provider is the tier's
// (the endpoint goes with the provider) and drops them otherwise. Then
// OPENAI_BASE_URL becomes the base_url of every OpenAI tier that has none
// (a base_url written for one tier, such as DeepSeek's, wins);
// ANTHROPIC_BASE_URL and OLLAMA_HOST do the same for Anthropic and Ollama
// tiers. API keys
// are read at New through getenv, which ApplyEnv stores in Getenv;
// OPENAI_API_KEY is the default key variable of OpenAI tiers. Origins
// (see Resolved) record which of these chose each tier.
func (c *Config) ApplyEnv(getenv func(string) string, overrides ...Override) error {
	c.Getenv = getenv
	if c.Models == nil {
		c.Models = map[Tier]ModelConfig{}
	}
	if v := strings.TrimSpace(getenv(EnvModel)); v != "" {
		tiers := []Tier{TierBasic}
		for t := range c.Models {
			if t != TierBasic {
				tiers = append(tiers, t)
			}
		}
		for _, t := range tiers {
			if err := c.choose(t, v, EnvModel); err != nil {
				return err
			}
		}
	}
	for _, t := range allTiers {
		name := EnvModelTier(t)
		if v := strings.TrimSpace(getenv(name)); v != "" {
			if err := c.choose(t, v, name); err != nil {
				return err
			}
		}
	}
	for _, o := range overrides {
		if !o.Tier.Valid() {
			return &ConfigError{Msg: fmt.Sprintf("%s=%s: unknown tier %q (known tiers: %v)", o.origin(), o.Model, o.Tier, allTiers),
				Err: ErrUnknownTier}
		}
		if err := c.choose(o.Tier, o.Model, o.origin()); err != nil {
			return err
		}
	}
	c.AllowEndpoints = append(c.AllowEndpoints, parseAllowed(getenv(EnvAllowEndpoints))...)
	for _, ps := range providerSpecs {
		if ps.baseURLEnv == "" {
			continue
		}
		base := strings.TrimSpace(getenv(ps.baseURLEnv))
		if ps.hostOnly && base != "" && !strings.Contains(base, "://") {
			base = "http://" + base
		}
		c.applyBaseURL(ps.name, ps.baseURLEnv, base)
	}
	return nil
}

// applyBaseURL makes base the base URL of the tiers of provider p that
// set none; name is the variable it came from.
func (c *Config) applyBaseURL(p Provider, name, base string) {
	if base == "" {
		return
	}
	for t, mc := range c.Models {
		if mc.Provider == p && mc.BaseURL == "" {
			mc.BaseURL = base
			c.Models[t] = mc
			c.setEndpointOrigin(t, name)
		}
	}
}

// Override is a model chosen for one tier over the file and the
// environment, such as the command line's --model.
type Override struct {
	Tier Tier
	// Model is "provider:model", e.g. "openai:gpt-4o".
	Model string
	// Origin names where it came from in the resolution table and in
	// errors ("--model TIER" when empty).
	Origin string
}

func (o Override) origin() string {
	if o.Origin == "" {
		return "--model " + string(o.Tier)
	}
	return o.Origin
}

// EnvModelTier is the variable that selects the model of tier t alone:
// COORFLOW_MODEL_BASIC, COORFLOW_MODEL_REASONING, COORFLOW_MODEL_VISION,
// COORFLOW_MODEL_CODE.
func EnvModelTier(t Tier) string { return EnvModel + "_" + strings.ToUpper(string(t)) }

// ParseModel splits "provider:model" at the first colon ("ollama:
// llama3.1:8b" is provider ollama, model llama3.1:8b) and checks the
// provider; origin names the setting in the error.
func ParseModel(spec, origin string) (Provider, string, error) {
	provider, model, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok || provider == "" || model == "" {
		return "", "", &ConfigError{Msg: fmt.Sprintf("%s=%q: want provider:model, e.g. openai:gpt-4o", origin, spec),
			Err: ErrInvalidConfig}
	}
	p := Provider(provider)
	if !p.Valid() {
		return "", "", &ConfigError{Msg: fmt.Sprintf("%s=%q: unknown provider %q (known providers: %v)",
			origin, spec, provider, Providers()), Err: ErrUnknownProvider}
	}
	return p, model, nil
}

// choose sets tier t to spec, as origin chose it.
func (c *Config) choose(t Tier, spec, origin string) error {
	p, model, err := ParseModel(spec, origin)
	if err != nil {
		return err
	}
	mc, had := c.Models[t]
	if mc.Provider != p {
		mc.BaseURL, mc.APIKeyEnv = "", ""
	}
	if had && (mc.Model != model || mc.Provider != p) {
		mc.MaxInputTokens = 0 // the file's window was the file's model's
		mc.Price = nil        // and so was its price
	}
	mc.Provider, mc.Model = p, model
	c.Models[t] = mc
	if c.origins == nil {
		c.origins = map[Tier]string{}
	}
	c.origins[t] = origin
	return nil
}

func (c *Config) setEndpointOrigin(t Tier, origin string) {
	if c.endpoints == nil {
		c.endpoints = map[Tier]string{}
	}
	c.endpoints[t] = origin
}

// Validate checks that every tier is known and names a known provider and a
// model, and that the basic tier is configured. It does not look up keys;
// New does.
func (c Config) Validate() error {
	if _, ok := c.Models[TierBasic]; !ok {
		return &ConfigError{File: c.file, Tier: TierBasic, Err: ErrMissingModel,
			Msg: "not configured; every configuration needs a basic tier (or set " + EnvModel + ")"}
	}
	for _, t := range c.sortedTiers() {
		if !t.Valid() {
			return c.errorf(t, "", ErrUnknownTier, "unknown tier %q (known tiers: %v)", t, allTiers)
		}
		mc := c.Models[t]
		switch {
		case mc.Provider == "":
			return c.errorf(t, "provider", ErrUnknownProvider,
				"missing provider (one of %v)", Providers())
		case !mc.Provider.Valid():
			return c.errorf(t, "provider", ErrUnknownProvider,
				"unknown provider %q (known providers: %v)", mc.Provider, Providers())
		case strings.TrimSpace(mc.Model) == "":
			return c.errorf(t, "model", ErrMissingModel, "missing model name")
		case mc.APIKeyEnv != "" && takesNoKey(mc.Provider):
			return c.errorf(t, "api_key_env", ErrInvalidConfig,
				"provider %s takes no API key; remove api_key_env", mc.Provider)
		case mc.Price != nil && mc.Price.Validate() != nil:
			return c.errorf(t, "price", ErrInvalidConfig, "a price cannot be negative (dollars per million tokens)")
		}
	}
	return nil
}

// takesNoKey reports whether provider p takes no API key.
func takesNoKey(p Provider) bool {
	ps, _ := specOf(p)
	return ps.noKey
}

// apiKey returns the API key of a tier, or an error naming the variable
// that should hold it.
func (c Config) apiKey(t Tier, mc ModelConfig) (string, error) {
	ps, _ := specOf(mc.Provider)
	if ps.noKey {
		return "", nil
	}
	name := mc.APIKeyEnv
	required := true
	if name == "" {
		name = ps.keyEnv
		required = !ps.keyOptionalAtBaseURL || mc.BaseURL == ""
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	key := strings.TrimSpace(getenv(name))
	if key == "" && required {
		return "", c.errorf(t, "api_key_env", ErrMissingAPIKey,
			"environment variable %s is not set (it should hold the %s API key)", name, mc.Provider)
	}
	if to, ok := c.keyMayGo(t, mc); key != "" && !ok {
		if !required {
			return "", nil // a local server's, which needs no key
		}
		return "", c.errorf(t, "base_url", ErrEndpointNotAllowed,
			"%s is not an endpoint of %s, so %s is not sent to it: a workflow file may send a key only to its provider; "+
				"if you trust the endpoint, allow it: %s=%s", to, mc.Provider, name, EnvAllowEndpoints, to)
	}
	return key, nil
}

// sortedTiers returns the configured tiers in a stable order: known tiers
// first in canonical order, then unknown ones by name.
func (c Config) sortedTiers() []Tier {
	var known, unknown []Tier
	for t := range c.Models {
		if t.Valid() {
			known = append(known, t)
		} else {
			unknown = append(unknown, t)
		}
	}
	slices.SortFunc(known, func(a, b Tier) int {
		return slices.Index(allTiers, a) - slices.Index(allTiers, b)
	})
	slices.Sort(unknown)
	return append(known, unknown...)
}

// errorf builds a ConfigError for a tier's field, with its file and line.
func (c Config) errorf(t Tier, field string, sentinel error, format string, args ...any) *ConfigError {
	line := c.lines[string(t)+"."+field]
	if line == 0 {
		line = c.lines[string(t)]
	}
	return &ConfigError{File: c.file, Line: line, Tier: t, Field: field,
		Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// withDefaults returns mc with zero fields replaced by their defaults and
// negative ones by zero.
func (mc ModelConfig) withDefaults() ModelConfig {
	switch {
	case mc.MaxRetries == 0:
		mc.MaxRetries = DefaultMaxRetries
	case mc.MaxRetries < 0:
		mc.MaxRetries = 0
	}
	switch {
	case mc.Timeout == 0:
		mc.Timeout = DefaultTimeout
	case mc.Timeout < 0:
		mc.Timeout = 0
	}
	if mc.MaxInputTokens <= 0 {
		mc.MaxInputTokens = MaxInputTokens(mc.Model)
	}
	return mc
}
