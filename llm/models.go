package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// defaultOpenAIBaseURL is passed explicitly so that langchaingo's client
// never reads OPENAI_BASE_URL from the process behind Config.Getenv's back.
const defaultOpenAIBaseURL = "https://api.openai.com/v1"

// defaultGoogleAIBaseURL is the root of the Gemini API of Google AI
// Studio; googleAIOpenAIPath is where under it the API speaks OpenAI's
// chat-completions protocol.
const (
	defaultGoogleAIBaseURL = "https://generativelanguage.googleapis.com"
	googleAIOpenAIPath     = "/v1beta/openai"
)

// keyNotNeeded is the token given to OpenAI-compatible local servers that
// take no key; langchaingo's client refuses an empty one.
const keyNotNeeded = "not-needed"

// Models serves one model per tier. It is safe for concurrent use.
type Models struct {
	tiers   map[Tier]TierModel
	closers []io.Closer
}

// TierModel is a model with its profile, as Models serves it.
type TierModel struct {
	Model   llms.Model // the model, used as given
	Profile Profile    // what Models.Profile reports for the tier
}

// New builds the model of every configured tier, after Validate. Each model
// is a langchaingo client wrapped so that its errors carry *APIError and
// are classified, an answer with no text and no tool call is an
// *EmptyResponseError, every attempt is bounded by the tier's Timeout, and
// rate-limited and transient failures are retried up to MaxRetries times
// (see WithRetry). Their errors hold none of the configured API keys, nor
// anything shaped like a credential (see RedactError). A missing API key fails with an error naming the
// variable. New makes no network call.
func New(ctx context.Context, cfg Config) (*Models, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tierKeys := map[Tier]string{}
	var keys []string
	for _, t := range cfg.sortedTiers() {
		key, err := cfg.apiKey(t, cfg.Models[t].withDefaults())
		if err != nil {
			return nil, err
		}
		tierKeys[t] = key
		keys = append(keys, key)
	}
	ms := &Models{tiers: map[Tier]TierModel{}}
	for _, t := range cfg.sortedTiers() {
		mc := cfg.Models[t].withDefaults()
		base, err := newProviderModel(ctx, mc, tierKeys[t])
		if err != nil {
			_ = ms.Close()
			return nil, cfg.errorf(t, "", ErrInvalidConfig, "build %s model %q: %v", mc.Provider, mc.Model, err)
		}
		if c, ok := base.(io.Closer); ok {
			ms.closers = append(ms.closers, c)
		}
		var m llms.Model = &captureModel{inner: base, provider: mc.Provider, keys: keys}
		m = &answerModel{inner: m, provider: mc.Provider, model: mc.Model}
		m = WithTimeout(m, mc.Timeout)
		policy := RetryPolicy{MaxRetries: mc.MaxRetries}
		if cfg.OnRetry != nil {
			policy.OnRetry = func(retry int, wait time.Duration, err error) { cfg.OnRetry(t, retry, wait, err) }
		}
		m = WithRetry(m, policy)
		ms.tiers[t] = TierModel{Model: m, Profile: Profile{
			Provider: mc.Provider, Model: mc.Model, MaxInputTokens: mc.MaxInputTokens, Price: mc.Price,
		}}
	}
	return ms, nil
}

// NewStatic returns Models serving models built elsewhere — a scripted
// model in tests, a custom client. The basic tier is required; absent tiers
// are served by it, as with New. The models are used as given, without the
// retry and timeout wrappers New adds.
func NewStatic(tiers map[Tier]TierModel) (*Models, error) {
	if _, ok := tiers[TierBasic]; !ok {
		return nil, &ConfigError{Tier: TierBasic, Msg: "not configured", Err: ErrMissingModel}
	}
	ms := &Models{tiers: map[Tier]TierModel{}}
	for t, tm := range tiers {
		if !t.Valid() {
			return nil, &ConfigError{Tier: t, Msg: fmt.Sprintf("unknown tier %q (known tiers: %v)", t, allTiers),
				Err: ErrUnknownTier}
		}
		if tm.Model == nil {
			return nil, &ConfigError{Tier: t, Msg: "nil model", Err: ErrMissingModel}
		}
		ms.tiers[t] = tm
	}
	return ms, nil
}

// Model returns the model of tier t, or of the basic tier when t has none
// of its own. An unknown tier gives an error wrapping ErrUnknownTier.
func (m *Models) Model(t Tier) (llms.Model, error) {
	tm, err := m.lookup(t)
	if err != nil {
		return nil, err
	}
	return tm.Model, nil
}

// Profile returns the profile of the model serving tier t (the basic
// tier's when t has none of its own), or the zero Profile for an unknown
// tier.
func (m *Models) Profile(t Tier) Profile {
	tm, err := m.lookup(t)
	if err != nil {
		return Profile{}
	}
	return tm.Profile
}

func (m *Models) lookup(t Tier) (TierModel, error) {
	if !t.Valid() {
		return TierModel{}, fmt.Errorf("%w %q (known tiers: %v)", ErrUnknownTier, t, allTiers)
	}
	if tm, ok := m.tiers[t]; ok {
		return tm, nil
	}
	return m.tiers[TierBasic], nil
}

// Close releases the clients that hold connections. Models must not be
// used after Close.
func (m *Models) Close() error {
	var errs []error
	for _, c := range m.closers {
		errs = append(errs, c.Close())
	}
	m.closers = nil
	return errors.Join(errs...)
}

// googleAIEndpoint returns the OpenAI-compatible endpoint of the Gemini API
// whose root is base (the default root when empty). A base that already
// names the endpoint (ending in /openai) is used as it is.
func googleAIEndpoint(base string) string {
	base = strings.TrimRight(cmp.Or(base, defaultGoogleAIBaseURL), "/")
	if strings.HasSuffix(base, "/openai") {
		return base
	}
	return base + googleAIOpenAIPath
}
