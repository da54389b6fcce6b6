package workflows

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// ModelOptions says where a file's models come from besides the file.
type ModelOptions struct {
	// Getenv reads the variables of llm.Config.ApplyEnv (COORFLOW_MODEL,
	// COORFLOW_MODEL_<TIER>, OPENAI_BASE_URL, ANTHROPIC_BASE_URL,
	// OLLAMA_HOST), the keys the tiers name and the ${ENV} of base URLs
	// (os.Getenv when nil).
	Getenv func(string) string
	// Overrides set tiers to "provider:model" (the CLI's --model), over
	// the file and the environment (see llm.Config.ApplyEnv for the
	// whole precedence).
	Overrides map[llm.Tier]string
	// Demo uses the file's demo model even when a provider is configured.
	Demo bool
}

// Models are the models a file runs with.
type Models struct {
	*llm.Models
	// Demo is true when a demo model serves every tier: the file's
	// scripted one, or the reactive demo for a file without a script.
	// Reason then says why (no provider configured, or asked for).
	Demo   bool
	Reason string
	// Script is the demo script's path, "" for the reactive demo.
	Script string
	// ScriptFor holds the words a request must name for the script to
	// answer it (its when_input_contains) when the reactive demo answers
	// the others; nil when the script answers every request.
	ScriptFor []string
	// Config is the configuration the providers were built from.
	Config llm.Config
}

// ErrNoDemo: a demo was asked for, and the file has neither a demo script
// nor only nodes the reactive demo can play.
var ErrNoDemo = errors.New("workflows: the file has no demo model")

// Resolve returns the models of the file: its models section, overridden
// by the environment and then by opts.Overrides (llm.Config.ApplyEnv).
// When that leaves no usable provider — no basic tier, or a missing API
// key — and neither COORFLOW_MODEL(_<TIER>) nor an override asked for a
// model, a demo model serves every tier and Models.Demo says so: the
// file's demo script when it has one (the script wins: it was written for
// the file), or else the reactive demo (see ReactiveDemo), which the
// built-in workflows run on. A file whose nodes call no model gets nil
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
		if !f.HasDemo() {
			return nil, fmt.Errorf("%w: %s has no demo.script, and llm or react nodes that only a real model can answer; %s",
				ErrNoDemo, f.path, f.demoScriptHint())
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
	if f.HasDemo() && !explicitModel(opts) && (errors.Is(err, llm.ErrMissingAPIKey) || errors.Is(err, llm.ErrMissingModel)) {
		return f.demo(demoReason(err), cfg)
	}
	if !f.HasDemo() && !explicitModel(opts) && errors.Is(err, llm.ErrMissingAPIKey) {
		return nil, fmt.Errorf("workflows: %s: %w; %s", f.path, err, f.demoScriptHint())
	}
	return nil, fmt.Errorf("workflows: %s: %w", f.path, err)
}

// HasDemo reports whether the file can run on a demo model: it has a demo
// script, or the reactive demo can play all its nodes.
func (f *File) HasDemo() bool { return f.DemoScript() != "" || f.ReactiveDemo() != nil }

// explicitModel reports whether the environment or the command line asked
// for a model, in which case a missing key is an error, not the demo.
func explicitModel(opts ModelOptions) bool {
	if len(opts.Overrides) > 0 || strings.TrimSpace(opts.Getenv(llm.EnvModel)) != "" {
		return true
	}
	for _, t := range llm.Tiers() {
		if strings.TrimSpace(opts.Getenv(llm.EnvModelTier(t))) != "" {
			return true
		}
	}
	return false
}

func (f *File) demo(reason string, cfg llm.Config) (*Models, error) {
	// Both demos call themselves "demo" in the recording, which is how
	// replay knows a run was a demo.
	profile := llm.Profile{Model: "demo"}
	var model llms.Model
	var scriptFor []string
	if f.DemoScript() != "" {
		script, err := f.readDemoScript()
		if err != nil {
			return nil, fmt.Errorf("workflows: %s: %w", f.path, err)
		}
		dm := NewDemoModel(script)
		if rd := f.ReactiveDemo(); rd != nil && len(script.InputContains) > 0 {
			dm.WithFallback(rd)
			scriptFor = script.InputContains
		}
		model = dm
	} else {
		model = f.ReactiveDemo()
	}
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model, Profile: profile}})
	if err != nil {
		return nil, err
	}
	return &Models{Models: ms, Demo: true, Reason: reason, Script: f.DemoScript(), ScriptFor: scriptFor, Config: cfg}, nil
}

// modelConfig builds the llm configuration from the file, the environment
// and the overrides.
func (f *File) modelConfig(opts ModelOptions) (llm.Config, error) {
	// The file chooses the base URLs: the keys go only where the
	// operator lets them (llm.Config.Confined).
	cfg := llm.Config{Models: map[llm.Tier]llm.ModelConfig{}, Confined: true}
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
	var overrides []llm.Override
	for _, tier := range llm.Tiers() { // in tier order, for stable errors
		if spec, ok := opts.Overrides[tier]; ok {
			overrides = append(overrides, llm.Override{Tier: tier, Model: spec})
		}
	}
	for tier, spec := range opts.Overrides {
		if !tier.Valid() {
			overrides = append(overrides, llm.Override{Tier: tier, Model: spec})
		}
	}
	if err := cfg.ApplyEnv(opts.Getenv, overrides...); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// Resolved is how each tier resolved (llm.Config.Resolved), nil for a
// demo, which serves every tier.
func (m *Models) Resolved() []llm.Resolved {
	if m.Demo {
		return nil
	}
	return m.Config.Resolved()
}

// Describe names the models in one line: "basic openai:gpt-4o-mini,
// reasoning openai:o4-mini", or the demo script.
func (m *Models) Describe() string {
	switch {
	case m.Demo && m.Script != "" && len(m.ScriptFor) > 0:
		return "scripted demo model (" + m.Script + ") for requests naming " + strings.Join(m.ScriptFor, " and ") +
			", reactive demo model (built-in) for others"
	case m.Demo && m.Script != "":
		return "scripted demo model (" + m.Script + ")"
	case m.Demo:
		return "reactive demo model (built-in; answers from each request, offline)"
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
