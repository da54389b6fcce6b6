package workflows

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

// ModelOptions says where a file's models come from besides the file.
type ModelOptions struct {
	// Getenv reads OPENAI_API_KEY, OPENAI_BASE_URL, COORFLOW_MODEL, the
	// keys the tiers name and the ${ENV} of base URLs (os.Getenv when nil).
	Getenv func(string) string
	// Overrides set tiers to "provider:model" (the CLI's --model), over
	// the file and the environment.
	Overrides map[llm.Tier]string
	// Demo uses the file's demo script even when a provider is configured.
	Demo bool
}

// Models are the models a file runs with.
type Models struct {
	*llm.Models
	// Demo is true when the file's scripted demo model serves every tier;
	// Reason then says why (no provider configured).
	Demo   bool
	Reason string
	// Script is the demo script's path.
	Script string
	// Config is the configuration the providers were built from.
	Config llm.Config
}

// ErrNoDemo: a demo was asked for, and the file has no demo script.
var ErrNoDemo = errors.New("workflows: the file has no demo script")

// Resolve returns the models of the file: its models section, overridden
// by the environment (llm.Config.ApplyEnv) and then by opts.Overrides.
// When that leaves no usable provider — no basic tier, or a missing API
// key — and the file has a demo script, and neither COORFLOW_MODEL nor an
// override asked for a model, the scripted demo model serves every tier
// and Models.Demo says so. A file whose nodes call no model gets nil
// Models.
func (f *File) Resolve(ctx context.Context, opts ModelOptions) (*Models, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	cfg, err := f.modelConfig(opts)
	if err != nil {
		return nil, err
	}
	if opts.Demo {
		if f.DemoScript() == "" {
			return nil, fmt.Errorf("%w: %s has no demo.script", ErrNoDemo, f.path)
		}
		return f.demo("asked for", cfg)
	}
	if !f.NeedsModels() {
		return &Models{Config: cfg}, nil
	}
	ms, err := llm.New(ctx, cfg)
	if err == nil {
		return &Models{Models: ms, Config: cfg}, nil
	}
	explicit := len(opts.Overrides) > 0 || strings.TrimSpace(opts.Getenv(llm.EnvModel)) != ""
	if f.DemoScript() != "" && !explicit && (errors.Is(err, llm.ErrMissingAPIKey) || errors.Is(err, llm.ErrMissingModel)) {
		return f.demo(demoReason(err), cfg)
	}
	return nil, fmt.Errorf("workflows: %s: %w", f.path, err)
}

func (f *File) demo(reason string, cfg llm.Config) (*Models, error) {
	script, err := scripted.LoadFile(f.DemoScript())
	if err != nil {
		return nil, fmt.Errorf("workflows: %s: demo script: %w", f.path, err)
	}
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{
		llm.TierBasic: {Model: NewDemoModel(script), Profile: llm.Profile{Model: "demo"}},
	})
	if err != nil {
		return nil, err
	}
	return &Models{Models: ms, Demo: true, Reason: reason, Script: f.DemoScript(), Config: cfg}, nil
}

// modelConfig builds the llm configuration from the file, the environment
// and the overrides.
func (f *File) modelConfig(opts ModelOptions) (llm.Config, error) {
	cfg := llm.Config{Models: map[llm.Tier]llm.ModelConfig{}}
	for _, tier := range llm.Tiers() {
		m, ok := f.spec.Models[string(tier)]
		if !ok {
			continue
		}
		base, missing := expandEnv(m.BaseURL, opts.Getenv)
		if len(missing) > 0 {
			return cfg, unsetError(fmt.Sprintf("%s: models.%s.base_url", f.path, tier), missing)
		}
		mc := llm.ModelConfig{Provider: llm.Provider(m.Provider), Model: m.Model, BaseURL: base, APIKeyEnv: m.APIKeyEnv,
			MaxRetries: m.MaxRetries, MaxInputTokens: m.MaxInputTokens, Price: m.Price.price()}
		mc.Timeout, _ = time.ParseDuration(m.Timeout)
		cfg.Models[tier] = mc
	}
	if err := cfg.ApplyEnv(opts.Getenv); err != nil {
		return cfg, err
	}
	for tier, spec := range opts.Overrides {
		provider, model, ok := strings.Cut(spec, ":")
		p := llm.Provider(provider)
		if !ok || model == "" || !p.Valid() {
			return cfg, fmt.Errorf("workflows: model %s=%s: want TIER=provider:model with a provider among %v", tier, spec, llm.Providers())
		}
		if !tier.Valid() {
			return cfg, fmt.Errorf("workflows: model %s=%s: %w %q (known tiers: %v)", tier, spec, llm.ErrUnknownTier, tier, llm.Tiers())
		}
		mc := cfg.Models[tier]
		if mc.Provider != p {
			mc.BaseURL, mc.APIKeyEnv = "", ""
		}
		if mc.Provider != p || mc.Model != model {
			mc.Price = nil // the price was another model's
		}
		mc.Provider, mc.Model = p, model
		cfg.Models[tier] = mc
	}
	return cfg, nil
}

// Describe names the models in one line: "basic openai:gpt-4o-mini,
// reasoning openai:o4-mini", or the demo script.
func (m *Models) Describe() string {
	if m.Demo {
		return "scripted demo model (" + m.Script + ")"
	}
	var parts []string
	for _, t := range llm.Tiers() {
		if mc, ok := m.Config.Models[t]; ok {
			parts = append(parts, fmt.Sprintf("%s %s:%s", t, mc.Provider, mc.Model))
		}
	}
	return strings.Join(parts, ", ")
}

var unsetVar = regexp.MustCompile(`environment variable (\S+) is not set`)

// demoReason says in a few words why no provider is usable.
func demoReason(err error) string {
	if m := unsetVar.FindStringSubmatch(err.Error()); m != nil {
		return m[1] + " is not set"
	}
	var ce *llm.ConfigError
	if errors.As(err, &ce) && errors.Is(err, llm.ErrMissingModel) {
		return "no model is configured"
	}
	return err.Error()
}
