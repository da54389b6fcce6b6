package llm

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
)

// providerSpec is everything coorflow knows of one provider. Adding a
// provider is adding one entry to providerSpecs (and its constant): the
// config's checks, the key's variable, the base-URL variable, the default
// endpoint, where its key may go, its price rule and its client are all
// read from here, and the workflow file schema lists Providers().
type providerSpec struct {
	name Provider
	// keyEnv is the variable its API key is read from when a tier names
	// none ("" with noKey).
	keyEnv string
	// noKey: the provider takes no API key (a local server).
	noKey bool
	// keyOptionalAtBaseURL: a tier with a BaseURL may go without a key (a
	// server that speaks the provider's protocol and wants none).
	keyOptionalAtBaseURL bool
	// baseURLEnv gives the base URL of its tiers that set none; hostOnly
	// says the variable may hold a bare host:port (http assumed).
	baseURLEnv string
	hostOnly   bool
	// endpoint is the base URL its calls go to when a tier sets none.
	endpoint string
	// origins are its own endpoints, where its API key may always go.
	origins []string
	// free: it runs locally, so its calls cost nothing (LookupPrice).
	free bool
	// build makes the langchaingo client of a tier whose calls go to base
	// (Endpoint), with every option the client would otherwise read from
	// the process environment explicit.
	build func(ctx context.Context, mc ModelConfig, base, key string) (llms.Model, error)
}

// providerSpecs are the providers, in the order messages list them.
var providerSpecs = []providerSpec{
	{
		name: ProviderOpenAI, keyEnv: "OPENAI_API_KEY", keyOptionalAtBaseURL: true, baseURLEnv: EnvOpenAIBaseURL,
		endpoint: defaultOpenAIBaseURL, origins: []string{"https://api.openai.com:443"},
		build: func(_ context.Context, mc ModelConfig, base, key string) (llms.Model, error) {
			if key == "" {
				key = keyNotNeeded
			}
			return openai.New(openai.WithModel(mc.Model), openai.WithBaseURL(base), openai.WithToken(key),
				openai.WithOrganization(""), openai.WithHTTPClient(newHTTPClient(mc.Provider)))
		},
	},
	{
		name: ProviderAnthropic, keyEnv: "ANTHROPIC_API_KEY", baseURLEnv: EnvAnthropicBaseURL,
		endpoint: defaultAnthropicEndpoint, origins: []string{"https://api.anthropic.com:443"},
		build: func(_ context.Context, mc ModelConfig, base, key string) (llms.Model, error) {
			opts := []anthropic.Option{anthropic.WithModel(mc.Model), anthropic.WithToken(key),
				anthropic.WithHTTPClient(newHTTPClient(mc.Provider))}
			if mc.BaseURL != "" {
				opts = append(opts, anthropic.WithBaseURL(mc.BaseURL))
			}
			m, err := anthropic.New(opts...)
			if err != nil {
				return nil, err
			}
			return &anthropicModel{inner: m}, nil
		},
	},
	{
		name: ProviderOllama, noKey: true, baseURLEnv: EnvOllamaHost, hostOnly: true,
		endpoint: defaultOllamaEndpoint, free: true,
		build: func(_ context.Context, mc ModelConfig, base, _ string) (llms.Model, error) {
			opts := []ollama.Option{ollama.WithModel(mc.Model), ollama.WithHTTPClient(newHTTPClient(mc.Provider))}
			if mc.BaseURL != "" {
				if _, err := url.Parse(mc.BaseURL); err != nil {
					return nil, err
				}
				opts = append(opts, ollama.WithServerURL(mc.BaseURL))
			}
			m, err := ollama.New(opts...)
			if err != nil {
				return nil, err
			}
			// Its langchaingo client sends no tools: calls with tools go to
			// the same server's OpenAI-compatible API.
			compat, err := openai.New(openai.WithModel(mc.Model), openai.WithBaseURL(strings.TrimSuffix(base, "/")+"/v1"),
				openai.WithToken(keyNotNeeded), openai.WithOrganization(""), openai.WithHTTPClient(newHTTPClient(mc.Provider)))
			if err != nil {
				return nil, err
			}
			return &ollamaModel{inner: m, tools: compat, model: mc.Model, baseURL: mc.BaseURL}, nil
		},
	},
	{
		name: ProviderGoogleAI, keyEnv: "GOOGLE_API_KEY",
		endpoint: defaultGoogleAIEndpoint, origins: []string{"https://generativelanguage.googleapis.com:443"},
		// Gemini through its OpenAI-compatible endpoint, with langchaingo's
		// OpenAI client: the native client would bring in the Google Cloud
		// and gRPC modules, half of the binary. Its errors are Google's
		// ({"error": {"code", "message", "status"}}, in a list), captured
		// as for OpenAI.
		build: func(_ context.Context, mc ModelConfig, base, key string) (llms.Model, error) {
			return openai.New(openai.WithModel(mc.Model), openai.WithBaseURL(googleAIEndpoint(mc.BaseURL)),
				openai.WithToken(key), openai.WithOrganization(""), openai.WithHTTPClient(newHTTPClient(mc.Provider)))
		},
	},
}

// specOf returns what coorflow knows of provider p.
func specOf(p Provider) (providerSpec, bool) {
	for _, s := range providerSpecs {
		if s.name == p {
			return s, true
		}
	}
	return providerSpec{}, false
}

// providerNames lists the providers' names, in order.
func providerNames() []Provider {
	out := make([]Provider, len(providerSpecs))
	for i, s := range providerSpecs {
		out[i] = s.name
	}
	return out
}

// newProviderModel builds the langchaingo client of one tier.
func newProviderModel(ctx context.Context, mc ModelConfig, key string) (llms.Model, error) {
	s, ok := specOf(mc.Provider)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProvider, mc.Provider)
	}
	return s.build(ctx, mc, Endpoint(mc), key)
}
