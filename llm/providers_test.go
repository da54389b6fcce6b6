package llm_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// TestANewProviderIsOneRegistration: a provider added as one entry of the
// provider table (issue 31, item 13: a provider touched config.go,
// models.go, resolved.go, prices.go and endpoints.go) is known to the
// config's checks and Providers, reads its key and base URL from its
// variables, calls its endpoint by default, lets its key go there when
// confined, is priced by its rule, and has a working client.
func TestANewProviderIsOneRegistration(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Response{Text: "hello from acme"})
	t.Cleanup(srv.Close)
	llm.AddOpenAIWireProviderForTest(t, "acme", "ACME_API_KEY", "ACME_BASE_URL", srv.BaseURL(), false)

	assert.Contains(t, llm.Providers(), llm.Provider("acme"))
	assert.True(t, llm.Provider("acme").Valid())
	load := func(getenv func(string) string) (llm.Config, error) {
		cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: acme\n    model: acme-1\n"))
		if err != nil {
			return cfg, err
		}
		cfg.Getenv = getenv
		return cfg, cfg.ApplyEnv(getenv)
	}

	cfg, err := load(env())
	require.NoError(t, err)
	_, err = llm.New(t.Context(), cfg)
	require.ErrorIs(t, err, llm.ErrMissingAPIKey)
	assert.Contains(t, err.Error(), "environment variable ACME_API_KEY is not set (it should hold the acme API key)")

	cfg, err = load(env("ACME_API_KEY", "k-acme"))
	require.NoError(t, err)
	cfg.Confined = true // a file from elsewhere: the key may go to the provider's own endpoint only
	models, err := llm.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = models.Close() })
	assert.Equal(t, srv.BaseURL(), cfg.Resolved()[0].Endpoint, "its endpoint by default")
	m, err := models.Model(llm.TierBasic)
	require.NoError(t, err)
	out, err := llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
	require.NoError(t, err)
	assert.Equal(t, "hello from acme", out)
	require.Len(t, srv.Requests(), 1)
	assert.Equal(t, "Bearer k-acme", srv.Requests()[0].Header.Get("Authorization"))

	moved, err := load(env("ACME_API_KEY", "k-acme", "ACME_BASE_URL", "http://127.0.0.1:1/v1"))
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:1/v1", moved.Models[llm.TierBasic].BaseURL, "its base URL variable")

	_, priced := llm.LookupPrice("acme", "acme-1")
	assert.False(t, priced, "a model the price table does not list is unknown, not free")
	llm.AddOpenAIWireProviderForTest(t, "localacme", "", "", "http://127.0.0.1:2", true)
	p, priced := llm.LookupPrice("localacme", "anything")
	assert.True(t, priced)
	assert.Zero(t, p, "a local provider costs nothing")
}
